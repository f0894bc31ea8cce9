"""Write-time candidate edges: who may overturn whom, found once at add time; kept by the store
in the add's transaction; gone with a purge or a rewrite; a forgotten source is no evidence;
the validity stage's ``edges`` policy judges only results that have one."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import numpy as np
import pytest

from memsieve.embed import HashingEncoder
from memsieve.ingest import add_memories
from memsieve.trace import Trace
from memsieve.types import Candidate, Memory, Query
from memsieve.validity.edges import Held, candidate_edges, rebuild, spoken
from memsieve.validity.stage import ValidityStage, is_later

T0 = datetime(2024, 1, 1)


def mem(i: int, text: str, speaker: str | None = "Sam", day: int | None = None) -> Memory:
    return Memory(id=f"m{i}", namespace="ns", text=text, speaker=speaker,
                  timestamp=None if day is None else T0 + timedelta(days=day))


def unit(*rows: list[float]) -> np.ndarray:
    x = np.array(rows, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def held(mems: list[Memory], vectors: np.ndarray) -> Held:
    return Held([m.id for m in mems], vectors, lambda rows: [mems[r] for r in rows])


def test_edges_point_back_in_time_to_similar_memories_of_the_same_speaker():
    earlier = [mem(0, "I work at Acme", day=0), mem(1, "I live in York", day=1),
               mem(2, "Ann works at Acme", speaker="Ann", day=0)]
    ev = unit([1, 0, 0], [0, 1, 0], [1, 0.01, 0])
    new = [mem(3, "I moved to Zeta", day=5), mem(4, "undated", day=None)]
    nv = unit([1, 0.1, 0], [1, 0, 0])
    edges = candidate_edges(new, nv, held(earlier, ev), floor=0.5)
    assert [(e.source, e.target) for e in edges] == [("m3", "m0")]  # not Ann's, not York
    assert 0.99 < edges[0].score <= 1.0
    # a source never points forward in time: written after the later memory, the earlier one
    # gets no edge of its own; the later held one is re-linked to it (an import of old chat)
    got = candidate_edges([earlier[0]], ev[:1], held([new[0]], nv[:1]), floor=0.5)
    assert [(e.source, e.target) for e in got] == [("m3", "m0")]
    # per_source bounds the edges of one source; the floor cuts dissimilar ones
    many = [mem(10 + i, f"job {i}", day=i) for i in range(5)]
    mv = unit(*[[1, 0.05 * i, 0] for i in range(5)])
    got = candidate_edges([mem(20, "new job", day=9)], unit([1, 0, 0]), held(many, mv),
                          floor=0.5, per_source=2)
    assert [e.target for e in got] == ["m10", "m11"]
    assert candidate_edges([mem(20, "x", day=9)], unit([0, 0, 1]), held(many, mv),
                           floor=0.5) == []
    # within one batch: a later memory points at an earlier one of the same batch; a
    # rewritten memory is judged by its new copy only
    batch = [mem(0, "I work at Acme", day=0), mem(5, "I work at Zeta now", day=3)]
    got = candidate_edges(batch, unit([1, 0, 0], [1, 0.1, 0]), held(earlier, ev), floor=0.5)
    assert [(e.source, e.target) for e in got] == [("m5", "m0")]


def test_equal_times_that_session_and_turn_cannot_order_go_by_write_order(any_store):
    """Date-only timestamps: two sessions on one day (Memora's weekly conversations have ~20%
    of their true updates so). The session written later may overturn the earlier one, never
    the reverse; a rewrite keeps its place; ``rebuild`` finds what the live writes found."""
    day = T0

    def turn(i: str, session: str, text: str) -> Memory:
        return Memory(id=i, namespace="ns", text=text, speaker="Sam", timestamp=day,
                      session_id=session, turn_index=0)

    a = turn("a", "s1", "Sam: I need to prepare the lecture slides for tomorrow")
    b = turn("b", "s2", "Sam: I finished the lecture slides for tomorrow")
    assert not is_later(b, a) and is_later(b, a, written_after=True)  # a tie: the writer's word
    # same session, known turns: the turn decides, whatever the write order says
    c = b.model_copy(update={"session_id": "s1", "turn_index": 1})
    assert is_later(c, a) and not is_later(a, c, written_after=True)
    vec = unit([1, 0.1, 0], [1, 0, 0])
    got = candidate_edges([a, b], vec, floor=0.5)
    assert [(e.source, e.target) for e in got] == [("b", "a")]
    got = candidate_edges([b], vec[1:], held([a], vec[:1]), floor=0.5)
    assert [(e.source, e.target) for e in got] == [("b", "a")]
    # a rewrite of the earlier-written one keeps its place: it does not overturn the later one
    assert candidate_edges([a], vec[:1], held([a, b], vec), floor=0.5) == []
    enc = HashingEncoder()
    add_memories(any_store, [a], enc)
    add_memories(any_store, [b], enc)
    live = any_store.edges("ns", ["a", "b"])
    assert [(e.source, e.target) for e in live.get("a", [])] == [("b", "a")] and "b" not in live
    add_memories(any_store, [a], enc)  # rewritten in place (same text): still the earlier one
    assert rebuild(any_store, "ns") == 1
    assert {t: [(e.source, e.target) for e in es]
            for t, es in any_store.edges("ns", ["a", "b"]).items()} == {"a": [("b", "a")]}


@pytest.mark.parametrize("policy", ["top1", "nearest"])
def test_query_time_policies_order_equal_times_by_write_order(fresh_store, counting, policy):
    """The query-time source policies read the write order of two same-day sessions from the
    index, as the write-time edges do: the later-written one may overturn the other, never
    the reverse."""
    def turn(i: str, session: str, text: str) -> Memory:
        return Memory(id=i, namespace="ns", text=text, speaker="Sam", timestamp=T0,
                      session_id=session, turn_index=0)

    a = turn("a", "s1", "Sam: I need to prepare the lecture slides for tomorrow")
    b = turn("b", "s2", "Sam: I finished the lecture slides for tomorrow")
    enc = HashingEncoder()
    add_memories(fresh_store, [a], enc)
    add_memories(fresh_store, [b], enc)
    stage = ValidityStage([counting()], store=fresh_store, source_policy=policy)
    out = stage(Query(text="What about the slides?", namespace="ns"),
                [Candidate(b, score=1.0), Candidate(a, score=0.9)], trace=Trace())
    got = {c.memory.id: c.annotations["validity"] for c in out}
    assert got["a"].status == "possibly_outdated" and got["a"].superseded_by == "b"
    assert got["b"].status == "current"


def _all_edges(store, ids):
    return sorted((e.source, e.target) for es in store.edges("ns", ids).values() for e in es)


def test_a_rewrite_relinks_the_later_memories_that_overturn_it(any_store):
    """A typo fix of an old memory must not hide the later update, nor an import of old chat
    stay unlinked: the later memories that pointed at a rewritten text, or now may point at
    what was written, get their edges found again, exactly as ``rebuild`` finds them (at most
    ``PER_SOURCE`` each)."""
    enc = HashingEncoder()

    def m(i: str, text: str, day: int) -> Memory:
        return Memory(id=i, namespace="ns", text=f"Sam: {text}", speaker="Sam",
                      timestamp=T0 + timedelta(days=day))

    add_memories(any_store, [m("a", "I work at Acme as a bakr", 0),
                             m("x", "I live in York near the gym", 1),
                             m("y", "my job at Acme is fun", 2)], enc)
    add_memories(any_store, [m("b", "I work at Acme as a manager now", 5),
                             m("c", "I moved to Leeds near the gym", 6)], enc)
    ids = ["a", "b", "c", "x", "y"]
    assert ("b", "a") in _all_edges(any_store, ids)
    add_memories(any_store, [m("a", "I work at Acme as a baker", 0)], enc)  # the typo fixed
    live = _all_edges(any_store, ids)
    assert ("b", "a") in live  # before the fix: dropped with the old text, never found again
    # a rewrite that moves a memory into York's neighbourhood is found by the later move,
    # which keeps its edge to York too (two per source at most)
    add_memories(any_store, [m("y", "I live in York near the big gym", 2)], enc)
    live = _all_edges(any_store, ids)
    assert ("c", "y") in live and ("c", "x") in live
    # an old memory written late (an import of an earlier chat): the later update finds it
    add_memories(any_store, [m("z", "I work at Acme as a cashier", 3)], enc)
    ids.append("z")
    live = _all_edges(any_store, ids)
    assert ("b", "z") in live
    rebuild(any_store, "ns")
    assert _all_edges(any_store, ids) == live
    assert max(Counter(s for s, _ in live).values()) <= 2


def test_relinking_judges_only_the_pairs_whose_texts_are_new(any_store, monkeypatch):
    """A rewrite re-links the later memories that pointed at it, but an edge of theirs to an
    unchanged memory keeps its stored score: the judge reads only pairs with the new text, and
    the edges (scores included) are those ``rebuild`` finds with the same judge."""
    import memsieve.ingest.core as core

    calls: list[list[tuple[str, str]]] = []

    def judge(pairs):
        calls.append(list(pairs))
        return np.array([(len(a) % 7 + len(b) % 5) / 12 for a, b in pairs])

    monkeypatch.setattr(core, "default_judge", lambda model: judge)
    enc = HashingEncoder()

    def m(i: str, text: str, day: int) -> Memory:
        return Memory(id=i, namespace="ns", text=f"Sam: {text}", speaker="Sam",
                      timestamp=T0 + timedelta(days=day))

    add_memories(any_store, [m("a", "I work at Acme as a bakr", 0),
                             m("x", "I work at Acme in York", 1)], enc)
    add_memories(any_store, [m("b", "I work at Acme as a manager in York now", 5)], enc)
    ids = ["a", "b", "x"]

    def scored():
        return sorted((e.source, e.target, e.score)
                      for es in any_store.edges("ns", ids).values() for e in es)

    assert {(s, t) for s, t, _ in scored()} == {("b", "a"), ("b", "x"), ("x", "a")}
    calls.clear()
    add_memories(any_store, [m("a", "I work at Acme as a baker", 0)], enc)  # the typo fixed
    judged = [p for c in calls for p in c]
    assert judged and all("baker" in src + tgt for src, tgt in judged)  # not (b, x) again
    live = scored()
    rebuild(any_store, "ns", judge)
    assert scored() == live


def test_store_keeps_edges_and_drops_them_with_a_purge_or_a_rewrite(any_store):
    enc = HashingEncoder()
    old = Memory(id="a", namespace="ns", text="Sam: I work at Acme as a baker", speaker="Sam",
                 timestamp=T0)
    new = Memory(id="b", namespace="ns", text="Sam: I work at Acme as a manager now",
                 speaker="Sam", timestamp=T0 + timedelta(days=3))
    add_memories(any_store, [old], enc)
    add_memories(any_store, [new], enc)  # a later write: its edge points at the stored one
    got = any_store.edges("ns", ["a", "b"])
    assert [(e.source, e.target) for e in got["a"]] == [("b", "a")] and "b" not in got
    any_store.forget("ns", "b")
    assert any_store.edges("ns", ["a"]) == {}  # a forgotten source is no evidence
    any_store.set_state("ns", "b", "current")
    assert list(any_store.edges("ns", ["a"])) == ["a"]
    add_memories(any_store, [old], enc)  # re-ingesting the same text keeps what points at it
    assert list(any_store.edges("ns", ["a"])) == ["a"]
    add_memories(any_store, [Memory(id="b", namespace="ns", text="Ann: lovely weather",
                                    speaker="Ann", timestamp=new.timestamp)], enc)
    assert any_store.edges("ns", ["a"]) == {}  # rewritten: its old edge went with its text
    add_memories(any_store, [new], enc)
    assert list(any_store.edges("ns", ["a"])) == ["a"]
    assert any_store.purge("ns", ["a"]) == 1
    any_store.add([Memory(id="a2", namespace="ns", text="x", timestamp=T0)])
    assert any_store.edges("ns", ["a", "a2", "b"]) == {}


def test_a_rewrite_that_changes_only_the_speaker_relinks_like_rebuild(any_store):
    """The speaker decides which earlier memories a source may overturn (and the verifier
    reads it): a re-ingest that fixes a turn's speaker, same text, is a rewrite for the edges."""
    enc = HashingEncoder()
    job = Memory(id="a", namespace="ns", text="I work at Acme as a baker", speaker="Ann",
                 timestamp=T0)
    later = Memory(id="b", namespace="ns", text="I work at Acme as a manager now",
                   speaker="Sam", timestamp=T0 + timedelta(days=3))
    add_memories(any_store, [job, later], enc)
    assert any_store.edges("ns", ["a"]) == {}  # another speaker's job: no edge
    add_memories(any_store, [job.model_copy(update={"speaker": "Sam"})], enc)
    live = {k: [(e.source, e.target, e.score) for e in v]
            for k, v in any_store.edges("ns", ["a", "b"]).items()}
    assert [(s, t) for s, t, _ in live.get("a", [])] == [("b", "a")]
    rebuild(any_store, "ns")
    assert {k: [(e.source, e.target, e.score) for e in v]
            for k, v in any_store.edges("ns", ["a", "b"]).items()} == live


def test_edges_policy_judges_only_results_with_an_edge(fresh_store, counting):
    enc = HashingEncoder()
    mems = [Memory(id="job", namespace="ns", text="Sam: I work at Acme as a baker",
                   speaker="Sam", timestamp=T0),
            Memory(id="pet", namespace="ns", text="Sam: my cat is called Tom", speaker="Sam",
                   timestamp=T0 + timedelta(days=1)),
            Memory(id="job2", namespace="ns", text="Sam: I work at Acme as a manager now",
                   speaker="Sam", timestamp=T0 + timedelta(days=2))]
    add_memories(fresh_store, mems, enc)
    scorer = counting()
    stage = ValidityStage([scorer], store=fresh_store, source_policy="edges")
    cands = [Candidate(m, score=1.0) for m in reversed(mems)]
    out = stage(Query(text="Where does Sam work?", namespace="ns"), cands, trace=Trace())
    flagged = {c.memory.id: c.annotations["validity"] for c in out}
    assert flagged["job"].status == "possibly_outdated" and flagged["job"].superseded_by == "job2"
    assert flagged["pet"].status == "current" and flagged["job2"].status == "current"
    assert scorer.pairs == 1  # only the result with an edge cost a verifier pass


def test_a_judge_scores_edges_and_the_stage_judges_only_those_above_its_threshold(fresh_store,
                                                                                 counting):
    earlier = [mem(0, "I work at Acme", day=0), mem(1, "I work at Acme, in sales", day=1)]
    new = [mem(2, "I work at Zeta now", day=5)]
    seen = []

    def judge(pairs):
        seen.extend(pairs)
        return np.array([0.9 if "sales" not in t else 0.01 for _, t in pairs])

    edges = candidate_edges(new, unit([1, 0.1, 0]), held(earlier, unit([1, 0, 0], [1, 0.05, 0])),
                            judge=judge, floor=0.5)
    assert {(e.target, e.score) for e in edges} == {("m0", 0.9), ("m1", 0.01)}
    # one batch of (source, target), each as the verifier reads a turn: "speaker: text"
    assert {s for s, _ in seen} == {"Sam: I work at Zeta now"}
    fresh_store.add(earlier + new)
    fresh_store.set_edges("ns", edges)
    scorer = counting()
    stage = ValidityStage([scorer], store=fresh_store, source_policy="edges", edge_threshold=0.5)
    out = stage(Query(text="Where does Sam work?", namespace="ns"),
                [Candidate(m, score=1.0) for m in earlier + new], trace=Trace())
    status = {c.memory.id: c.annotations["validity"].status for c in out}
    assert status == {"m0": "possibly_outdated", "m1": "current", "m2": "current"}
    assert scorer.pairs == 1


def test_similarities_by_torch_equal_numpys():
    """With a judge loaded, the edge finder's products run on torch's threads (numpy's idle
    BLAS threads would starve the verifier); the cosines are numpy's to float32 precision."""
    import torch  # noqa: F401  (loaded, as with any judge)

    from memsieve.validity.edges import _cosines

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 16), dtype=np.float32), rng.standard_normal((40, 16),
                                                                               dtype=np.float32)
    b.setflags(write=False)  # a store's vectors may be read-only
    for rows in (a[:1], a, a[[3, 1]]):
        got = _cosines(rows, b)
        assert got.shape == (len(rows), len(b)) and got.dtype == np.float32
        assert np.allclose(got, rows @ b.T, atol=1e-5)
        got[:, 0] = -np.inf  # the finder writes into it


def test_the_verifier_reads_a_memory_as_speaker_colon_text_whichever_way_it_was_written(
        fresh_store, counting):
    """The verifier was trained on "speaker: text" turns, and the dataset loaders store text
    that way; an agent adding ``{"speaker": "user", "text": "I moved"}`` must be judged on the
    same input, at write time (the edges) and at query time (the stage)."""
    bare = [mem(0, "I live in Boston", day=0), mem(1, "I moved to Denver", day=3)]
    assert [spoken(m) for m in bare] == ["Sam: I live in Boston", "Sam: I moved to Denver"]
    said = mem(0, "Sam: I live in Boston", day=0)
    assert spoken(said) == "Sam: I live in Boston"  # already in that form: left as it is
    assert spoken(mem(2, "no speaker", speaker=None)) == "no speaker"
    seen = []

    def judge(pairs):
        seen.extend(pairs)
        return np.full(len(pairs), 0.9)

    edges = candidate_edges(bare[1:], unit([1, 0, 0]), held(bare[:1], unit([1, 0, 0])),
                            judge=judge, floor=0.5)
    assert seen == [("Sam: I moved to Denver", "Sam: I live in Boston")]
    fresh_store.add(bare)
    fresh_store.set_edges("ns", edges)
    scorer = counting()
    stage = ValidityStage([scorer], store=fresh_store, source_policy="edges")
    stage(Query(text="Where does Sam live?", namespace="ns"),
          [Candidate(m, score=1.0) for m in bare], trace=Trace())
    assert scorer.seen == [("Where does Sam live?", "Sam: I moved to Denver",
                            "Sam: I live in Boston")]
