"""The v1 reranker: features on hand-built pools, the stage contract, checkpoints, training
determinism, and the eval pipeline's refusal of a checkpoint that saw a test group."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from memsieve.embed import HashingEncoder
from memsieve.errors import ConfigError
from memsieve.eval.datasets import EvalQuery, EvalTask, split
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline
from memsieve.rerank.features import (
    FEATURE_GROUPS,
    FEATURES,
    NamespaceFeatures,
    pool_features,
    window_scores,
)
from memsieve.rerank.learned import (
    LearnedReranker,
    V1Model,
    default_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from memsieve.rerank.train import TrainConfig, TrainQuery, fit, listwise_loss, make_examples
from memsieve.retrieve import Retriever
from memsieve.retrieve.bm25 import Analyzer
from memsieve.trace import Trace
from memsieve.types import Memory, Query

TURNS = [
    ("Sam", "I take cello lessons on Tuesdays"),
    ("Ann", "That sounds lovely, how long have you played?"),
    ("Sam", "About a year now, my teacher is great"),
    ("Ann", "We adopted a puppy named Biscuit"),
    ("Sam", "Biscuit is a great name for a puppy"),
    ("Ann", "I ran my first marathon in Berlin"),
    ("Sam", "Berlin must have been amazing"),
    ("Ann", "My sister works as a nurse in Leeds"),
]


def col(name: str) -> int:
    return FEATURES.index(name)


@pytest.fixture
def store(fresh_store, hash_encoder):
    mems = [
        Memory(id=f"t{i}", namespace="chat", text=f"{spk}: {text}", speaker=spk, turn_index=i)
        for i, (spk, text) in enumerate(TURNS)
    ]
    add_memories(fresh_store, mems, hash_encoder)
    return fresh_store


@pytest.fixture
def retriever(store, hash_encoder):
    return Retriever(store, hash_encoder)


def tiny_model(dim: int = 256, **kw) -> V1Model:
    torch.manual_seed(0)
    return V1Model(dim=dim, proj=8, hidden=16, **kw)


# -- features ------------------------------------------------------------------------------


def test_feature_shapes_and_ranges(retriever, hash_encoder):
    q = Query(text="When does Sam take cello lessons?", namespace="chat")
    pool = retriever(q, [], trace=Trace())
    index = retriever.cache.get("chat")
    ns = NamespaceFeatures.build(index.all_memories(retriever.store), index.matrix)
    pos = np.array([ns.position[c.memory.id] for c in pool])
    f = pool_features(
        ns.query(q.text, hash_encoder.encode([q.text])[0]),
        ns,
        pos,
        *(np.array([c.scores[n] for c in pool]) for n in ("dense", "bm25", "fused")),
    )
    k = len(TURNS)
    assert f.x.shape == (k, len(FEATURES)) and f.m.shape == (k, 256) and f.q.shape == (256,)
    assert f.x.dtype == np.float32 and np.isfinite(f.x).all()
    unit = [c for c in FEATURES if c not in ("dense", "dense_prev", "dense_next", "prf")]
    assert (f.x[:, [col(c) for c in unit]] >= 0).all()
    assert (f.x[:, [col(c) for c in unit]] <= 1 + 1e-6).all()
    # the pool comes in fused order: rank 0 first, 1 / (1 + rank) = 1 for it
    assert f.x[0, col("rank_fused")] == 0 and f.x[-1, col("rank_fused")] == 1
    assert f.x[0, col("rr_fused")] == 1 and f.x[0, col("fused_pool")] == 1
    assert set(np.unique(f.x[:, col("speaker_in_query")])) <= {0.0, 1.0}
    # the first turn holds no previous turn, the last no next one
    first, last = int(np.argmin(pos)), int(np.argmax(pos))
    assert f.x[first, col("dense_prev")] == 0 and f.x[last, col("dense_next")] == 0


def test_lexical_features_by_hand(hash_encoder):
    mems = [Memory(id="a", namespace="n", text="Sam: I take cello lessons", speaker="Sam"),
            Memory(id="b", namespace="n", text="Ann: no music here", speaker="Ann")]
    ns = NamespaceFeatures.build(mems, hash_encoder.encode([m.text for m in mems]))
    assert Analyzer()(["Sam: I take cello lessons"]) == [["sam", "take", "cello", "lesson"]]
    terms = ns.query("Sam cello lessons", hash_encoder.encode(["x"])[0])
    f = pool_features(terms, ns, np.array([0, 1]), np.zeros(2), np.zeros(2), np.array([1.0, 0]))
    x = f.x[0]
    assert x[col("overlap")] == pytest.approx(3 / 3)  # {sam, cello, lesson} all present
    assert x[col("overlap_idf")] == pytest.approx(1.0)  # all matched: any weights give 1
    assert x[col("jaccard")] == pytest.approx(3 / 4)  # |{sam, take, cello, lesson}| = 4
    assert x[col("bigram_recall")] == pytest.approx(1 / 2)  # "cello lesson" of 2 query bigrams
    assert x[col("speaker_in_query")] == 1.0 and f.x[1, col("speaker_in_query")] == 0.0
    assert f.x[1, col("overlap")] == 0 and f.x[1, col("jaccard")] == 0


def test_window_score_formula():
    # values .0 .3 .9 .6 .0 at positions 0..4, window 3: window means .4 (0-2), .6 (1-3), .5 (2-4)
    got = window_scores(np.array([0.0, 0.3, 0.9, 0.6, 0.0]), np.arange(5), 5, 3)
    np.testing.assert_allclose(got, [0.4, max(0.4, 0.6), max(0.4, 0.6, 0.5), max(0.6, 0.5), 0.5])
    # turns outside the pool count 0: [.5, 0, 1, 0, 0] -> windows .5, 1/3, 1/3
    np.testing.assert_allclose(window_scores(np.array([1.0, 0.5]), np.array([2, 0]), 5, 3),
                               [0.5, 0.5])
    # a namespace shorter than the window: one window over everything
    np.testing.assert_allclose(window_scores(np.array([1.0, 0.0]), np.array([0, 1]), 2, 3),
                               [0.5, 0.5])


# -- the stage -----------------------------------------------------------------------------


def test_stage_is_a_deterministic_permutation_and_never_mutates(retriever, hash_encoder):
    q = Query(text="Biscuit the puppy", namespace="chat")
    pool = retriever(q, [], trace=Trace())
    before = [dataclasses.replace(c) for c in pool]
    stage = LearnedReranker(tiny_model(embed="full"), encoder=hash_encoder, cache=retriever.cache)
    out = stage(q, pool, trace=Trace())
    assert pool == before  # input list and candidates unchanged
    assert sorted(c.memory.id for c in out) == sorted(c.memory.id for c in pool)
    assert all("v1" in c.scores and c.score == c.scores["v1"] for c in out)
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)
    assert stage(q, pool, trace=Trace()) == out
    assert stage(q, [], trace=Trace()) == []


def test_stage_refuses_another_encoders_checkpoint(retriever, hash_encoder):
    with pytest.raises(ConfigError, match="trained on 'minilm' vectors"):
        LearnedReranker(tiny_model(), encoder=hash_encoder, cache=retriever.cache,
                        config={"encoder": "minilm"})


def test_pipeline_default_rerank_modes(store, hash_encoder):
    names = [s.name for s in Pipeline.default(store, encoder=hash_encoder).stages]
    assert names == ["retrieve", "validity", "admissibility"]  # auto: v1 does not fit hash
    off = Pipeline.default(store, encoder=hash_encoder, rerank="off", validity="off",
                           admissibility="off")
    assert [s.name for s in off.stages] == ["retrieve"]
    with pytest.raises(ConfigError, match="unknown rerank mode"):
        Pipeline.default(store, encoder=hash_encoder, rerank="v9")


# -- checkpoints ---------------------------------------------------------------------------


def test_checkpoint_roundtrip(tmp_path, retriever, hash_encoder):
    lexical = FEATURE_GROUPS["lexical"]
    model = tiny_model(embed="interactions", features=[f for f in FEATURES if f not in lexical])
    path = save_checkpoint(tmp_path / "v1.pt", model, {"train_groups": ["a"], "seed": 3})
    loaded, config = load_checkpoint(path)
    assert config["train_groups"] == ["a"] and config["seed"] == 3 and config["version"] == 1
    assert config["model"] == model.config() and loaded.features == model.features
    for key, value in model.state_dict().items():
        expected = value.half().float() if value.is_floating_point() else value
        assert torch.equal(loaded.state_dict()[key], expected), key
    q, m, x = torch.randn(1, 256), torch.randn(1, 5, 256), torch.rand(1, 5, len(FEATURES))
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(q, m, x), model(q, m, x), atol=2e-2, rtol=2e-2)
    assert path.stat().st_size < 3 * 2**20


def test_default_checkpoint_if_present():
    path = default_checkpoint()
    if not path.is_file():
        pytest.skip("no packaged v1-default.pt")
    model, config = load_checkpoint(path)
    groups = config["train_groups"]  # every group of every dataset it learned from
    assert set(groups) == {"locomo", "rhelm", "longmemeval", "memora"}
    assert len(groups["locomo"]) == 10 and len(groups["memora"]) == 10
    assert config["encoder"] == "minilm" and model.dim == 384
    assert config["gate"] and path.stat().st_size < 2**20  # v1 < 1 MB, gate included


# -- training ------------------------------------------------------------------------------


def synthetic(seed: int = 0, n_ns: int = 2, n_mem: int = 30, n_q: int = 6):
    """Random unit vectors; each query is a noisy copy of its gold memory's vector."""
    rng = np.random.default_rng(seed)
    namespaces, queries = {}, []
    for j in range(n_ns):
        mat = rng.normal(size=(n_mem, 16)).astype(np.float32)
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        mems = [Memory(id=f"{j}:{i}", namespace=f"ns{j}", text=f"turn {i} word{i % 7}")
                for i in range(n_mem)]
        ns = NamespaceFeatures.build(mems, mat)
        namespaces[f"ns{j}"] = ns
        for _ in range(n_q):
            g = int(rng.integers(n_mem))
            v = mat[g] + 0.5 * rng.normal(size=16).astype(np.float32)
            v /= np.linalg.norm(v)
            queries.append(TrainQuery(f"ns{j}", ns.query(f"word{g % 7}", v), mat @ v,
                                      rng.random(n_mem), frozenset({g})))
    return namespaces, queries


def test_training_is_deterministic_given_the_seed():
    namespaces, queries = synthetic()
    ex = make_examples(queries, namespaces, alpha=0.5, pool=20, window=3)
    assert ex.x.shape == (12, 20, len(FEATURES)) and ex.memories.shape == (60, 16)
    cfg = TrainConfig(seed=5, epochs=3, batch_size=4, proj=4, hidden=8)
    state_before = torch.random.get_rng_state()
    a, ha = fit(ex, cfg, val=ex)
    b, hb = fit(ex, cfg, val=ex)
    c, _ = fit(ex, dataclasses.replace(cfg, seed=6), val=ex)
    assert torch.equal(torch.random.get_rng_state(), state_before)  # caller's RNG untouched
    assert not torch.are_deterministic_algorithms_enabled()
    assert ha == hb
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_listwise_loss_by_hand():
    scores = torch.tensor([[0.0, 0.0, float(np.log(2.0))]])
    gold = torch.tensor([[0.0, 1.0, 1.0]])
    # softmax = [1/4, 1/4, 1/2]; target = [0, 1/2, 1/2]
    expected = -(0.5 * np.log(0.25) + 0.5 * np.log(0.5))
    assert float(listwise_loss(scores, gold)) == pytest.approx(expected)


# -- the eval pipeline ---------------------------------------------------------------------


@pytest.fixture
def tiny_ctx():
    from memsieve.eval.harness import Context

    groups = [f"conv-{i}" for i in range(4)]
    mems, queries = [], []
    for g in groups:
        for i, (spk, text) in enumerate(TURNS):
            mems.append(Memory(id=f"{g}:D1:{i + 1}", namespace=g, text=f"{spk}: {text}",
                               speaker=spk, session_id=f"{g}:1"))
        queries.append(EvalQuery(f"{g}:q0", "Who adopted a puppy?", g,
                                 frozenset({f"{g}:D1:4"}), frozenset({f"{g}:1"}), "1"))
    ctx = Context(EvalTask("locomo", mems, queries, {}, 0, ("1",)), HashingEncoder(),
                  progress=False)
    yield ctx
    ctx.close()


def test_v1_pipeline_refuses_a_checkpoint_that_saw_the_test_half(tmp_path, tiny_ctx):
    from memsieve.rerank.eval_pipeline import V1Pipeline

    train, test = split(tiny_ctx.task.groups, 7)
    train_q = [q for q in tiny_ctx.task.queries if q.namespace in train]
    meta = {"train_groups": sorted(train + test[:1]), "encoder": "hash"}
    save_checkpoint(tmp_path / "v1-seed7.pt", tiny_model(), meta)
    with pytest.raises(ConfigError, match=r"trained on test group\(s\)"):
        V1Pipeline(weights=tmp_path).fit(tiny_ctx, train_q, 7)

    save_checkpoint(tmp_path / "v1-seed7.pt", tiny_model(), {**meta, "train_groups": train})
    pipe = V1Pipeline(weights=tmp_path)
    pipe.fit(tiny_ctx, train_q, 7)
    q = next(q for q in tiny_ctx.task.queries if q.namespace in test)
    r = pipe.rank(tiny_ctx, q)
    turns = [m.id for m in tiny_ctx.task.memories if m.namespace == q.namespace]
    assert sorted(r.ids) == sorted(turns)
    assert {"encode_query", "first_stage", "rerank_v1"} <= set(r.ms)


def test_live_features_follow_deltas_and_match_a_fresh_build(fresh_store, hash_encoder):
    """The v1 features kept beside the live index, moved by deltas, give the same pool
    features as a build from scratch after adds, rewrites, forgets, purges and a restore."""
    retriever = Retriever(fresh_store, hash_encoder)
    reranker = LearnedReranker(tiny_model(), encoder=hash_encoder, cache=retriever.cache)
    mems = [Memory(id=f"t{i}", namespace="n", text=f"{'Sam' if i % 2 else 'Ann'}: turn {i} "
                   f"about cello {i % 5} on Monday?", speaker="Sam" if i % 2 else "Ann",
                   session_id=f"s{i // 4}") for i in range(24)]
    steps = [
        lambda: add_memories(fresh_store, mems[:12], hash_encoder),
        lambda: add_memories(fresh_store, mems[12:], hash_encoder),
        lambda: add_memories(fresh_store, [Memory(id="t3", namespace="n", speaker="Bo",
                                                  text="Bo: a rewritten turn, new words")],
                             hash_encoder),
        lambda: fresh_store.forget("n", "t5"),
        lambda: fresh_store.purge("n", ["t0", "t7"]),
        lambda: fresh_store.set_state("n", "t5", "current"),
    ]
    q = Query(text="When does Sam play the cello on Monday?", namespace="n")
    seen = set()
    for step in steps:
        step()
        with fresh_store.snapshot():
            pool = retriever(q, [], trace=Trace())
            live = reranker.namespace_features("n")
            index = retriever.cache.get("n")
            fresh = NamespaceFeatures.build(index.all_memories(fresh_store), index.matrix)
        seen.add(id(live))
        assert live.revision == index.revision and live.position == fresh.position
        qvec = hash_encoder.encode([q.text])[0]
        args = [np.array([live.position[c.memory.id] for c in pool])] + [
            np.array([c.scores[n] for c in pool]) for n in ("dense", "bm25", "fused")]
        a = pool_features(live.query(q.text, qvec), live, *args)
        b = pool_features(fresh.query(q.text, qvec), fresh, *args)
        bad = np.argwhere(~np.isclose(a.x, b.x, atol=1e-6))
        assert not len(bad), [(FEATURES[j], a.x[i, j], b.x[i, j]) for i, j in bad[:5]]
        assert np.array_equal(a.m, b.m)
    assert len(seen) == 1  # built once, then moved by deltas


def test_per_dataset_overlap_refusal(tmp_path, tiny_ctx):
    """A multi-dataset checkpoint is refused only for the dataset whose test half it saw."""
    from memsieve.rerank.eval_pipeline import V1Pipeline
    from memsieve.rerank.train import trained_groups

    train, test = split(tiny_ctx.task.groups, 7)
    train_q = [q for q in tiny_ctx.task.queries if q.namespace in train]
    saw_rhelm_only = {"train_groups": {"locomo": train, "rhelm": test}, "encoder": "hash"}
    save_checkpoint(tmp_path / "v1-seed7.pt", tiny_model(), saw_rhelm_only)
    V1Pipeline(weights=tmp_path).fit(tiny_ctx, train_q, 7)  # locomo: train half only
    saw_test = {"train_groups": {"locomo": train + test[:1]}, "encoder": "hash"}
    save_checkpoint(tmp_path / "v1-seed7.pt", tiny_model(), saw_test)
    with pytest.raises(ConfigError, match=r"trained on test group\(s\)"):
        V1Pipeline(weights=tmp_path).fit(tiny_ctx, train_q, 7)
    # a dataset built on LoCoMo's groups (LoCoMo-Plus) is refused where LoCoMo's would be
    import dataclasses

    tiny_ctx.task = dataclasses.replace(tiny_ctx.task, name="locomo_plus", based_on="locomo")
    with pytest.raises(ConfigError, match=r"trained on test group\(s\)"):
        V1Pipeline(weights=tmp_path).fit(tiny_ctx, train_q, 7)
    assert trained_groups({"train_groups": ["a"], "dataset": "rhelm"}, "locomo") == []
    assert trained_groups({"train_groups": ["a"]}, "locomo") == ["a"]


def test_concat_rebases_rows_and_keeps_weights():
    from memsieve.rerank.train import concat

    namespaces, queries = synthetic()
    a = make_examples(queries[:4], namespaces, alpha=0.5, pool=20, window=3, weight=2.0)
    b = make_examples(queries[6:], namespaces, alpha=0.5, pool=10, window=3)
    both = concat([a, b])
    assert both.x.shape[:2] == (len(a) + len(b), 20)
    assert torch.equal(both.weight, torch.cat([a.weight, b.weight]))
    assert not both.mask[len(a):, 10:].any()
    assert torch.equal(both.memories[both.rows[len(a):, :10]], b.memories[b.rows[:, :10]])
    # a weighted loss: a query weighing 0 changes nothing
    s, g = torch.randn(2, 5), torch.tensor([[1.0, 0, 0, 0, 0], [0, 1.0, 0, 0, 0]])
    assert float(listwise_loss(s, g, torch.tensor([1.0, 0.0]))) == pytest.approx(
        float(listwise_loss(s[:1], g[:1])))
