"""Per-namespace search indexes (memories, dense matrix, BM25), cached against store revision."""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict

import numpy as np

from memsieve.errors import StoreError
from memsieve.retrieve.bm25 import BM25Index
from memsieve.store.base import Store
from memsieve.types import Memory


@dataclasses.dataclass(frozen=True)
class NamespaceIndex:
    """Everything first-stage retrieval needs for one namespace, aligned by position."""

    namespace: str
    revision: int
    memories: list[Memory]
    matrix: np.ndarray
    bm25: BM25Index

    @classmethod
    def build(cls, store: Store, namespace: str) -> NamespaceIndex:
        revision = store.revision(namespace)
        memories = store.list(namespace)
        ids, matrix = store.vectors(namespace)
        if len(ids) != len(memories):
            raise StoreError(
                f"namespace {namespace!r} has {len(memories) - len(ids)} memories without "
                "vectors; re-ingest them with an embedding model"
            )
        return cls(namespace, revision, memories, matrix, BM25Index([m.text for m in memories]))

    @functools.cached_property
    def rows(self) -> dict[str, int]:
        """Memory id → its row in ``memories`` and ``matrix`` (built on first use)."""
        return {m.id: i for i, m in enumerate(self.memories)}


class IndexCache:
    """A small LRU of NamespaceIndex objects; an entry is rebuilt when its revision moves on."""

    def __init__(self, store: Store, *, capacity: int = 8) -> None:
        self.store = store
        self.capacity = capacity
        self._entries: OrderedDict[str, NamespaceIndex] = OrderedDict()

    def get(self, namespace: str) -> NamespaceIndex:
        entry = self._entries.get(namespace)
        if entry is None or entry.revision != self.store.revision(namespace):
            entry = NamespaceIndex.build(self.store, namespace)
            self._entries[namespace] = entry
        self._entries.move_to_end(namespace)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return entry
