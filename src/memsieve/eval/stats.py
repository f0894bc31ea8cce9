"""Uncertainty of per-query metric means: percentile bootstrap CIs and a paired bootstrap test.

Queries are the resampling unit. Everything is vectorised numpy and deterministic given the
seed (``np.random.default_rng(seed)``); resample indices are drawn in chunks so that memory
stays bounded (about ``_CHUNK_BYTES``) whatever the number of queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memsieve.errors import ConfigError

# Memory budget of one chunk: its int64 indices plus the float64 values gathered with them.
_CHUNK_BYTES = 64 * 2**20


def _as_values(values: np.ndarray | Sequence[float], name: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ConfigError(f"{name} must be a 1-D array of per-query values, got shape {arr.shape}")
    if arr.size == 0:
        raise ConfigError(f"{name} is empty: nothing to bootstrap")
    if not np.isfinite(arr).all():
        raise ConfigError(f"{name} contains NaN or infinite values")
    return arr


def _check(n_resamples: int, level: float) -> None:
    if n_resamples < 1:
        raise ConfigError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < level < 1.0:
        raise ConfigError(f"level must be strictly between 0 and 1, got {level}")


def _resampled_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement, same size) of ``values``."""
    n = values.size
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_BYTES // (16 * n))
    out = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[idx].mean(axis=1)
    return out


def _interval(means: np.ndarray, level: float) -> tuple[float, float]:
    alpha = 1.0 - level
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap_ci(
    values: np.ndarray | Sequence[float],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean, resampling queries.

    Args:
        values: per-query values (1-D, finite, non-empty).
        n_resamples: number of bootstrap resamples.
        seed: seed of ``np.random.default_rng``; same seed and input give the same interval.
        level: confidence level, e.g. 0.95 for the 2.5 and 97.5 percentiles.

    Returns:
        ``(lo, hi)``.

    Raises:
        ConfigError: bad values, ``n_resamples`` or ``level``.
    """
    arr = _as_values(values)
    _check(n_resamples, level)
    return _interval(_resampled_means(arr, n_resamples, seed), level)


def paired_bootstrap(
    a: np.ndarray | Sequence[float],
    b: np.ndarray | Sequence[float],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Paired bootstrap of the difference of means of two systems on the same queries.

    The same resampled query indices are applied to ``a`` and ``b`` (equivalently, the
    per-query differences ``a - b`` are resampled).

    Args:
        a: per-query values of system A.
        b: per-query values of system B, for the same queries in the same order.
        n_resamples: number of bootstrap resamples.
        seed: seed of ``np.random.default_rng``.
        level: confidence level of the interval stored under ``"ci95"`` (0.95 by default).

    Returns:
        ``{"diff": mean(a) - mean(b), "ci95": [lo, hi], "p": p}``. ``p`` is two-sided: the
        fraction of resampled differences on the other side of 0 from ``diff`` (0 included),
        times 2, capped at 1; it is 1 when ``diff`` is 0. Its resolution is ``2 / n_resamples``,
        so ``p == 0`` means ``p < 1 / n_resamples``.

    Raises:
        ConfigError: arrays of different lengths, bad values, ``n_resamples`` or ``level``.
    """
    arr_a = _as_values(a, "a")
    arr_b = _as_values(b, "b")
    if arr_a.shape != arr_b.shape:
        raise ConfigError(
            f"paired arrays must have the same length, got {arr_a.size} and {arr_b.size}"
        )
    _check(n_resamples, level)
    d = arr_a - arr_b
    diff = float(d.mean())
    means = _resampled_means(d, n_resamples, seed)
    lo, hi = _interval(means, level)
    if diff > 0:
        p = 2.0 * float(np.mean(means <= 0.0))
    elif diff < 0:
        p = 2.0 * float(np.mean(means >= 0.0))
    else:
        p = 1.0
    return {"diff": diff, "ci95": [lo, hi], "p": min(1.0, p)}


def mean_std(values_per_seed: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation (``ddof=0``) of a metric over seeds.

    Raises:
        ConfigError: no values.
    """
    arr = np.asarray(values_per_seed, dtype=np.float64)
    if arr.size == 0:
        raise ConfigError("mean_std needs at least one value")
    return float(arr.mean()), float(arr.std(ddof=0))
