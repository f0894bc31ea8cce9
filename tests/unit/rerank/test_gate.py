"""The v1 gate: fitted on training pools only, lets typical pools through, turns away pools
unlike any it saw; saved in the checkpoint; the stage keeps the first stage's order when the
gate says no, blends v1 with it in the zone at the gate's edge, and v2 then has nothing to
reorder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from memsieve.embed import HashingEncoder
from memsieve.rerank.cross import CrossEncoder, CrossEncoderReranker
from memsieve.rerank.features import FEATURES
from memsieve.rerank.gate import (
    BLEND,
    QUANTILE,
    TRUST,
    PoolGate,
    blend,
    summarise,
    zone_shares,
)
from memsieve.rerank.learned import (
    LearnedReranker,
    V1Model,
    gate_of,
    load_checkpoint,
    save_checkpoint,
)
from memsieve.retrieve import Retriever
from memsieve.trace import Trace
from memsieve.types import Candidate, Memory, Query

RANK = FEATURES.index("rank_fused")


def pools(n: int, seed: int, shift: float = 0.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.normal(0.5, 0.1, size=(50, len(FEATURES))) + shift
        x[:, RANK] = np.arange(50) / 49
        out.append(x)
    return out


def test_gate_passes_training_like_pools_and_turns_away_shifted_ones():
    big, small = pools(300, 0), pools(30, 4, shift=0.3)  # two kinds, one small
    gate = PoolGate.fit(np.stack([summarise(x) for x in big + small]),
                        ["big"] * len(big) + ["small"] * len(small))
    same = np.mean([gate.accepts(x) for x in pools(200, 1)])
    small_kind = np.mean([gate.accepts(x) for x in pools(100, 5, shift=0.3)])
    far = np.mean([gate.accepts(x) for x in pools(50, 2, shift=1.0)])
    assert same >= QUANTILE - 0.05  # about the share it was fitted to let through
    assert small_kind >= 0.8  # judged against its own kind, not the big one's density
    assert far == 0.0
    back = PoolGate.from_dict(gate.to_dict())
    x = pools(1, 3)[0]
    assert back.distance(x)[0] == pytest.approx(gate.distance(x)[0], rel=1e-2)


def test_the_zone_between_trust_and_the_gate_gets_the_blend():
    train = pools(300, 0)
    gate = PoolGate.fit(np.stack([summarise(x) for x in train]), ["d"] * len(train))
    weights = np.array([gate.weigh(x)[0] for x in pools(300, 1)])
    assert set(np.unique(weights)) <= {0.0, BLEND, 1.0}
    assert np.mean(weights == 1.0) >= TRUST - 0.1  # about the share of training pools inside
    assert 0 < np.mean(weights == BLEND) < 0.2  # the edge: some, not most
    assert all(gate.weigh(x)[0] == 0.0 for x in pools(20, 2, shift=1.0))
    for x in pools(20, 3):  # weigh and accepts agree on what the gate lets through
        assert (gate.weigh(x)[0] > 0) == gate.accepts(x)
        assert gate.weigh(x)[1:] == gate.distance(x)
    back = PoolGate.from_dict(gate.to_dict())  # the zone comes back from the stored banks
    assert back.inner == pytest.approx(gate.inner, rel=2e-2)


def test_zone_shares_count_each_answer_of_the_gate():
    assert zone_shares([1.0, 1.0, BLEND, 0.0]) == {"trusted": 0.5, "blended": 0.25,
                                                   "first_stage": 0.25}
    assert zone_shares([]) == {"trusted": 0.0, "blended": 0.0, "first_stage": 0.0}


def test_blend_mixes_the_two_orders_by_reciprocal_rank():
    v1 = np.array([0.0, 1.0, 2.0, 3.0])  # v1 reverses the first stage's order
    assert np.array_equal(blend(v1, 1.0), v1)
    assert list(np.argsort(-blend(v1, 0.0), kind="stable")) == [0, 1, 2, 3]
    assert list(np.argsort(-blend(v1, 0.9), kind="stable")) == [3, 2, 1, 0]
    key = blend(v1, 0.5)  # an even blend of reversed orders: the ends beat the middle, ties
    assert list(np.argsort(-key, kind="stable")) == [0, 3, 1, 2]  # go to the first stage
    promoted = blend(np.array([0.0, 0.0, 0.0, 5.0]), 0.3)  # v1's first moves up one place
    assert list(np.argsort(-promoted, kind="stable")) == [0, 1, 3, 2]


def test_summary_uses_the_pool_head_by_first_stage_rank():
    x = np.zeros((30, len(FEATURES)))
    x[:, RANK] = np.arange(30)[::-1] / 29  # the last row is ranked first
    x[-5:, 0] = 1.0
    assert summarise(x, head=5)[0] == 1.0


@pytest.fixture
def filled(fresh_store):
    from memsieve.ingest import add_memories

    enc = HashingEncoder()
    mems = [Memory(id=f"t{i}", namespace="n", text=f"Sam: turn {i} about cello {i % 5}",
                   speaker="Sam", session_id=f"s{i // 4}") for i in range(30)]
    add_memories(fresh_store, mems, enc)
    return fresh_store, enc


def test_checkpoint_keeps_the_gate_and_the_stage_falls_back(tmp_path, filled):
    store, enc = filled
    torch.manual_seed(0)
    model = V1Model(dim=enc.dim, hidden=16)
    strict = PoolGate({"d": np.zeros((3, len(FEATURES)))}, {"d": 1e-6}, {"d": 1},
                      np.full(len(FEATURES), 1e3), np.ones(len(FEATURES)))
    path = save_checkpoint(tmp_path / "v1.pt", model, {"encoder": enc.name,
                                                       "gate": strict.to_dict()})
    assert path.stat().st_size < 1_000_000
    loaded, config = load_checkpoint(path)
    assert gate_of(config).thresholds == {"d": pytest.approx(1e-6)}
    retriever = Retriever(store, enc)
    q = Query(text="cello turn", namespace="n")
    pool = retriever(q, [], trace=Trace())
    trace = Trace()
    out = LearnedReranker(loaded, encoder=enc, cache=retriever.cache, config=config)(
        q, pool, trace=trace)
    assert out == pool and all("v1" not in c.scores for c in out)  # first stage's order
    assert trace.notes["rerank_v1_gate"]["applied"] is False
    # without a gate in the checkpoint, v1 applies
    plain = LearnedReranker(loaded, encoder=enc, cache=retriever.cache, config={})(
        q, pool, trace=Trace())
    assert all("v1" in c.scores for c in plain)


def test_the_stage_blends_in_the_zone_and_v2_leaves_it_alone(filled):
    store, enc = filled
    torch.manual_seed(0)
    model = V1Model(dim=enc.dim, hidden=16)
    retriever = Retriever(store, enc)
    q = Query(text="cello turn", namespace="n")
    pool = retriever(q, [], trace=Trace())
    stage = LearnedReranker(model, encoder=enc, cache=retriever.cache, config={})
    stage.gate = PoolGate({"d": np.zeros((3, len(FEATURES)))}, {"d": 1e9}, {"d": 1},
                          np.zeros(len(FEATURES)), np.ones(len(FEATURES)))
    stage.gate.inner = {"d": 0.0}  # every pool lies beyond the trusted zone, inside the gate
    trace = Trace()
    out = stage(q, pool, trace=trace)
    assert trace.notes["rerank_v1_gate"]["weight"] == BLEND
    assert sorted(c.memory.id for c in out) == sorted(c.memory.id for c in pool)
    assert all("v1_blend" in c.scores and "v1" not in c.scores for c in out)
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)
    assert CrossEncoderReranker(CrossEncoder.from_base(max_length=16))(q, out, trace=trace) == out


def test_v2_leaves_a_pool_v1_did_not_rerank_alone():
    torch.manual_seed(0)
    cands = [Candidate(Memory(id=f"m{i}", namespace="n", text=f"text {i}"), score=10.0 - i)
             for i in range(12)]
    out = CrossEncoderReranker(CrossEncoder.from_base(max_length=16))(
        Query(text="text", namespace="n"), cands, trace=Trace())
    assert out == cands
