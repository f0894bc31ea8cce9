"""Admissibility (stage 6): every axis value, AND3, and what annotate / enforce do."""

from __future__ import annotations

import pytest

from memsieve.admissibility import AdmissibilityStage, and3, judge, lifecycle_of, policy_of
from memsieve.errors import ConfigError
from memsieve.trace import Trace
from memsieve.types import Candidate, Intent, Memory, Policy, Query, State
from memsieve.validity.stage import Validity

Q = "?"


def mem(state="current", tags=(), ns="u", mid="m", text="a private sentence") -> Memory:
    return Memory(id=mid, namespace=ns, text=text, state=state, policy_tags=tags)


@pytest.mark.parametrize("values, want", [
    ([1, 1, 1], 1), ([1, 0, 1], 0), ([1, Q, 1], Q), ([0, Q, 1], 0), ([Q, Q, Q], Q), ([], 1),
])
def test_and3(values, want):
    assert and3(values) == want


@pytest.mark.parametrize("state, intent, want", [
    ("current", "current", 1), ("current", "history", 1), ("current", "unknown", 1),
    ("stale", "current", 0), ("stale", "history", 1), ("stale", "unknown", Q),
    ("superseded", "current", 0), ("superseded", "history", 1), ("superseded", "unknown", Q),
    ("forgotten", "current", 0), ("forgotten", "history", 0), ("forgotten", "unknown", 0),
    ("unknown", "current", Q), ("unknown", "history", Q), ("unknown", "unknown", Q),
])
def test_lifecycle_against_intent(state, intent, want):
    value, reason = lifecycle_of(mem(state), Intent(intent))
    assert value == want
    assert (reason is None) == (want == 1)


@pytest.mark.parametrize("tags, policy, want", [
    ((), {}, 1),
    (("health",), {}, 1),
    (("health",), {"deny": ["health"]}, 0),
    (("purpose:support",), {"purposes": ["support"]}, 1),
    (("purpose:support",), {"purposes": ["marketing"]}, 0),
    (("purpose:support",), {}, Q),
    (("purpose:support", "health"), {"purposes": ["support"], "deny": ["health"]}, 0),
    (("purpose:a", "purpose:b"), {"purposes": ["b"]}, 1),
])
def test_policy_tags_against_the_query_policy(tags, policy, want):
    assert policy_of(mem(tags=tags), Policy(**policy))[0] == want


def test_scope_is_zero_for_another_principal():
    record = judge(mem(ns="alice"), Query(text="q", namespace="bob"))
    assert (record.scope, record.status) == (0, "inadmissible")


def test_validity_flag_is_evidence_for_current_questions_only():
    flag = Validity("possibly_outdated", 0.9, "m2", "a later sentence", "note")
    value, reason = lifecycle_of(mem(), Intent.current, flag)
    assert value == Q and "validity evidence" in reason and "m2" in reason
    assert lifecycle_of(mem(), Intent.history, flag)[0] == 1
    assert lifecycle_of(mem(), Intent.unknown, flag)[0] == 1
    calm = Validity("current", 0.1, None, None, "note")
    assert lifecycle_of(mem(), Intent.current, calm)[0] == 1


def test_reasons_never_carry_memory_text():
    secret = "my pin is 4431"
    for m in (mem("stale", ("health",), text=secret), mem("unknown", ("purpose:x",), text=secret)):
        record = judge(m, Query(text="q", namespace="u", intent="current",
                                policy={"deny": ["health"]}))
        assert secret not in " ".join(record.reasons)


def cands() -> list[Candidate]:
    return [
        Candidate(mem(mid="ok"), 3.0),
        Candidate(mem("stale", mid="old"), 2.0),
        Candidate(mem("unknown", mid="unsure"), 1.5),
        Candidate(mem(tags=("health",), mid="private"), 1.0),
    ]


QUERY = Query(text="q", namespace="u", intent="current", policy={"deny": ["health"]})


def test_annotate_keeps_every_candidate_in_order():
    out = AdmissibilityStage("annotate")(QUERY, cands(), trace=Trace())
    assert [c.memory.id for c in out] == ["ok", "old", "unsure", "private"]
    assert [c.annotations["admissibility"].status for c in out] == [
        "admissible", "inadmissible", "unresolved", "inadmissible"]
    assert [c.score for c in out] == [3.0, 2.0, 1.5, 1.0]


def test_enforce_removes_inadmissible_and_keeps_them_in_the_trace():
    trace = Trace()
    out = AdmissibilityStage("enforce")(QUERY, cands(), trace=trace)
    assert [c.memory.id for c in out] == ["ok", "unsure"]  # unresolved is surfaced
    assert out[1].annotations["admissibility"].status == "unresolved"
    assert set(trace.excluded) == {"old", "private"}
    assert "lifecycle" in trace.excluded["old"] and "health" in trace.excluded["private"]


def test_enforce_with_unresolved_exclude_never_turns_unresolved_into_admissible():
    trace = Trace()
    out = AdmissibilityStage("enforce", "exclude")(QUERY, cands(), trace=trace)
    assert [c.memory.id for c in out] == ["ok"]
    assert trace.excluded["unsure"].startswith("unresolved")


def test_off_returns_the_input_unchanged():
    given = cands()
    assert AdmissibilityStage("off")(QUERY, given, trace=Trace()) is given


@pytest.mark.parametrize("kw", [{"mode": "strict"}, {"unresolved": "impute"}])
def test_bad_mode_is_a_config_error(kw):
    with pytest.raises(ConfigError, match="must be one of"):
        AdmissibilityStage(**kw)


def test_query_policy_is_validated():
    with pytest.raises(ValueError):
        Query(text="q", namespace="u", policy={"allow": ["x"]})
    assert Query(text="q", namespace="u").policy == Policy()
    assert State.forgotten.value == "forgotten"
