"""The v2 cross-encoder: it reorders v1's protected top-10 and nothing else, its key, its
checkpoint format, deterministic training, and its place in ``Pipeline.default``."""

from __future__ import annotations

import numpy as np
import pytest

from memsieve.errors import ConfigError, NotFound
from memsieve.rerank import cross as cross_mod
from memsieve.rerank.cross import (
    PROTECTED,
    CrossEncoder,
    CrossEncoderReranker,
    combine,
    zscore,
)
from memsieve.rerank.learned import weights_dir
from memsieve.rerank.train import dataset_weights
from memsieve.rerank.train_v2 import ListQuery, TrainConfig, fit_lists, protected_mrr
from memsieve.trace import Trace
from memsieve.types import Candidate, Memory, Query

TEXTS = [
    "Sam: I take cello lessons on Tuesdays", "Ann: We adopted a puppy named Biscuit",
    "Sam: My sister works as a nurse in Leeds", "Ann: I ran my first marathon in Berlin",
    "Sam: The weather has been awful all week", "Ann: Biscuit chewed my shoes again",
    "Sam: I started painting landscapes", "Ann: Berlin was amazing, great food",
    "Sam: My teacher says I improve fast", "Ann: We are going camping in June",
    "Sam: I moved to York in September", "Ann: My cat is called Pixel",
    "Sam: I switched jobs, I teach now", "Ann: I love sushi", "Sam: Tuesdays are busy",
]


@pytest.fixture(scope="module")
def base() -> CrossEncoder:
    import torch

    torch.manual_seed(0)
    return CrossEncoder.from_base(n_trainable_layers=1, max_length=48)


def _candidates() -> list[Candidate]:
    mems = [Memory(id=f"m{i}", namespace="ns", text=t) for i, t in enumerate(TEXTS)]
    return [Candidate(m, score=float(len(mems) - i)).with_score("v1", len(mems) - i)
            for i, m in enumerate(mems)]


def test_v2_never_adds_or_drops_a_protected_candidate(base):
    """R@10 and H@10 after v2 equal v1's by construction: same top-10 set, same tail."""
    cands = _candidates()
    out = CrossEncoderReranker(base)(Query(text="What instrument does Sam play?", namespace="ns"),
                                     cands, trace=Trace())
    assert len(out) == len(cands)
    assert {c.memory.id for c in out[:PROTECTED]} == {c.memory.id for c in cands[:PROTECTED]}
    assert out[PROTECTED:] == cands[PROTECTED:]  # the tail is untouched, in v1 order
    assert all("v2" in c.scores and "v2_logit" in c.scores for c in out[:PROTECTED])
    keys = [c.score for c in out[:PROTECTED]]
    assert keys == sorted(keys, reverse=True)


def test_v2_is_deterministic_and_short_lists_pass_through(base):
    q = Query(text="Where does Sam live?", namespace="ns")
    stage = CrossEncoderReranker(base)
    assert stage(q, _candidates(), trace=Trace()) == stage(q, _candidates(), trace=Trace())
    one = _candidates()[:1]
    assert stage(q, one, trace=Trace()) == one
    assert stage(q, [], trace=Trace()) == []


def test_v2_reads_a_pool_as_its_nearest_kind_says(base):
    """v1's gate notes the pool's nearest training kind; v2 reads the pairs as ``READING``
    says for that kind (long turns by their sentences nearest the query), at the checkpoint's
    own length from each turn's start for any other kind or when no gate spoke, and the trace
    says how."""
    q = Query(text="What instrument does Sam play?", namespace="ns")
    long_text = "Sam: " + " ".join(["I practise the cello every single evening."] * 12)
    cands = [Candidate(Memory(id=f"l{i}", namespace="ns", text=long_text + f" {i}"),
                       score=float(3 - i)).with_score("v1", 3 - i) for i in range(3)]
    stage = CrossEncoderReranker(base)
    seen = {}
    for kind in (None, "memora", *cross_mod.READING):
        trace = Trace()
        if kind is not None:
            trace.note("rerank_v1_gate", {"applied": True, "weight": 1.0, "nearest": kind})
        stage(q, cands, trace=trace)
        seen[kind] = (trace.notes["rerank_v2_length"], trace.notes["rerank_v2_window"])
    assert seen[None] == seen["memora"] == (base.max_length, False)
    assert all(seen[k] == (max(n, base.max_length), w) for k, (n, w) in cross_mod.READING.items())
    texts = [c.memory.text for c in cands]
    assert base.encode(q.text, texts, 96)["input_ids"].shape[1] == 96
    assert base.encode(q.text, texts)["input_ids"].shape[1] == base.max_length


def test_a_long_turn_is_read_by_its_sentences_nearest_the_query(base):
    """``windows`` keeps a text that fits whole; a longer one becomes the sentences sharing
    the most words with the query, in their order, within the length."""
    q = "Which cello teacher does Sam have?"
    short = "Sam: my cello teacher is Ana."
    filler = [f"We talked about the weather on day {i} and it rained a lot." for i in range(12)]
    text = " ".join(filler[:7] + ["Sam: my cello teacher is Ana from Porto."] + filler[7:])
    kept, cut = base.windows(q, [short, text], 64)
    assert kept == short and base.windows(q, [short], 64) == [short]
    assert "cello teacher is Ana" in cut and len(cut) < len(text)
    assert base.encode(q, [cut])["input_ids"].shape[1] <= 64
    kept = cut.split(". ")
    assert kept == sorted(kept, key=text.index)  # the text's own order


def test_combine_weight_trades_v2_for_v1():
    v1 = np.array([3.0, 2.0, 1.0])
    v2 = np.array([0.0, 0.0, 5.0])
    assert np.argmax(combine(v2, v1, 0.0)) == 2  # v2 alone
    assert list(np.argsort(-combine(v2, v1, 100.0))) == [0, 1, 2]  # v1 dominates
    assert np.all(zscore(np.ones(4)) == 0.0)


@pytest.fixture(scope="module")
def released() -> CrossEncoder:
    return CrossEncoder.load(weights_dir() / "v2-default.pt")


def test_released_checkpoint_quantized_scores_track_fp32(released):
    """The product runs the int8 copy; it must score like the trained fp32 model (measured:
    correlation .89-.98 on these probes; the eval reports both, benchmarks/RESULTS.md)."""
    for q in ("What is Ann's cat called?", "Where did Ann run a marathon?",
              "What instrument does Sam play?"):
        fp32 = released.score(q, TEXTS, quantize=False)
        int8 = released.score(q, TEXTS, quantize=True)
        assert np.corrcoef(fp32, int8)[0, 1] > 0.85
    assert released.config["datasets"] == ["locomo"]  # the released recipe: every LoCoMo group
    assert len(released.config["train_groups"]["locomo"]) == 10


def test_default_pipeline_runs_v1_then_v2(minilm, fresh_store):
    from memsieve.ingest import add_memories
    from memsieve.pipeline import Pipeline

    mems = [Memory(id=f"m{i}", namespace="ns", text=t, speaker=t.split(":")[0], turn_index=i)
            for i, t in enumerate(TEXTS)]
    add_memories(fresh_store, mems, minilm)
    auto = Pipeline.default(fresh_store, encoder=minilm)
    assert [s.name for s in auto.stages] == ["retrieve", "rerank_v1", "rerank_v2", "validity",
                                             "admissibility"]
    v1 = Pipeline.default(fresh_store, encoder=minilm, rerank="v1")
    q = Query(text="What is Ann's cat called?", namespace="ns")
    top_v1 = [r.memory_id for r in v1.run(q).results]
    top_v2 = [r.memory_id for r in auto.run(q).results]
    assert set(top_v2) == set(top_v1)  # v2 reorders v1's top-10, never changes it


def test_checkpoint_round_trip_and_errors(base, tmp_path):
    path = base.save(tmp_path / "v2.pt", {"v1_weight": 0.5, "train_groups": ["a"]})
    loaded = CrossEncoder.load(path)
    assert loaded.weight == 0.5 and loaded.config["train_groups"] == ["a"]
    again = CrossEncoder.load(path)
    q = "Who has a puppy?"
    assert np.array_equal(loaded.score(q, TEXTS[:4], quantize=False),
                          again.score(q, TEXTS[:4], quantize=False))
    assert path.stat().st_size < 8 * 2**20  # one layer + head, fp16
    with pytest.raises(NotFound):
        CrossEncoder.load(tmp_path / "missing.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ConfigError):
        CrossEncoder.load(bad)


def test_protected_mrr():
    lists = [ListQuery("q", ["a", "b", "c"], [False, True, False], np.array([3.0, 2.0, 1.0]))]
    assert protected_mrr(lists, [np.zeros(3)], None) == 0.5
    assert protected_mrr(lists, [np.array([0.0, 9.0, 0.0])], 0.0) == 1.0


def _lists(offset: int) -> list[ListQuery]:
    out = []
    for i in range(6):
        texts = TEXTS[(i + offset) % 5 : (i + offset) % 5 + 4]
        out.append(ListQuery(texts[1].split(": ")[1], texts, [False, True, False, False],
                             np.array([4.0, 3.0, 2.0, 1.0])))
    return out


def test_dataset_weights_favour_the_small_dataset_and_average_one():
    w = dataset_weights({"big": 100, "small": 4})
    assert w["small"] / w["big"] == pytest.approx(5.0)
    assert (100 * w["big"] + 4 * w["small"]) / 104 == pytest.approx(1.0)


def test_validation_per_dataset_is_the_mean_of_each_sets_mrr():
    cfg = TrainConfig(seed=3, epochs=1, queries_per_batch=2, max_length=32)
    train = _lists(0)
    for lq, w in zip(train, (0.5, 2.0, 0.5, 2.0, 0.5, 0.5), strict=True):
        lq.weight = w
    _, one = fit_lists(train, _lists(1), cfg)
    _, two = fit_lists(train, {"a": _lists(1), "b": _lists(2)}, cfg)
    v1 = [protected_mrr(ls, [np.zeros(4)] * len(ls), None) for ls in (_lists(1), _lists(2))]
    assert two["v1_mrr"] == pytest.approx(np.mean(v1))
    assert one["v1_mrr"] == pytest.approx(v1[0])
    with pytest.raises(ConfigError):
        fit_lists(train, {"a": _lists(1), "empty": []}, cfg)


def test_training_is_deterministic():
    cfg = TrainConfig(seed=3, epochs=1, queries_per_batch=2, max_length=32)
    a, ha = fit_lists(_lists(0), _lists(1), cfg)
    b, hb = fit_lists(_lists(0), _lists(1), cfg)
    assert ha["best_epoch"] == hb["best_epoch"] == 1 and ha["v1_weight"] == hb["v1_weight"]
    assert np.array_equal(a.score("cello", TEXTS[:5], quantize=False),
                          b.score("cello", TEXTS[:5], quantize=False))


def test_default_pipeline_v2_needs_its_checkpoint(monkeypatch, tmp_path):
    monkeypatch.setattr(cross_mod, "weights_dir", lambda: tmp_path)
    with pytest.raises(Exception, match="v2 checkpoint is missing"):
        cross_mod.default_cross_reranker("v2")
    assert cross_mod.default_cross_reranker(None) is None
    assert cross_mod.default_cross_reranker("v1") is None
