"""Score-level fusion of dense and BM25 scores (retrieval-reranking-abstracts, first abstract).

Each score vector is normalised per query (min-max over the namespace), then
``fused = alpha * dense + (1 - alpha) * bm25``. Reciprocal-rank fusion is the option that needs
no weight: ``rrf(d) = sum_i 1 / (k + rank_i(d))`` (Cormack et al., SIGIR 2009).
"""

from __future__ import annotations

import numpy as np


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] per query; a constant vector becomes all zeros (it ranks nothing)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo <= 1e-12:
        return np.zeros_like(scores)
    return (scores - lo) / (hi - lo)


def fuse(dense: np.ndarray, bm25: np.ndarray, alpha: float) -> np.ndarray:
    """Weighted sum of min-max-normalised dense and BM25 scores; alpha=1 is dense only."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    return alpha * minmax(dense) + (1.0 - alpha) * minmax(bm25)


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each item by descending score (ties broken by position)."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    r = np.empty(len(order), dtype=np.int64)
    r[order] = np.arange(1, len(order) + 1)
    return r


def rrf(*score_lists: np.ndarray, k: int = 60) -> np.ndarray:
    """Reciprocal-rank fusion of several score vectors over the same items."""
    total = np.zeros(len(score_lists[0]), dtype=np.float64)
    for scores in score_lists:
        total += 1.0 / (k + ranks(scores))
    return total
