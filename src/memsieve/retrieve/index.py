"""The live per-namespace index: the searchable memories' vectors in store order, and the
postings of the terms queried so far, kept current by the store's deltas (never rebuilt from
all rows because one memory was added).

A term's postings are read from the store the first time a query uses it (``Store.postings``,
so a new process needs no BM25 build) and then follow the namespace's revisions like the dense
matrix: appends go to spare capacity, rewrites are done in place, removals compact the arrays,
and a delta's texts are analysed to update the postings held. Call ``IndexCache.get`` inside
``store.snapshot()`` so the index and the rest of the query read the same state.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from memsieve.retrieve.bm25 import Analyzer
from memsieve.store.base import Delta, Postings, Store, TermStats
from memsieve.types import Memory

RECORDS = 50_000  # Memory records an index keeps between queries


class NamespaceIndex:
    """One namespace's searchable memories (forgotten ones out), row ``i`` in store order.

    ``seqs`` (ascending), ``ids`` and ``matrix`` are aligned by row; ``revision`` is the
    namespace revision they reflect. Memory records are read from the store on first use.
    """

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.revision = 0
        self.seqs = np.zeros(0, dtype=np.int64)
        self.ids: list[str] = []
        self._buf = np.zeros((0, 0), dtype=np.float32)
        self._records: dict[int, Memory] = {}
        self._rows: dict[str, int] | None = None
        self._postings: dict[str, Postings] = {}  # terms queried so far, at ``revision``
        self._stats = (0, 0)  # (documents, total terms) at ``revision``
        self._analyzer: Analyzer | None = None
        #: what later stages derive from this index (e.g. the v1 features), by name: each
        #: ``follow(delta, index, store)``s the deltas; a full reload drops them
        self.followers: dict[str, Any] = {}

    @property
    def size(self) -> int:
        return len(self.seqs)

    @property
    def matrix(self) -> np.ndarray:
        """(size, d) float32 vectors of the searchable memories, in store order."""
        return self._buf[: self.size]

    @property
    def rows(self) -> dict[str, int]:
        """Memory id → its row (built on first use per revision)."""
        if self._rows is None:
            self._rows = {mid: i for i, mid in enumerate(self.ids)}
        return self._rows

    def refresh(self, store: Store) -> None:
        """Bring the index to the store's current revision of the namespace."""
        if store.revision(self.namespace) == self.revision:
            return
        delta = store.changes(self.namespace, self.revision)
        self.apply(delta)
        stats = store.postings(self.namespace, [])
        self._stats = (stats.n_docs, stats.n_terms)
        if delta.full:
            self.followers.clear()
        for follower in self.followers.values():
            follower.follow(delta, self, store)

    def term_stats(self, store: Store, terms: Sequence[str]) -> TermStats:
        """BM25 statistics and postings of ``terms``; unseen terms are read from the store."""
        missing = [t for t in dict.fromkeys(terms) if t not in self._postings]
        if missing:
            self._postings.update(store.postings(self.namespace, missing).postings)
            empty = np.zeros(0, dtype=np.int64)
            for t in missing:  # remember that a term has no postings too
                self._postings.setdefault(t, Postings(empty, empty.astype(float),
                                                      empty.astype(float)))
        return TermStats(*self._stats, {t: self._postings[t] for t in terms})

    def _update_postings(self, delta: Delta) -> None:
        """Drop the held postings of removed and rewritten memories, add the delta's."""
        if not self._postings:
            return
        touched = np.concatenate([delta.removed, delta.seqs])
        if self._analyzer is None:
            self._analyzer = Analyzer()
        added: dict[str, list[tuple[int, int, int]]] = {}
        for seq, tokens in zip(delta.seqs.tolist(), self._analyzer(delta.texts or []),
                               strict=True):
            for term, tf in Counter(tokens).items():
                if term in self._postings:
                    added.setdefault(term, []).append((seq, tf, len(tokens)))
        # the usual write only appends: no held posting can name a new seq, so only the
        # terms the new memories hold need a look
        appended = not len(delta.removed) and (
            not self.size or not len(delta.seqs) or int(delta.seqs[0]) > int(self.seqs[-1]))
        for term in list(added) if appended else list(self._postings):
            p = self._postings[term]
            keep = ~np.isin(p.seqs, touched) if len(touched) and len(p.seqs) else None
            if keep is not None and not keep.all():
                p = Postings(p.seqs[keep], p.tf[keep], p.dl[keep])
            if term in added:
                new = np.array(added[term], dtype=np.int64)
                seqs = np.concatenate([p.seqs, new[:, 0]])
                order = np.argsort(seqs, kind="stable")
                p = Postings(seqs[order], np.concatenate([p.tf, new[:, 1]])[order],
                             np.concatenate([p.dl, new[:, 2]])[order])
            self._postings[term] = p

    def apply(self, delta: Delta) -> None:
        """Apply a store delta (or load a full one)."""
        self._rows = None
        for seq in delta.removed.tolist():
            self._records.pop(seq, None)
        for seq in delta.seqs.tolist():
            self._records.pop(seq, None)
        if delta.full:
            self.seqs, self.ids = delta.seqs, list(delta.ids)
            self._buf = delta.vectors
            self._postings = {}
            self.revision = delta.revision
            return
        self._update_postings(delta)
        if len(delta.removed):
            keep = ~np.isin(self.seqs, delta.removed)
            self.seqs = self.seqs[keep]
            self.ids = [i for i, k in zip(self.ids, keep.tolist(), strict=True) if k]
            self._buf = np.ascontiguousarray(self._buf[: len(keep)][keep])
        if len(delta.seqs):
            self._merge(delta)
        self.revision = delta.revision

    def _merge(self, delta: Delta) -> None:
        pos = np.searchsorted(self.seqs, delta.seqs)
        clipped = np.minimum(pos, max(self.size - 1, 0))
        present = (pos < self.size) & (self.seqs[clipped] == delta.seqs) if self.size else (
            np.zeros(len(pos), dtype=bool))
        if present.any():  # rewrites keep their row
            self._buf[pos[present]] = delta.vectors[present]
            for row, mid in zip(pos[present].tolist(), np.asarray(delta.ids)[present].tolist(),
                                strict=True):
                self.ids[row] = mid
        new = ~present
        if not new.any():
            return
        seqs, vecs = delta.seqs[new], delta.vectors[new]
        ids = [i for i, n in zip(delta.ids, new.tolist(), strict=True) if n]
        n, d = self.size, vecs.shape[1]
        if self._buf.shape[1] != d:
            self._buf = np.zeros((0, d), dtype=np.float32)
        if n == 0 or seqs[0] > self.seqs[-1]:  # the usual case: appends at the end
            if n + len(seqs) > len(self._buf):
                grown = np.zeros((max(2 * (n + len(seqs)), 64), d), dtype=np.float32)
                grown[:n] = self._buf[:n]
                self._buf = grown
            self._buf[n : n + len(seqs)] = vecs
            self.seqs = np.concatenate([self.seqs, seqs])
            self.ids += ids
            return
        # a memory back in the searchable set (un-forgotten) lands inside: re-sort by seq
        all_seqs = np.concatenate([self.seqs, seqs])
        order = np.argsort(all_seqs, kind="stable")
        self._buf = np.ascontiguousarray(np.vstack([self._buf[:n], vecs])[order])
        self.seqs = all_seqs[order]
        self.ids = [(self.ids + ids)[i] for i in order.tolist()]

    def memories(self, store: Store, rows: Sequence[int]) -> list[Memory]:
        """The Memory records at these rows (read from the store once, then kept; the keep is
        emptied past ``RECORDS`` records so a process never holds a big namespace twice)."""
        seqs = self.seqs[np.asarray(rows, dtype=np.int64)].tolist()
        missing = [s for s in seqs if s not in self._records]
        if len(self._records) + len(missing) > RECORDS:
            self._records = {}
            missing = list(dict.fromkeys(seqs))
        if missing:
            for seq, m in zip(missing, store.fetch(self.namespace, missing), strict=True):
                self._records[seq] = m
        return [self._records[s] for s in seqs]

    def all_memories(self, store: Store) -> list[Memory]:
        """Every searchable memory, in row order."""
        return self.memories(store, range(self.size))


class IndexCache:
    """The live indexes of recently used namespaces (LRU); each follows its revisions."""

    def __init__(self, store: Store, *, capacity: int = 8) -> None:
        self.store = store
        self.capacity = capacity
        self._entries: OrderedDict[str, NamespaceIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, namespace: str) -> NamespaceIndex:
        """The namespace's index at the store's current revision (call inside a snapshot)."""
        with self._lock:
            entry = self._entries.get(namespace)
            if entry is None:
                entry = self._entries[namespace] = NamespaceIndex(namespace)
            entry.refresh(self.store)
            self._entries.move_to_end(namespace)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
            return entry
