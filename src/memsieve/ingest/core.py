"""Ingest: validate every memory, encode the batch once, write it in one transaction.

Vectors are computed here, at ingest, and stored; queries reuse them. Reading and validating
the whole input before anything is written means a bad line leaves the store untouched.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

from memsieve.embed import Encoder
from memsieve.store.base import Store
from memsieve.types import Memory
from memsieve.validity.edges import Reader, batch_edges, default_judge, stored


@dataclasses.dataclass(frozen=True)
class IngestReport:
    """What an ingest did and how fast."""

    memories: int
    namespaces: int
    read_s: float
    encode_s: float
    write_s: float

    @property
    def seconds(self) -> float:
        return self.read_s + self.encode_s + self.write_s

    @property
    def turns_per_s(self) -> float:
        return self.memories / self.seconds if self.seconds > 0 else float("inf")

    def summary(self) -> str:
        return (
            f"ingested {self.memories} memories into {self.namespaces} namespace(s) in "
            f"{self.seconds:.1f} s ({self.turns_per_s:.0f} turns/s; encode {self.encode_s:.1f} s, "
            f"write {self.write_s:.1f} s)"
        )


@dataclasses.dataclass(frozen=True)
class Encoded:
    """A validated batch and its vectors, ready for one ``Store.add``."""

    memories: list[Memory]
    vectors: object  # (n, d) float32 ndarray
    model: str
    read_s: float
    encode_s: float

    def write(self, store: Store, *, earlier: Reader | None = None) -> IngestReport:
        """Add the batch to ``store`` in one transaction, with the validity layer's write-time
        candidate edges (``validity/edges.py``; ``earlier`` reads what a namespace already
        holds, from the store by default), and report what it took."""
        t0 = time.perf_counter()
        edges = batch_edges(self.memories, self.vectors, earlier or stored(store),
                            judge=default_judge(self.model))
        n = store.add(self.memories, vectors=self.vectors, model=self.model, edges=edges)
        return IngestReport(n, len({m.namespace for m in self.memories}), self.read_s,
                            self.encode_s, time.perf_counter() - t0)


def encode_memories(
    memories: Iterable[Memory], encoder: Encoder, *, progress: bool = False
) -> Encoded:
    """Read (validating every record) and encode a batch before anything is written."""
    t0 = time.perf_counter()
    batch = list(memories)
    t1 = time.perf_counter()
    vectors = encoder.encode([m.text for m in batch], progress=progress)
    return Encoded(batch, vectors, encoder.name, t1 - t0, time.perf_counter() - t1)


def add_memories(
    store: Store, memories: Iterable[Memory], encoder: Encoder, *, progress: bool = False
) -> IngestReport:
    """Encode ``memories`` with ``encoder`` and add them to ``store`` atomically."""
    return encode_memories(memories, encoder, progress=progress).write(store)
