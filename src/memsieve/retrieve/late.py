"""Late interaction at session level: a session's score is its best turn's (max-sim).

``top-k`` pooling (the mean of a session's k best turns) is the option the pooling ablation of
the fusion paper found as good as max; ``k=1`` is max.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def session_scores(
    turn_scores: np.ndarray, session_ids: Sequence[str | None], *, top_k: int = 1
) -> dict[str, float]:
    """Pool turn scores into one score per session (mean of the top_k best turns)."""
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    groups: dict[str, list[float]] = {}
    for score, sid in zip(np.asarray(turn_scores, dtype=np.float64), session_ids, strict=True):
        groups.setdefault(sid if sid is not None else "", []).append(float(score))
    pooled = {}
    for sid, values in groups.items():
        best = sorted(values, reverse=True)[:top_k]
        pooled[sid] = sum(best) / len(best)
    return pooled
