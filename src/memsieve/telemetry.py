"""OpenTelemetry spans in the GenAI semantic conventions' memory shape (optional extra).

With ``pip install 'memsieve[otel]'`` and a tracer provider configured by the application, each
search and each assembled context emits one ``search_memory`` span: the namespace as
``gen_ai.memory.store.id``, the returned record ids and scores in ``gen_ai.memory.records``
(without content: record content and the query text are opt-in in the conventions, and
memsieve never puts memory text in telemetry). Without the extra, or without a configured
provider, nothing is emitted and nothing is paid for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any


@cache
def _tracer() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    from memsieve import __version__

    return trace.get_tracer("memsieve", __version__)


class MemorySpan:
    """The open span, to which the operation adds what it returned."""

    def __init__(self, span: Any) -> None:
        self._span = span

    def records(self, ids: Sequence[str], scores: Sequence[float] | None = None) -> None:
        """The ids (and scores) that reached the caller, in order."""
        if self._span is None:
            return
        if scores is None:
            rows = [{"id": i} for i in ids]
        else:
            rows = [{"id": i, "score": round(float(s), 6)} for i, s in zip(ids, scores,
                                                                              strict=True)]
        self._span.set_attribute("gen_ai.memory.record.count", len(rows))
        self._span.set_attribute("gen_ai.memory.records", json.dumps(rows))
        self._span.set_attribute("memsieve.record.ids", list(ids))

    def set(self, name: str, value: Any) -> None:
        if self._span is not None:
            self._span.set_attribute(name, value)


@contextmanager
def memory_span(namespace: str, operation: str) -> Iterator[MemorySpan]:
    """A ``search_memory`` span around one search (``operation`` "search") or context."""
    tracer = _tracer()
    if tracer is None:
        yield MemorySpan(None)
        return
    attributes = {
        "gen_ai.operation.name": "search_memory",
        "gen_ai.provider.name": "memsieve",
        "gen_ai.memory.store.id": namespace,
        "memsieve.operation": operation,
    }
    with tracer.start_as_current_span("search_memory", attributes=attributes) as span:
        yield MemorySpan(span if span.is_recording() else None)
