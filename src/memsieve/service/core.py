"""One object the REST app and the MCP server both call: the library's operations over one
store, with the models loaded once and every call serialised (safe under concurrent requests).

Namespaces are never checked here: the REST app checks them against the caller's key, the MCP
server fixes one at start-up. What comes back is plain JSON-ready data, the CLI's shapes.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from memsieve.assemble import Assembler
from memsieve.embed import Encoder, MemoEncoder, get_encoder
from memsieve.errors import ConfigError
from memsieve.ingest.core import encode_memories
from memsieve.ingest.jsonl import to_memory
from memsieve.pipeline import Pipeline, variant
from memsieve.store.base import Store
from memsieve.types import Memory, Query, parse
from memsieve.validity.edges import cached

MAX_BATCH = 1000  # memories in one add; more is refused (413 over HTTP)


class MemoryService:
    """add / get / page / search / context / forget / audit over one store."""

    def __init__(self, store: Store, *, encoder: Encoder | None = None, rerank: str | None = None,
                 validity: str = "context") -> None:
        self.store = store
        if encoder is None:
            encoder = get_encoder(store.embedding_model() or "minilm")
        self.encoder = encoder if isinstance(encoder, MemoEncoder) else MemoEncoder(encoder)
        self.pipeline = Pipeline.default(store, encoder=self.encoder, rerank=rerank,
                                         validity=validity)
        self._variants: dict[tuple, Pipeline] = {}
        self._assemblers: dict[tuple, Assembler] = {}
        self._lock = threading.Lock()

    # -- writes --------------------------------------------------------------------------

    def add(self, items: Sequence[Mapping[str, Any]]) -> dict:
        """Validate, embed and add a batch atomically; an item without an id gets the
        content id (namespace + text), as ``ingest jsonl`` does."""
        if len(items) > MAX_BATCH:
            raise BatchTooLarge(f"at most {MAX_BATCH} memories per batch, got {len(items)}")
        memories = [to_memory(item, f"memories[{i}]: ") for i, item in enumerate(items)]
        with self._lock:
            encoded = encode_memories(memories, self.encoder)
            encoded.write(self.store, earlier=cached(self.pipeline.stages[0].cache))
        return {"added": len(memories), "ids": [m.id for m in memories]}

    def forget(self, namespace: str, memory_id: str, *, purge: bool = False) -> dict:
        with self._lock:
            if purge:
                if not self.store.purge(namespace, [memory_id]):
                    self.store.get(namespace, memory_id)  # NotFound, the same message
                return {"purged": memory_id}
            self.store.forget(namespace, memory_id)
            return {"forgotten": memory_id}

    # -- reads ---------------------------------------------------------------------------

    def get(self, namespace: str, memory_id: str) -> dict:
        with self._lock:
            return memory_dict(self.store.get(namespace, memory_id))

    def page(self, namespace: str, *, cursor: str | None = None, limit: int = 100) -> dict:
        after = _cursor(cursor)
        if not 1 <= limit <= MAX_BATCH:
            raise ConfigError(f"limit must be between 1 and {MAX_BATCH}, got {limit}")
        with self._lock:
            memories, nxt = self.store.page(namespace, after=after, limit=limit)
        return {"memories": [memory_dict(m) for m in memories],
                "next_cursor": str(nxt) if nxt is not None else None}

    def search(self, request: Mapping[str, Any]) -> dict:
        """``{"query", "namespace", "k"?, "intent"?, "policy"?, "validity"?, "admissibility"?,
        "unresolved"?}`` → the CLI's search JSON."""
        query, k, modes = self._prepare(request, ("k",))
        with self._lock:
            return self._variant(modes).run(query, k=k).to_dict()

    def context(self, request: Mapping[str, Any]) -> dict:
        """``{"query", "namespace", "mode"?, "budget"?, "intent"?, "policy"?, ...}`` → the
        CLI's context JSON; the exposure is recorded."""
        opts = dict(request)
        opts.setdefault("admissibility", "enforce")
        mode, budget = opts.pop("mode", "auto"), opts.pop("budget", 600)
        query, _, modes = self._prepare(opts, ())
        with self._lock:
            if modes not in self._assemblers:
                self._assemblers[modes] = Assembler(self._variant(modes))
            return self._assemblers[modes](query, mode=mode, budget=budget).to_dict()

    def exposures(self, namespace: str, *, memory_id: str | None = None,
                  limit: int = 100) -> list[dict]:
        with self._lock:
            return [e.to_dict() for e in self.store.exposures(namespace, memory_id,
                                                                limit=limit)]

    def _prepare(self, request: Mapping[str, Any], extra: tuple[str, ...]):
        data = dict(request)
        if not isinstance(data.get("query"), str):
            raise ConfigError("query: a string is required")
        modes = {name: data.pop(name, None) for name in ("validity", "admissibility",
                                                           "unresolved")}
        found = {name: data.pop(name) for name in extra if name in data}
        query = parse(Query, {"text": data.pop("query"), **data})
        k = found.get("k")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ConfigError("k: must be a positive integer")
        return query, k, tuple(modes.items())

    def _variant(self, modes: tuple) -> Pipeline:
        """The pipeline with these per-request modes (built once, sharing the models)."""
        if modes not in self._variants:
            self._variants[modes] = variant(self.pipeline, **dict(modes))
        return self._variants[modes]


class BatchTooLarge(ConfigError):
    """A request larger than the service takes (HTTP 413)."""


def memory_dict(m: Memory) -> dict:
    return m.model_dump(mode="json")


def _cursor(cursor: str | None) -> int:
    if cursor in (None, ""):
        return 0
    try:
        value = int(cursor)
    except ValueError:
        raise ConfigError(f"cursor: not a cursor this service gave out: {cursor!r}") from None
    if value < 0:
        raise ConfigError("cursor: must not be negative")
    return value
