"""The six validity-layer safety contracts (validity-context-layer §14.2), one named test each,
plus the composition maths and multi-hop propagation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memsieve.errors import ConfigError
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline
from memsieve.retrieve import Retriever
from memsieve.trace import Trace
from memsieve.types import EVAL_ONLY_FIELDS, Candidate, Memory, Query
from memsieve.validity.compose import edge_scores, noisy_or, propagate
from memsieve.validity.stage import ValidityStage, is_later


class KeywordScorer:
    """A deterministic fake verifier: overturn iff the source says 'now' and shares a topic word
    with the target (a real PairScorer implementation, no mocks)."""

    TOPICS = ("job", "nurse", "teacher", "live", "city", "york", "leeds")

    def __init__(self) -> None:
        self.calls = 0

    def score(self, triples):
        self.calls += len(triples)
        out = []
        for _, source, target in triples:
            s, t = source.lower(), target.lower()
            shared = any(w in s and w in t for w in self.TOPICS)
            out.append(0.9 if "now" in s and shared else 0.05)
        return np.array(out)


MEMS = [
    ("m1", "2025-01-01T10:00:00", "Sam: I got a job as a nurse in Leeds"),
    ("m2", "2025-02-01T10:00:00", "Sam: I adopted a cat called Pepper"),
    ("m3", "2025-03-01T10:00:00", "Sam: I live in Leeds near the park"),
    ("m4", "2025-06-01T10:00:00", "Sam: I am now a teacher, I quit the nurse job"),
    ("m5", "2025-09-01T10:00:00", "Sam: I now live in York with Pepper the cat"),
]


@pytest.fixture
def store(fresh_store, hash_encoder):
    add_memories(fresh_store, [Memory(id=i, namespace="sam", text=t, timestamp=ts)
                               for i, ts, t in MEMS], hash_encoder)
    return fresh_store


def pipeline(store, encoder, validity=None, **kw):
    stages = [Retriever(store, encoder)]
    if validity is not None:
        stages.append(ValidityStage([KeywordScorer()], mode=validity, store=store, **kw))
    return Pipeline(stages, k=5)


QUERIES = ["what is Sam's job as a nurse", "where does Sam live, Leeds or York", "Sam's cat"]


def dump(resp) -> str:
    return json.dumps([{k: v for k, v in r.to_dict().items() if k != "validity"}
                       for r in resp.results], sort_keys=True)


def test_contract1_off_and_none_are_byte_identical_to_no_layer(store, hash_encoder):
    for q in QUERIES:
        query = Query(text=q, namespace="sam")
        bare = pipeline(store, hash_encoder).run(query)
        for mode in ("off", None):
            stage = ValidityStage([KeywordScorer()], mode=mode)
            resp = Pipeline([Retriever(store, hash_encoder), stage], k=5).run(query)
            assert json.dumps([r.to_dict() for r in resp.results]) == json.dumps(
                [r.to_dict() for r in bare.results])
            assert stage.heads[0].calls == 0  # off never even scores


def test_contract2_context_keeps_set_and_order(store, hash_encoder):
    query = Query(text=QUERIES[0], namespace="sam")
    bare = pipeline(store, hash_encoder).run(query)
    ctx = pipeline(store, hash_encoder, "context").run(query)
    assert [r.memory_id for r in ctx.results] == [r.memory_id for r in bare.results]
    assert dump(ctx) == dump(bare)  # everything but the added metadata is identical
    v = {r.memory_id: r.annotations["validity"] for r in ctx.results}
    assert v["m1"].status == "possibly_outdated" and v["m1"].superseded_by == "m4"
    assert v["m4"].status == "current"
    assert "later memory" in v["m1"].context_note


def test_contract3_demote_keeps_set_and_count_and_is_opt_in(store, hash_encoder):
    query = Query(text=QUERIES[0], namespace="sam")
    bare = pipeline(store, hash_encoder).run(query)
    dem = pipeline(store, hash_encoder, "demote").run(query)
    ids = [r.memory_id for r in dem.results]
    assert sorted(ids) == sorted(r.memory_id for r in bare.results)
    assert len(ids) == len(bare.results)
    flagged = [r.memory_id for r in dem.results
               if r.annotations["validity"].status == "possibly_outdated"]
    assert flagged and ids[-len(flagged):] == flagged  # flagged moved to the bottom
    rest = [i for i in (r.memory_id for r in bare.results) if i not in flagged]
    assert ids[: len(rest)] == rest  # the others keep the rerankers' order
    assert ValidityStage([KeywordScorer()]).mode.value == "context"  # default is not demote


@pytest.mark.parametrize("field", sorted(EVAL_ONLY_FIELDS))
def test_contract4_evaluation_only_fields_raise_value_error(store, hash_encoder, field):
    with pytest.raises(ValueError, match=field):
        Query(text="x", namespace="sam", **{field: 1})
    with pytest.raises(ValueError, match=field):
        Memory(id="z", namespace="sam", text="x", metadata={field: 1})
    stage = ValidityStage([KeywordScorer()], mode="context")
    base = Retriever(store, hash_encoder)(Query(text="job", namespace="sam"), [], trace=Trace())
    bad = [base[0].with_annotation(field, True)] + base[1:]
    with pytest.raises(ValueError, match=field):
        stage(Query(text="job", namespace="sam"), bad, trace=_trace())
    sneaky = Memory.model_construct(**{**base[0].memory.__dict__, "metadata": {field: 1}})
    with pytest.raises(ValueError, match=field):
        stage(Query(text="job", namespace="sam"), [Candidate(sneaky, 1.0)], trace=_trace())


def _trace() -> Trace:
    return Trace()


def test_contract5_no_evaluation_field_leaks_into_output(store, hash_encoder):
    for mode in ("context", "demote"):
        for q in QUERIES:
            resp = pipeline(store, hash_encoder, mode).run(Query(text=q, namespace="sam"))
            keys: set[str] = set()
            _walk([r.to_dict() for r in resp.results], keys)
            assert not keys & EVAL_ONLY_FIELDS


def _walk(obj, keys: set[str]) -> None:
    if isinstance(obj, dict):
        keys.update(obj)
        for v in obj.values():
            _walk(v, keys)
    elif isinstance(obj, list):
        for v in obj:
            _walk(v, keys)


def test_contract6_same_input_same_output(store, hash_encoder):
    for mode in ("context", "demote"):
        outs = {json.dumps([r.to_dict() for r in pipeline(store, hash_encoder, mode).run(
            Query(text=QUERIES[1], namespace="sam")).results]) for _ in range(3)}
        assert len(outs) == 1


# -- sources, composition, propagation ------------------------------------------------------

def test_sources_must_be_later_and_same_namespace(store, hash_encoder):
    stage = ValidityStage([KeywordScorer()], store=store, sources={"m4": ["m1"]})
    cands = Retriever(store, hash_encoder)(Query(text="job", namespace="sam"), [], trace=_trace())
    with pytest.raises(ConfigError, match="not later than target 'm4'"):
        stage(Query(text="job", namespace="sam"), cands, trace=_trace())
    a, b = store.get("sam", "m1"), store.get("sam", "m4")
    assert is_later(b, a) and not is_later(a, b) and not is_later(a, a)


def test_explicit_source_map_is_used(store, hash_encoder):
    stage = ValidityStage([KeywordScorer()], store=store, sources={"m3": ["m5"]})
    cands = Retriever(store, hash_encoder)(Query(text="cat", namespace="sam"), [], trace=_trace())
    out = {c.memory.id: c.annotations["validity"] for c in
           stage(Query(text="cat", namespace="sam"), cands, trace=_trace())}
    assert out["m3"].superseded_by == "m5"


def test_noisy_or_and_gate_formulas():
    assert noisy_or([]) == 0.0
    assert noisy_or([0.5, 0.5]) == pytest.approx(1 - (1 - 0.5) * (1 - 0.5))
    assert noisy_or([0.2, 0.3, 0.1]) == pytest.approx(1 - 0.8 * 0.7 * 0.9)
    heads = [np.array([0.9, 0.5]), np.array([0.8, 0.5])]
    assert np.allclose(edge_scores(heads), [0.9 * 0.8, 0.5 * 0.5])
    gate = (np.array([0.7, 0.9]), np.array([0.6, 0.95]))
    assert np.allclose(edge_scores(heads, gate), [0.9 * 0.8 * 0.6, 0.25 * 0.9])


def test_propagation_along_given_edges_is_noisy_or_over_paths():
    # c depends on b and on a; b depends on a. Only a is overturned directly.
    out = propagate({"a": 0.9, "b": 0.0, "c": 0.1}, {"b": ["a"], "c": ["b", "a"]})
    assert out["a"] == pytest.approx(0.9)
    assert out["b"] == pytest.approx(0.9)
    assert out["c"] == pytest.approx(1 - (1 - 0.1) * (1 - 0.9) * (1 - 0.9))
    with pytest.raises(ConfigError, match="cycle"):
        propagate({"a": 1.0}, {"a": ["b"], "b": ["a"]})


def test_stage_propagates_to_dependents(store, hash_encoder):
    # m2 (the cat) depends on m3 (living in Leeds); m5 overturns m3, so m2 becomes doubtful.
    stage = ValidityStage([KeywordScorer()], store=store, dependencies={"m2": ["m3"]})
    cands = Retriever(store, hash_encoder)(Query(text="cat Pepper", namespace="sam"), [],
                                           trace=_trace())
    out = {c.memory.id: c.annotations["validity"] for c in
           stage(Query(text="cat Pepper", namespace="sam"), cands, trace=_trace())}
    assert out["m3"].status == "possibly_outdated"
    assert out["m2"].status == "possibly_outdated" and out["m2"].superseded_by == "m5"


def test_bad_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="validity modes"):
        ValidityStage([KeywordScorer()], mode="loud")


class RecordingScorer(KeywordScorer):
    def __init__(self) -> None:
        super().__init__()
        self.triples: list[tuple[str, str, str]] = []

    def score(self, triples):
        self.triples += list(triples)
        return super().score(triples)


def _sources_seen(store, encoder, query, **kw) -> dict[str, str]:
    scorer = RecordingScorer()
    stage = ValidityStage([scorer], store=store, **kw)
    q = Query(text=query, namespace="sam")
    stage(q, Retriever(store, encoder)(q, [], trace=_trace()), trace=_trace())
    text_to_id = {store.get("sam", i).text: i for i, _, _ in MEMS}
    return {text_to_id[t]: text_to_id[s] for _, s, t in scorer.triples}


def test_nearest_policy_picks_the_later_memory_closest_to_the_target(store, hash_encoder):
    # For "Pepper the cat", the best-ranked memory later than m1 (the nurse job) is about the
    # cat; ``nearest`` takes the later memory whose vector is closest to m1's own.
    top1 = _sources_seen(store, hash_encoder, "Pepper the cat")
    nearest = _sources_seen(store, hash_encoder, "Pepper the cat", source_policy="nearest")
    ids, matrix = store.vectors("sam")
    sims = dict(zip(ids, matrix @ matrix[ids.index("m1")], strict=True))
    assert nearest["m1"] == max(("m2", "m3", "m4", "m5"), key=sims.get)
    assert top1["m1"] != nearest["m1"]
    assert set(nearest) == set(top1)  # same targets; only the choice of source differs


def test_similarity_gate_skips_sources_about_something_else(store, hash_encoder):
    assert _sources_seen(store, hash_encoder, "job", min_similarity=1.01) == {}
    assert _sources_seen(store, hash_encoder, "job", min_similarity=-1.0) == \
        _sources_seen(store, hash_encoder, "job")
    with pytest.raises(ConfigError, match="need the store"):
        ValidityStage([KeywordScorer()], min_similarity=0.3)
