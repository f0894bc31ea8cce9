"""Stage 6, "may it be used here?": scope, policy and lifecycle, each 1 | 0 | ? (DESIGN.md).

Each axis is judged from released fields only (the memory's namespace, ``policy_tags`` and
``state``; the query's principal, policy and intent) and combined by ``and3``: one established
violation makes a memory inadmissible, all axes established makes it admissible, anything else
is unresolved, and unresolved is never turned into admissible. A validity flag from stage 5 may
move lifecycle to ``?`` for a ``current`` question; that reason says it is evidence, not a
released state. Reasons name tags, states and memory ids, never memory text (they reach the
exposure log).

Modes: ``off`` leaves the stage out; ``annotate`` (default) adds an ``admissibility`` record to
every candidate and keeps the order; ``enforce`` also removes inadmissible candidates (and
unresolved ones with ``unresolved="exclude"``), keeping them in the trace with the reason.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import Literal

from memsieve.errors import ConfigError
from memsieve.trace import Trace
from memsieve.types import PURPOSE_PREFIX, Candidate, Intent, Memory, Policy, Query, State

Tri = Literal[1, 0, "?"]
UNRESOLVED: Tri = "?"


def and3(values: Iterable[Tri]) -> Tri:
    """Three-valued AND: any 0 → 0; all 1 → 1; otherwise ?."""
    values = list(values)
    if any(v == 0 for v in values):
        return 0
    if all(v == 1 for v in values):
        return 1
    return UNRESOLVED


class Mode(enum.StrEnum):
    off = "off"
    annotate = "annotate"
    enforce = "enforce"


class Unresolved(enum.StrEnum):
    surface = "surface"  # keep unresolved results, marked as such
    exclude = "exclude"  # enforce also removes them (still never called admissible)


STATUS = {1: "admissible", 0: "inadmissible", UNRESOLVED: "unresolved"}


@dataclasses.dataclass(frozen=True)
class Admissibility:
    """The admissibility record of one candidate (DESIGN.md data model)."""

    status: str  # admissible | inadmissible | unresolved
    scope: Tri
    policy: Tri
    lifecycle: Tri
    reasons: tuple[str, ...]

    @property
    def reason(self) -> str:
        """One line for an exclusion: the reasons joined."""
        return "; ".join(self.reasons) or self.status


def scope_of(memory: Memory, query: Query) -> tuple[Tri, str | None]:
    """1 when the memory belongs to the query's principal. The store's namespace support
    already makes this hold for every candidate; the axis re-checks it, never trusts it."""
    if memory.namespace == query.namespace:
        return 1, None
    return 0, "scope: the memory belongs to another principal"


def policy_of(memory: Memory, policy: Policy) -> tuple[Tri, str | None]:
    """The memory's ``policy_tags`` against the query's policy: a denied tag → 0; a memory
    restricted to purposes → 1 when the query serves one of them, 0 when it states purposes
    that are all different, ? when it states none."""
    tags = set(memory.policy_tags)
    denied = sorted(tags.intersection(policy.deny))
    if denied:
        return 0, f"policy: tag {denied[0]!r} is denied here"
    purposes = sorted(t[len(PURPOSE_PREFIX):] for t in tags if t.startswith(PURPOSE_PREFIX))
    if not purposes:
        return 1, None
    if not policy.purposes:
        return UNRESOLVED, (f"policy: restricted to purpose {', '.join(purposes)}; the query "
                            "states no purpose")
    if set(purposes).intersection(policy.purposes):
        return 1, None
    return 0, f"policy: restricted to purpose {', '.join(purposes)}"


def lifecycle_of(memory: Memory, intent: Intent, validity: object = None) -> tuple[Tri, str | None]:
    """Lifecycle state against query intent: current → 1; stale / superseded → 1 for history,
    0 for current, ? for unknown intent; forgotten → 0; unknown state → ?. A validity flag
    (``possibly_outdated``) on a current memory asked about its current value → ?."""
    state = memory.state
    if state is State.forgotten:
        return 0, "lifecycle: forgotten"
    if state is State.unknown:
        return UNRESOLVED, "lifecycle: state unknown"
    if state in (State.stale, State.superseded):
        if intent is Intent.history:
            return 1, None
        if intent is Intent.current:
            return 0, f"lifecycle: {state.value} memory for a current question"
        return UNRESOLVED, f"lifecycle: {state.value} memory and the query intent is unknown"
    if intent is Intent.current and getattr(validity, "status", None) == "possibly_outdated":
        by = getattr(validity, "superseded_by", None)
        return UNRESOLVED, (f"lifecycle: validity evidence (not a released state): later "
                            f"memory {by!r} may supersede it")
    return 1, None


def judge(memory: Memory, query: Query, validity: object = None) -> Admissibility:
    """The three axes and their AND3 for one memory."""
    axes = [scope_of(memory, query), policy_of(memory, query.policy),
            lifecycle_of(memory, query.intent, validity)]
    value = and3(v for v, _ in axes)
    scope, policy, lifecycle = (v for v, _ in axes)
    return Admissibility(STATUS[value], scope, policy, lifecycle,
                         tuple(r for _, r in axes if r is not None))


def _choice(kind: type[enum.StrEnum], value: object) -> enum.StrEnum:
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(m.value for m in kind)
        raise ConfigError(f"admissibility {kind.__name__.lower()} must be one of {names}, "
                          f"got {value!r}") from None


class AdmissibilityStage:
    """Pipeline step 6: annotate (or enforce) admissibility on every candidate.

    Under ``enforce``, results that move up into the top-k after removals carry no validity
    annotation when the validity stage only judged the first k (its window).
    """

    name = "admissibility"

    def __init__(self, mode: Mode | str = Mode.annotate,
                 unresolved: Unresolved | str = Unresolved.surface,
                 *, use_validity: bool = True) -> None:
        self.mode, self.unresolved = _choice(Mode, mode), _choice(Unresolved, unresolved)
        self.use_validity = use_validity

    def __call__(self, query: Query, candidates: list[Candidate], *,
                 trace: Trace) -> list[Candidate]:
        if self.mode is Mode.off:
            return candidates
        out = []
        seen: dict[tuple, Admissibility] = {}  # most candidates share one verdict: judge once
        for c in candidates:
            validity = c.annotations.get("validity") if self.use_validity else None
            m = c.memory
            key = (m.namespace, m.state, m.policy_tags, getattr(validity, "status", None),
                   getattr(validity, "superseded_by", None))
            record = seen.get(key)
            if record is None:
                record = seen[key] = judge(m, query, validity)
            if self.mode is Mode.enforce and (
                record.status == "inadmissible"
                or (record.status == "unresolved" and self.unresolved is Unresolved.exclude)
            ):
                trace.excluded[c.memory.id] = f"{record.status}: {record.reason}"
                continue
            out.append(c.with_annotation("admissibility", record))
        return out
