"""The first-stage Retriever over a real SQLite store, with the deterministic hashing encoder."""

from __future__ import annotations

import numpy as np
import pytest

from memsieve.errors import ConfigError
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline
from memsieve.retrieve import Retriever
from memsieve.retrieve.retriever import select_pool
from memsieve.trace import Trace
from memsieve.types import Memory, Query

TEXTS = [
    "Sam started a new job as a nurse at the hospital",
    "Sam adopted a cat called Pepper",
    "The weather in Leeds was rainy all week",
    "Sam moved to York and lives in a house with a garden",
    "Sam is learning to play the cello",
]


@pytest.fixture
def store(fresh_store, hash_encoder):
    mems = [Memory(id=f"s{i}", namespace="sam", text=t) for i, t in enumerate(TEXTS)]
    mems.append(Memory(id="a0", namespace="alex", text="Alex works as a nurse at the hospital"))
    add_memories(fresh_store, mems, hash_encoder)
    return fresh_store


@pytest.mark.parametrize("method", ["bm25", "dense", "fusion", "rrf"])
def test_each_method_finds_the_answer(store, hash_encoder, method):
    r = Retriever(store, hash_encoder, method=method)
    out = r(
        Query(text="what instrument is Sam learning to play, the cello?", namespace="sam"),
        [],
        trace=Trace(),
    )
    assert out[0].memory.id == "s4"
    assert {"fused"} <= set(out[0].scores)


def test_namespace_is_the_support(store, hash_encoder):
    r = Retriever(store, hash_encoder)
    out = r(Query(text="nurse at the hospital", namespace="sam"), [], trace=Trace())
    assert all(c.memory.namespace == "sam" for c in out)
    assert len(out) == len(TEXTS)


def test_unknown_namespace_is_empty(store, hash_encoder):
    out = Retriever(store, hash_encoder)(Query(text="x", namespace="nobody"), [], trace=Trace())
    assert out == []


def test_pool_and_order_are_deterministic(store, hash_encoder):
    r = Retriever(store, hash_encoder, pool=3)
    q = Query(text="Sam cat garden", namespace="sam")
    a, b = r(q, [], trace=Trace()), r(q, [], trace=Trace())
    assert len(a) == 3 and a == b
    assert [c.score for c in a] == sorted((c.score for c in a), reverse=True)


def test_select_pool_breaks_ties_by_position():
    key = np.array([0.5, 0.9, 0.5, 0.1, 0.9])
    assert select_pool(key, 3).tolist() == [1, 4, 0]
    assert select_pool(key, 10).tolist() == [1, 4, 0, 2, 3]
    assert select_pool(np.zeros(0), 5).tolist() == []


def test_cache_sees_new_memories(store, hash_encoder):
    r = Retriever(store, hash_encoder)
    q = Query(text="Sam bought a red bicycle", namespace="sam")
    assert r(q, [], trace=Trace())[0].memory.id != "new"
    add_memories(
        store, [Memory(id="new", namespace="sam", text="Sam bought a red bicycle")], hash_encoder
    )
    assert r(q, [], trace=Trace())[0].memory.id == "new"


def test_bad_options(store, hash_encoder):
    with pytest.raises(ConfigError, match="unknown retrieval method"):
        Retriever(store, hash_encoder, method="magic")
    with pytest.raises(ConfigError, match="alpha"):
        Retriever(store, hash_encoder, alpha=2.0)


def test_encoder_must_match_store(store):
    from memsieve.embed import HashingEncoder

    enc = HashingEncoder()
    enc.name = "other"
    with pytest.raises(ConfigError, match="holds 'hash' vectors"):
        Retriever(store, enc)


def test_pipeline_trace_records_exposure_and_timings(store, hash_encoder):
    resp = Pipeline([Retriever(store, hash_encoder)], k=2).run(
        Query(text="Sam cat Pepper", namespace="sam")
    )
    assert [r.rank for r in resp.results] == [1, 2]
    assert resp.trace.exposed == [r.memory_id for r in resp.results]
    assert {"retrieve", "encode_query", "bm25", "dense", "total"} <= set(resp.trace.timings_ms)


def test_pipeline_variant_shares_stages_and_changes_only_the_modes(fresh_store, hash_encoder):
    from memsieve.errors import ConfigError
    from memsieve.ingest import add_memories
    from memsieve.pipeline import Pipeline, variant
    from memsieve.types import Memory

    add_memories(fresh_store, [Memory(id="a", namespace="u", text="tea in the garden")],
                 hash_encoder)
    base = Pipeline.default(fresh_store, encoder=hash_encoder, rerank="off")
    assert [s.name for s in base.stages] == ["retrieve", "validity", "admissibility"]
    off = variant(base, validity="off", admissibility="off")
    assert [s.name for s in off.stages] == ["retrieve"] and off.stages[0] is base.stages[0]
    demote = variant(base, validity="demote", admissibility="enforce", unresolved="exclude")
    assert demote.stages[1].mode.value == "demote" and base.stages[1].mode.value == "context"
    assert demote.stages[1].heads is base.stages[1].heads  # the verifier is shared
    assert (demote.stages[2].mode.value, demote.stages[2].unresolved.value) == (
        "enforce", "exclude")
    with pytest.raises(ConfigError, match="cannot be turned on"):
        variant(off, validity="context")
    with pytest.raises(ConfigError, match="validity must be"):
        variant(base, validity="loud")
