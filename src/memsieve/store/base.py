"""The Store protocol every backend implements, and the values it hands the live index."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from memsieve.errors import ConfigError
from memsieve.types import Memory, State

if TYPE_CHECKING:
    from memsieve.validity.edges import Edge


@dataclasses.dataclass(frozen=True)
class Postings:
    """One term's postings in a namespace: memory seqs (ascending), term frequencies, lengths."""

    seqs: np.ndarray
    tf: np.ndarray
    dl: np.ndarray


@dataclasses.dataclass(frozen=True)
class TermStats:
    """What BM25 needs of a namespace for one query: its statistics and each term's postings."""

    n_docs: int
    n_terms: int
    postings: dict[str, Postings]


@dataclasses.dataclass(frozen=True)
class Delta:
    """What changed in a namespace's searchable set between two revisions.

    ``seqs`` (ascending) are memories added or rewritten since, with their ``ids``,
    ``vectors`` (a zero row where a memory has none) and, for a change (not a full load), their
    ``texts``, so a reader can update the postings it keeps; ``removed`` are seqs no longer
    searchable (purged, or forgotten). ``full`` means the delta is the whole set.
    """

    revision: int
    full: bool
    seqs: np.ndarray
    ids: list[str]
    vectors: np.ndarray
    removed: np.ndarray
    texts: list[str] | None = None


PURGED = "<purged>"  # what a purged memory's id becomes in the exposure log


@dataclasses.dataclass(frozen=True)
class Exposure:
    """What reached one prompt: memory ids in prompt order, and the ids kept out with their
    reasons. Never memory text. ``id`` and ``time`` are set by the store when recorded."""

    namespace: str
    query: str
    mode: str
    memory_ids: list[str]
    excluded: list[tuple[str, str]]
    detail: dict = dataclasses.field(default_factory=dict)
    id: int | None = None
    time: str | None = None

    def to_dict(self) -> dict:
        return {**self.detail, "id": self.id, "time": self.time, "namespace": self.namespace,
                "query": self.query, "mode": self.mode, "memory_ids": list(self.memory_ids),
                "excluded": [{"memory_id": m, "reason": r} for m, r in self.excluded]}


@dataclasses.dataclass(frozen=True)
class Erasure:
    """One purge as the audit keeps it: when, where, how many (never which)."""

    id: int
    time: str
    namespace: str
    count: int


@runtime_checkable
class Store(Protocol):
    """Memories, their vectors, lexical postings and lifecycle state, partitioned by namespace.

    A memory is identified by (namespace, id). Every write is one transaction that checks and
    writes together and bumps the namespace's ``revision``; a batch ``add`` is atomic.
    ``snapshot()`` makes the reads inside it see one consistent state while other processes
    commit. Forgotten memories stay (for the audit trail) but leave the searchable set at once.
    """

    def add(
        self,
        memories: Sequence[Memory],
        *,
        vectors: np.ndarray | None = None,
        model: str | None = None,
        edges: Mapping[str, Sequence[Edge]] | None = None,
    ) -> int: ...

    def get(self, namespace: str, memory_id: str) -> Memory: ...

    def list(self, namespace: str) -> list[Memory]: ...

    def page(
        self, namespace: str, *, after: int = 0, limit: int = 100
    ) -> tuple[list[Memory], int | None]: ...

    def namespaces(self) -> list[str]: ...

    def count(self, namespace: str | None = None) -> int: ...

    def vectors(self, namespace: str) -> tuple[list[str], np.ndarray]: ...

    def embedding_model(self) -> str | None: ...

    def set_state(self, namespace: str, memory_id: str, state: State | str) -> None: ...

    def set_states(
        self, namespace: str, memory_ids: Iterable[str], state: State | str
    ) -> None: ...

    def forget(self, namespace: str, memory_id: str) -> None: ...

    def purge(self, namespace: str, memory_ids: Iterable[str]) -> int: ...

    def revision(self, namespace: str) -> int: ...

    def snapshot(self) -> AbstractContextManager[None]: ...

    def changes(self, namespace: str, since: int) -> Delta: ...

    def postings(self, namespace: str, terms: Sequence[str]) -> TermStats: ...

    def fetch(self, namespace: str, seqs: Sequence[int]) -> list[Memory]: ...

    def units(self, namespace: str, memory_ids: Sequence[str]) -> dict[str, list[str]]: ...

    def neighbours(
        self, namespace: str, memory_ids: Sequence[str], window: int = 1
    ) -> dict[str, list[Memory]]: ...

    def edges(self, namespace: str, target_ids: Sequence[str]) -> dict[str, list[Edge]]: ...

    def edges_from(self, namespace: str, source_ids: Sequence[str]) -> list[Edge]: ...

    def set_edges(self, namespace: str, edges: Sequence[Edge]) -> None: ...

    def record_exposure(self, exposure: Exposure) -> Exposure: ...

    def exposures(
        self, namespace: str | None = None, memory_id: str | None = None, *, limit: int = 100
    ) -> list[Exposure]: ...

    def erasures(self, namespace: str | None = None) -> list[Erasure]: ...

    def close(self) -> None: ...


def id_list(memory_ids: Iterable[str]) -> list[str]:
    """Distinct ids in order; a bare string is refused (``purge("12")`` is not ids "1", "2")."""
    if isinstance(memory_ids, str | bytes):
        raise TypeError("memory_ids must be a list of ids, not a single string")
    ids = list(dict.fromkeys(memory_ids))
    bad = [i for i in ids if not isinstance(i, str) or not i]
    if bad:
        raise ConfigError(f"memory ids must be non-empty strings, got {bad[0]!r}")
    return ids


def chunks(items: Sequence, size: int = 500) -> Iterator[Sequence]:
    """``items`` in slices of at most ``size`` (SQL parameter lists stay bounded)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
