"""Composition: a Pipeline is a list of stages, each taking and returning ``list[Candidate]``.

A stage is any object with a ``name`` and ``__call__(query, candidates, *, trace)``; it returns
new candidates and never mutates its input, so turning a stage off leaves the output of the
others byte-identical. ``Pipeline.default`` builds the product pipeline from a store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memsieve.embed import Encoder, MemoEncoder, get_encoder
from memsieve.errors import ConfigError
from memsieve.retrieve.retriever import DEFAULT_ALPHA, Retriever
from memsieve.store.base import Store
from memsieve.telemetry import memory_span
from memsieve.trace import Trace
from memsieve.types import Candidate, Query, Result


@runtime_checkable
class Stage(Protocol):
    """One pipeline step. Implement ``name`` and ``__call__``; return new candidates."""

    name: str

    def __call__(
        self, query: Query, candidates: list[Candidate], *, trace: Trace
    ) -> list[Candidate]: ...


@dataclasses.dataclass(frozen=True)
class Response:
    """The answer to one query: the top-k results and the trace."""

    query: Query
    results: list[Result]
    trace: Trace

    def to_dict(self) -> dict:
        return {
            "query": self.query.text,
            "results": [r.to_dict() for r in self.results],
            "excluded": [{"memory_id": i, "reason": r} for i, r in self.trace.excluded.items()],
        }


class Pipeline:
    """Runs stages in order and keeps the top ``k`` as Results.

    With a ``store``, every query runs inside one ``store.snapshot()``: all stages read the
    same state while other processes write, forget or purge.
    """

    def __init__(self, stages: Sequence[Stage], *, k: int = 10, store: Store | None = None) -> None:
        self.stages = list(stages)
        self.k = _check_k(k)
        self.store = store

    def candidates(self, query: Query, *, trace: Trace | None = None) -> list[Candidate]:
        """The full ordered candidate list after every stage (before the top-k cut)."""
        trace = trace if trace is not None else Trace()
        candidates: list[Candidate] = []
        with self.store.snapshot() if self.store is not None else contextlib.nullcontext():
            for stage in self.stages:
                with trace.timed(stage.name):
                    candidates = stage(query, candidates, trace=trace)
        trace.considered = [c.memory.id for c in candidates]
        return candidates

    def run(self, query: Query, *, k: int | None = None) -> Response:
        """Answer ``query``: the top ``k`` results (default ``self.k``) and the trace."""
        trace = Trace()
        t0 = time.perf_counter()
        with memory_span(query.namespace, "search") as span:
            top = self.candidates(query, trace=trace)[: _check_k(k) if k is not None else self.k]
            results = [Result.from_candidate(i + 1, c) for i, c in enumerate(top)]
            span.records([r.memory_id for r in results], [r.score for r in results])
        trace.exposed = [r.memory_id for r in results]
        trace.timings_ms["total"] = (time.perf_counter() - t0) * 1000.0
        return Response(query=query, results=results, trace=trace)

    @classmethod
    def default(
        cls,
        store: Store,
        *,
        encoder: Encoder | None = None,
        method: str = "fusion",
        alpha: float = DEFAULT_ALPHA,
        pool: int = 500,
        k: int = 10,
        rerank: str | None = None,
        validity: str | None = "context",
        source_policy: str = "edges",
        admissibility: str = "annotate",
        unresolved: str = "surface",
    ) -> Pipeline:
        """The standard pipeline over ``store``; the encoder defaults to the store's model.

        ``rerank``: ``"v1"`` adds the learned reranker over the pool, ``"v2"`` also the
        cross-encoder over v1's top-10, ``"off"`` leaves both out; None (default) adds v1 when
        its packaged checkpoint fits the encoder and method, and v2 after it.
        ``validity``: ``"context"`` (default) annotates the top-k with the packaged verifier
        and keeps the ranking; ``"demote"`` (opt-in) also moves flagged results down;
        ``None`` / ``"off"`` leaves the layer out (with edges and the target gate it costs ~3 ms
        p50, ~40 ms p95 per query on 2 cores).
        ``source_policy``: ``"edges"`` (default: the sources of each result's write-time
        candidate edges), ``"top1"`` or ``"nearest"`` (see ``ValidityStage``).
        ``admissibility``: ``"annotate"`` (default), ``"enforce"`` or ``"off"``; ``unresolved``:
        ``"surface"`` (default) or ``"exclude"`` (see ``AdmissibilityStage``).
        """
        from memsieve.admissibility import AdmissibilityStage, Mode

        gate = AdmissibilityStage(admissibility, unresolved)  # checks both before any work
        if encoder is None:
            encoder = get_encoder(store.embedding_model() or "minilm")
        encoder = encoder if isinstance(encoder, MemoEncoder) else MemoEncoder(encoder)
        retriever = Retriever(store, encoder, method=method, alpha=alpha, pool=pool)
        stages: list[Stage] = [retriever]
        if rerank != "off":
            from memsieve.rerank.learned import default_reranker  # needs torch

            v1 = default_reranker(rerank, encoder=encoder, cache=retriever.cache, method=method)
            if v1 is not None:
                from memsieve.rerank.cross import default_cross_reranker

                v2 = default_cross_reranker(rerank)
                stages += [v1] + ([v2] if v2 is not None else [])
        if validity not in (None, "off"):
            from memsieve.validity.stage import ValidityStage
            from memsieve.validity.statement import packaged_gate
            from memsieve.validity.verifier import packaged_verifier

            verifier = packaged_verifier()
            stages.append(ValidityStage([verifier], mode=validity, store=store, top_k=k,
                                        cache=retriever.cache, source_policy=source_policy,
                                        target_gate=packaged_gate(encoder.name),
                                        **verifier.stage_thresholds(encoder.name)))
        if gate.mode is not Mode.off:
            stages.append(gate)
        return cls(stages, k=k, store=store)


def variant(pipeline: Pipeline, *, validity: str | None = None,
            admissibility: str | None = None, unresolved: str | None = None) -> Pipeline:
    """The same stages (models shared, nothing reloaded) with other validity / admissibility
    modes; None keeps a stage as it is. A validity mode other than off needs the pipeline to
    have a validity stage (its verifier is what is shared)."""
    import copy

    from memsieve.admissibility import AdmissibilityStage, Mode, Unresolved

    stages: list[Stage] = []
    has_validity = any(s.name == "validity" for s in pipeline.stages)
    if validity not in (None, "off") and not has_validity:
        raise ConfigError("validity is off in this pipeline; it cannot be turned on per query")
    gate: AdmissibilityStage | None = None
    for stage in pipeline.stages:
        if stage.name == "validity" and validity is not None:
            if validity == "off":
                continue
            from memsieve.validity.stage import ValidityMode

            try:
                mode = ValidityMode(validity)
            except ValueError:
                raise ConfigError(
                    f"validity must be off, context or demote, got {validity!r}") from None
            stage = copy.copy(stage)
            stage.mode = mode  # type: ignore[attr-defined]
        if isinstance(stage, AdmissibilityStage):
            gate = stage
            continue
        stages.append(stage)
    base_mode = gate.mode if gate is not None else Mode.off
    base_unresolved = gate.unresolved if gate is not None else Unresolved.surface
    gate = AdmissibilityStage(admissibility if admissibility is not None else base_mode,
                              unresolved if unresolved is not None else base_unresolved)
    if gate.mode is not Mode.off:
        stages.append(gate)
    return Pipeline(stages, k=pipeline.k, store=pipeline.store)


def _check_k(k: object) -> int:
    """``k`` must be a positive integer (0 is not "the default", -1 not "all but one")."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    return k
