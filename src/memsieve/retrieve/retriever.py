"""The first stage: BM25, dense exact search, or their fusion, over the query's namespace only."""

from __future__ import annotations

import enum
from types import MappingProxyType

import numpy as np

from memsieve.embed import Encoder
from memsieve.errors import ConfigError
from memsieve.retrieve.bm25 import Analyzer, score_postings
from memsieve.retrieve.fusion import fuse, minmax, rrf
from memsieve.retrieve.index import IndexCache, NamespaceIndex
from memsieve.store.base import Store
from memsieve.trace import Trace
from memsieve.types import Candidate, Query

# Fitted on LoCoMo conversations by leave-one-conversation-out (benchmarks/RESULTS.md);
# the eval harness refits it on each split's train half and never uses this value.
DEFAULT_ALPHA = 0.5


def _proxy(names: list[str], row: tuple[float, ...]) -> MappingProxyType:
    return MappingProxyType(dict(zip(names, row, strict=True)))


def select_pool(key: np.ndarray, pool: int) -> np.ndarray:
    """Indices of the ``pool`` best scores, by score descending then position (deterministic)."""
    n = min(pool, len(key))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n < len(key):
        cut = np.partition(key, len(key) - n)[len(key) - n]  # the n-th largest score
        above = np.flatnonzero(key > cut)
        ties = np.flatnonzero(key == cut)[: n - len(above)]  # ties at the cut: by position
        top = np.concatenate([above, ties])
    else:
        top = np.arange(len(key))
    return top[np.lexsort((top, -key[top]))]


class Method(enum.StrEnum):
    bm25 = "bm25"
    dense = "dense"
    fusion = "fusion"
    rrf = "rrf"


class Retriever:
    """Stage 2: score every memory of the namespace, keep the ``pool`` best as candidates.

    Each candidate carries ``dense``, ``bm25`` (raw) and ``fused`` (the ranking key) scores.
    The namespace is the support: memories of other namespaces are never scored.
    """

    name = "retrieve"

    def __init__(
        self,
        store: Store,
        encoder: Encoder,
        *,
        method: Method | str = Method.fusion,
        alpha: float = DEFAULT_ALPHA,
        pool: int = 500,
        rrf_k: int = 60,
        cache: IndexCache | None = None,
    ) -> None:
        try:
            self.method = Method(method)
        except ValueError:
            raise ConfigError(
                f"unknown retrieval method {method!r}; choose one of {[m.value for m in Method]}"
            ) from None
        if not 0.0 <= alpha <= 1.0:
            raise ConfigError(f"alpha must be in [0, 1], got {alpha}")
        if pool < 1:
            raise ConfigError(f"pool must be >= 1, got {pool}")
        stored = store.embedding_model()
        if stored is not None and stored != encoder.name:
            raise ConfigError(
                f"the store holds {stored!r} vectors but the query encoder is {encoder.name!r}"
            )
        self.store, self.encoder = store, encoder
        self.alpha, self.pool, self.rrf_k = alpha, pool, rrf_k
        self.cache = cache or IndexCache(store)
        self.analyzer = Analyzer()

    def score(self, query: Query, index: NamespaceIndex, trace: Trace) -> dict[str, np.ndarray]:
        """Raw dense and BM25 scores and the ranking key for every memory of the namespace."""
        out: dict[str, np.ndarray] = {}
        if self.method is not Method.bm25:
            with trace.timed("encode_query"):
                qvec = self.encoder.encode([query.text])[0]
            with trace.timed("dense"):
                matrix = index.matrix
                out["dense"] = (matrix @ qvec if matrix.shape[1] == len(qvec)
                                else np.zeros(index.size, dtype=np.float32))
        if self.method is not Method.dense:
            with trace.timed("bm25"):
                terms = self.analyzer([query.text])[0]
                stats = index.term_stats(self.store, terms)
                out["bm25"] = score_postings(stats, terms, index.seqs)
        with trace.timed("fuse"):
            if self.method is Method.bm25:
                out["fused"] = out["bm25"]
            elif self.method is Method.dense:
                out["fused"] = out["dense"].astype(np.float64)
            elif self.method is Method.fusion:
                out["fused"] = fuse(out["dense"], out["bm25"], self.alpha)
            else:
                out["fused"] = rrf(out["dense"], out["bm25"], k=self.rrf_k)
        return out

    def __call__(
        self, query: Query, candidates: list[Candidate], *, trace: Trace
    ) -> list[Candidate]:
        with self.store.snapshot():
            with trace.timed("load_index"):
                index = self.cache.get(query.namespace)
            if index.size == 0:
                return []  # unknown or empty namespace: nothing to retrieve, not an error
            scores = self.score(query, index, trace)
            with trace.timed("pool"):
                key = scores["fused"]
                top = select_pool(key, self.pool)
                # Gather each score column for the pool once (numpy), then build the candidates.
                columns = {name: values[top].tolist() for name, values in scores.items()}
                for name in [n for n in scores if n != "fused"]:
                    columns[f"{name}_norm"] = minmax(scores[name])[top].tolist()
                names = list(columns)
                rows = zip(*(columns[n] for n in names), strict=True)
                memories = index.memories(self.store, top)
                return [
                    Candidate(m, k, _proxy(names, row))
                    for m, k, row in zip(memories, columns["fused"], rows, strict=True)
                ]
