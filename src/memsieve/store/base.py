"""The Store protocol every backend implements."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memsieve.types import Memory, State


@runtime_checkable
class Store(Protocol):
    """Memories, their vectors and lifecycle state, partitioned by namespace.

    Required: every method below. A batch ``add`` is atomic (a failure writes nothing);
    ``revision(ns)`` changes whenever anything in the namespace changes, so derived indexes
    (BM25, dense matrices) can be cached against it.
    """

    def add(
        self,
        memories: Sequence[Memory],
        *,
        vectors: np.ndarray | None = None,
        model: str | None = None,
    ) -> int: ...

    def get(self, memory_id: str) -> Memory: ...

    def list(self, namespace: str) -> list[Memory]: ...

    def namespaces(self) -> list[str]: ...

    def count(self, namespace: str | None = None) -> int: ...

    def vectors(self, namespace: str) -> tuple[list[str], np.ndarray]: ...

    def embedding_model(self) -> str | None: ...

    def set_state(self, memory_id: str, state: State) -> None: ...

    def forget(self, memory_id: str) -> None: ...

    def purge(self, memory_ids: Iterable[str]) -> int: ...

    def revision(self, namespace: str) -> int: ...

    def close(self) -> None: ...
