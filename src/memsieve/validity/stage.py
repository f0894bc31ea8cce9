"""The validity stage (pipeline step 5): for each top-k result (the *target*), does a later
memory of the same namespace (the *source*) overturn it, for what this query asks?

Modes (validity-context-layer §14.1): ``None``/``"off"`` returns its input untouched;
``"context"`` (default) keeps the candidate set and order and attaches ``validity`` metadata;
``"demote"`` (opt-in) keeps the set and count and moves flagged targets below the unflagged
ones inside the top-k window, each group in the order the earlier stages produced.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from memsieve.errors import ConfigError
from memsieve.retrieve.index import IndexCache, NamespaceIndex
from memsieve.store.base import Store
from memsieve.trace import Trace
from memsieve.types import Candidate, Memory, Query, check_no_eval_fields
from memsieve.validity.compose import edge_scores, noisy_or, propagate
from memsieve.validity.edges import Edge, spoken
from memsieve.validity.statement import StatementGate
from memsieve.validity.verifier import PairScorer


class ValidityMode(enum.StrEnum):
    off = "off"
    context = "context"
    demote = "demote"


class SourcePolicy(enum.StrEnum):
    top1 = "top1"  # the best-ranked later memory (§11: the deployed policy)
    topn = "topn"  # the n best-ranked later memories
    nearest = "nearest"  # the n later pool memories closest to the target (embedding cosine)
    edges = "edges"  # the sources of the target's write-time candidate edges (the store's)


@dataclasses.dataclass(frozen=True)
class Validity:
    """Validity metadata of one result (DESIGN.md data model)."""

    status: str  # "current" | "possibly_outdated"
    invalid_score: float
    superseded_by: str | None
    evidence: str | None
    context_note: str


def is_later(source: Memory, target: Memory, *, written_after: bool = False) -> bool:
    """True when ``source`` was said after ``target``: a later timestamp, or the same timestamp
    and session with a later turn. Equal times that session and turn cannot order (two
    sessions on one day with date-only timestamps, a turn without an index) are ordered by
    ``written_after``: whether the store received ``source`` after ``target`` (the write-time
    edge finder knows, and the query-time policies read it from the index's row order; a
    caller without it passes nothing and so calls them not later). Unknown times are never
    later (conservative)."""
    if source.id == target.id or source.timestamp is None or target.timestamp is None:
        return False
    s, t = _naive(source.timestamp), _naive(target.timestamp)
    if s != t:
        return s > t
    if (source.session_id == target.session_id and source.turn_index is not None
            and target.turn_index is not None):
        return source.turn_index > target.turn_index
    return written_after


def _naive(ts: datetime) -> datetime:
    return ts.replace(tzinfo=None) if ts.tzinfo else ts


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def sanitise(text: str, limit: int = 300) -> str:
    """Evidence as an agent may read it: no control characters, bounded length."""
    text = _CONTROL.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ValidityStage:
    """Pipeline step 5. See the module docstring for the modes and the contracts they keep.

    Args:
        heads: the slot heads (their scores multiply); usually one trained verifier.
        gate: optional (event, operation) scorers for ``edge = slot · min(p_ev, p_op)``.
        store: needed to resolve caller-given sources / dependency parents not in the pool,
            and for the ``nearest`` policy's vectors.
        source_policy: which later memories of the pool are a target's sources: ``top1`` /
            ``topn`` rank them by the earlier stages' order (what the query asks), ``nearest``
            by embedding similarity to the target (what the target says): for list-like
            questions ("what's left on my to-do list?") the turn that drops *this* item is
            rarely the best-ranked later one. ``edges`` takes the sources of the target's
            write-time candidate edges (``validity/edges.py``; in the pool or not, those in
            the pool first, by rank): a result without an edge costs no verifier pass.
        cache: the retriever's index cache, to share its vectors (optional).
        min_similarity: a source the policy picked is scored only if the cosine of its
            embedding with the target's is at least this (the store's vectors): a turn about
            something else cannot overturn the target, and skipping it saves a verifier pass.
            ``None`` (default) gates nothing. The packaged checkpoint carries a floor chosen on
            generator validation data for the ``minilm`` encoder (``Pipeline.default`` uses it
            when the store was embedded with that encoder).
        edge_threshold: with ``edges``, a write-time edge is judged only if its query-blind
            score reaches this (the packaged checkpoint carries one chosen on generator
            validation data, for ``minilm`` stores); ``None`` judges every edge.
        target_gate: a ``StatementGate`` (``validity/statement.py``): a target whose stored
            embedding it reads as small talk (nothing a later memory could overturn) gets no
            policy sources and costs no verifier pass; with ``edges``, neither is a source it
            reads so (a reaction or a question asserts no change). ``Pipeline.default`` uses
            the packaged one for ``minilm`` stores; ``None`` (default) judges every target.
        sources: an explicit map target id → source ids (overrides the policy for those ids).
        dependencies: child id → parent ids it depends on; invalidity propagates along them.
        context_threshold: ``invalid_score`` at or above which a result is flagged.
        demote_threshold: at or above which ``demote`` moves it down (≥ context threshold).
    """

    name = "validity"

    def __init__(
        self,
        heads: Sequence[PairScorer],
        *,
        mode: ValidityMode | str | None = ValidityMode.context,
        store: Store | None = None,
        gate: tuple[PairScorer, PairScorer] | None = None,
        source_policy: SourcePolicy | str = SourcePolicy.top1,
        n_sources: int = 1,
        cache: IndexCache | None = None,
        min_similarity: float | None = None,
        edge_threshold: float | None = None,
        target_gate: StatementGate | None = None,
        sources: Mapping[str, Sequence[str]] | None = None,
        dependencies: Mapping[str, Sequence[str]] | None = None,
        top_k: int = 10,
        context_threshold: float = 0.5,
        demote_threshold: float | None = None,
    ) -> None:
        try:
            self.mode = ValidityMode(mode if mode is not None else "off")
            self.source_policy = SourcePolicy(source_policy)
        except ValueError as err:
            raise ConfigError(
                f"{err}; validity modes: None, off, context, demote; source policies: "
                f"{', '.join(SourcePolicy)}"
            ) from None
        if not heads and self.mode is not ValidityMode.off:
            raise ConfigError("the validity layer needs at least one scorer")
        if top_k < 1 or n_sources < 1:
            raise ConfigError("top_k and n_sources must be >= 1")
        self.heads, self.gate, self.store = list(heads), gate, store
        self.n_sources = 1 if self.source_policy is SourcePolicy.top1 else n_sources
        self.sources = {k: list(v) for k, v in (sources or {}).items()}
        self.dependencies = {k: list(v) for k, v in (dependencies or {}).items()}
        if (self.sources or self.dependencies) and store is None:
            raise ConfigError("explicit sources or dependencies need the store to resolve ids")
        if self.source_policy is SourcePolicy.edges and store is None:
            raise ConfigError("source_policy='edges' needs the store (it keeps the edges)")
        needs_vectors = (self.source_policy is SourcePolicy.nearest
                         or min_similarity is not None or target_gate is not None)
        if needs_vectors and cache is None and store is None:
            raise ConfigError("source_policy='nearest', min_similarity and target_gate "
                              "need the store (for its vectors)")
        if cache is None and store is not None and (
                needs_vectors or self.source_policy is SourcePolicy.top1):
            cache = IndexCache(store, capacity=2)  # vectors, and the write order of ties
        self.cache, self.min_similarity = cache, min_similarity
        self.edge_threshold, self.target_gate = edge_threshold, target_gate
        self.top_k = top_k
        self.context_threshold = context_threshold
        self.demote_threshold = (
            demote_threshold if demote_threshold is not None else context_threshold
        )

    # -- selection ---------------------------------------------------------------------------

    def _sources_for(
        self, target: Memory, pool: Sequence[tuple[Memory, datetime | None]], namespace: str,
        edges: Mapping[str, Sequence[Edge]], index: NamespaceIndex | None,
    ) -> list[Memory]:
        """The target's sources: the caller's map, else the policy over the later ``pool``
        memories (each with its naive timestamp) and the namespace's ``index`` (vectors, and
        the write order of ties), both read once per query."""
        if target.id in self.sources:
            out = []
            for sid in self.sources[target.id]:
                src = self.store.get(namespace, sid)  # type: ignore[union-attr]
                if src.namespace != namespace:
                    raise ConfigError(f"source {sid!r} is not in namespace {namespace!r}")
                if not is_later(src, target):
                    raise ConfigError(
                        f"source {sid!r} is not later than target {target.id!r}; a memory can "
                        "only be overturned by a later one"
                    )
                out.append(src)
            return out
        if self.source_policy is SourcePolicy.edges:
            return self._edge_sources(edges.get(target.id, ()), pool, namespace)
        if target.timestamp is None:
            return []
        t = _naive(target.timestamp)
        rows = index.rows if index is not None else {}
        at = rows.get(target.id)

        def written_after(m: Memory) -> bool:  # the index's rows are in write order
            return at is not None and rows.get(m.id, -1) > at

        later = [m for m, ts in pool if ts is not None and (
            ts > t or (ts == t and is_later(m, target, written_after=written_after(m))))]
        nearest = self.source_policy is SourcePolicy.nearest
        if not nearest:  # rank order decides: only the first n need a similarity
            later = later[: self.n_sources]
        if not later or index is None:
            return later[: self.n_sources]
        if at is None:  # e.g. a caller-given parent from elsewhere: no vector
            return later[: self.n_sources]
        sims = index.matrix[[rows[m.id] for m in later]] @ index.matrix[at]
        chosen = (np.argsort(-sims, kind="stable") if nearest
                  else np.arange(len(later)))[: self.n_sources]
        floor = self.min_similarity if self.min_similarity is not None else -np.inf
        return [later[i] for i in chosen if sims[i] >= floor]

    def _edge_sources(self, edges: Sequence[Edge], pool: Sequence[tuple[Memory, datetime | None]],
                      namespace: str) -> list[Memory]:
        if not edges:
            return []
        if self.edge_threshold is not None:
            edges = [e for e in edges if e.score >= self.edge_threshold]
        rank = {m.id: i for i, (m, _) in enumerate(pool)}
        in_pool = {m.id: m for m, _ in pool}
        ids = sorted((e.source for e in edges),
                     key=lambda sid: rank.get(sid, len(rank)))[: self.n_sources]
        sources = [in_pool[sid] if sid in in_pool
                   else self.store.get(namespace, sid)  # type: ignore[union-attr]
                   for sid in ids]
        speaking = self._stating(sources, namespace)  # small talk asserts no change
        return [m for m in sources if m.id in speaking]

    def _stating(self, targets: Sequence[Memory], namespace: str) -> set[str]:
        """Ids of the memories the target gate lets through (all without a gate, and any
        whose vector the index does not hold: judged, as without the gate)."""
        ids = {t.id for t in targets}
        if self.target_gate is None or not targets or self.cache is None:
            return ids
        index = self.cache.get(namespace)
        held = [t.id for t in targets if t.id in index.rows]
        if not held:
            return ids
        keep = self.target_gate.keeps(index.matrix[[index.rows[i] for i in held]])
        return ids - {i for i, k in zip(held, keep, strict=True) if not k}

    def _ancestors(self, ids: Sequence[str]) -> list[str]:
        seen: list[str] = []
        frontier = list(ids)
        while frontier and len(seen) < 10_000:
            node = frontier.pop()
            for parent in self.dependencies.get(node, ()):
                if parent not in seen and parent not in ids:
                    seen.append(parent)
                    frontier.append(parent)
        return seen

    # -- scoring -----------------------------------------------------------------------------

    def score_targets(
        self, query: Query, targets: Sequence[Memory], pool: Sequence[Candidate], *,
        stating: set[str] | None = None,
    ) -> dict[str, tuple[float, Memory | None]]:
        """invalid_score per target id and the source that contributed most (or None).
        ``stating``: the target ids the target gate let through (default: ask it)."""
        pairs: list[tuple[str, Memory]] = []  # (target id, source)
        by_id = {t.id: t for t in targets}
        timed = [(c.memory, _naive(c.memory.timestamp) if c.memory.timestamp else None)
                 for c in pool]
        if stating is None:
            stating = self._stating(targets, query.namespace)
        by_edges = self.source_policy is SourcePolicy.edges
        edges = (self.store.edges(query.namespace,  # type: ignore[union-attr]
                                  [t.id for t in targets if t.id in stating])
                 if by_edges else {})
        index = (self.cache.get(query.namespace)
                 if self.cache is not None and not by_edges else None)
        for t in targets:
            if t.id not in stating and t.id not in self.sources:
                continue
            for src in self._sources_for(t, timed, query.namespace, edges, index):
                pairs.append((t.id, src))
        edges = np.zeros(len(pairs))
        if pairs:
            triples = [(query.text, spoken(src), spoken(by_id[tid])) for tid, src in pairs]
            heads = [np.asarray(h.score(triples), dtype=np.float64) for h in self.heads]
            gate = None
            if self.gate is not None:
                gate = (self.gate[0].score(triples), self.gate[1].score(triples))
            edges = edge_scores(heads, gate)
        direct: dict[str, list[float]] = {t.id: [] for t in targets}
        best: dict[str, tuple[float, Memory]] = {}
        for (tid, src), e in zip(pairs, edges, strict=True):
            direct[tid].append(float(e))
            if tid not in best or e > best[tid][0]:
                best[tid] = (float(e), src)
        return {tid: (noisy_or(v), best.get(tid, (0.0, None))[1]) for tid, v in direct.items()}

    def __call__(
        self, query: Query, candidates: list[Candidate], *, trace: Trace
    ) -> list[Candidate]:
        if self.mode is ValidityMode.off:
            return candidates
        for c in candidates:
            check_no_eval_fields(c.memory.metadata, f"memory {c.memory.id!r} metadata")
            check_no_eval_fields(c.scores, f"candidate {c.memory.id!r} scores")
            check_no_eval_fields(c.annotations, f"candidate {c.memory.id!r} annotations")
        window, rest = candidates[: self.top_k], candidates[self.top_k :]
        targets = [c.memory for c in window]
        extra = []
        if self.dependencies:
            extra = [self.store.get(query.namespace, a)  # type: ignore[union-attr]
                     for a in self._ancestors([t.id for t in targets])]
        stating = self._stating(targets + extra, query.namespace)
        skipped = [t.id for t in targets if t.id not in stating and t.id not in self.sources]
        if self.target_gate is not None:
            trace.note("validity_target_gate", {"skipped": skipped})
        scored = self.score_targets(query, targets + extra, candidates, stating=stating)
        superseded = {tid: src for tid, (_, src) in scored.items()}
        final = {tid: s for tid, (s, _) in scored.items()}
        if self.dependencies:
            final = propagate(final, self.dependencies)
            for t in targets:  # name the upstream memory when the invalidity came through it
                if superseded.get(t.id) is None:
                    up = max(
                        self.dependencies.get(t.id, ()),
                        key=lambda p: final.get(p, 0.0),
                        default=None,
                    )
                    if up is not None and final.get(up, 0.0) > 0.0:
                        superseded[t.id] = superseded.get(up)
        annotated = []
        small_talk = set(skipped)
        for c in window:
            v = self._validity(c.memory, final.get(c.memory.id, 0.0), superseded.get(c.memory.id),
                               small_talk=c.memory.id in small_talk)
            annotated.append(c.with_annotation("validity", v))
        if self.mode is ValidityMode.demote:
            keep = [
                c
                for c in annotated
                if c.annotations["validity"].invalid_score < self.demote_threshold
            ]
            down = [
                c
                for c in annotated
                if c.annotations["validity"].invalid_score >= self.demote_threshold
            ]
            annotated = keep + down
        return annotated + rest

    def _validity(self, target: Memory, score: float, source: Memory | None, *,
                  small_talk: bool = False) -> Validity:
        score = round(float(score), 6)
        if score >= self.context_threshold and source is not None:
            when = f" ({source.timestamp.date().isoformat()})" if source.timestamp else ""
            note = (
                f"This memory may be out of date: a later memory{when} appears to update it "
                f"for this question (invalid score {score:.2f})."
            )
            return Validity("possibly_outdated", score, source.id, sanitise(source.text), note)
        return Validity(
            "current",
            score,
            None,
            None,
            "This memory seems to state nothing a later one could overturn (small talk); not "
            "checked."
            if small_talk and score < self.context_threshold
            else "No later memory was found that overturns this one for this question.",
        )
