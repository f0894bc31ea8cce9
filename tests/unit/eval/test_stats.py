"""Bootstrap confidence intervals, the paired bootstrap test and mean/std over seeds."""

from __future__ import annotations

import numpy as np
import pytest

from memsieve.errors import ConfigError
from memsieve.eval import stats
from memsieve.eval.stats import bootstrap_ci, mean_std, paired_bootstrap


def _values(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).random(n)


def test_ci_contains_the_mean() -> None:
    v = _values(200)
    lo, hi = bootstrap_ci(v, n_resamples=2000)
    assert isinstance(lo, float) and isinstance(hi, float)
    assert lo < v.mean() < hi


def test_ci_width_shrinks_with_n() -> None:
    small = bootstrap_ci(_values(50), n_resamples=2000)
    large = bootstrap_ci(_values(5000), n_resamples=2000)
    # The width scales like 1 / sqrt(n): 10x narrower here; allow slack.
    assert (large[1] - large[0]) < (small[1] - small[0]) / 5


def test_ci_is_deterministic_for_a_seed() -> None:
    v = _values(300)
    assert bootstrap_ci(v, seed=3, n_resamples=1000) == bootstrap_ci(v, seed=3, n_resamples=1000)
    assert bootstrap_ci(v, seed=3, n_resamples=1000) != bootstrap_ci(v, seed=4, n_resamples=1000)


def test_ci_level_and_constant_values() -> None:
    v = _values(300)
    lo90, hi90 = bootstrap_ci(v, level=0.90, n_resamples=2000)
    lo99, hi99 = bootstrap_ci(v, level=0.99, n_resamples=2000)
    assert lo99 < lo90 < hi90 < hi99
    assert bootstrap_ci(np.full(10, 0.5), n_resamples=100) == (0.5, 0.5)


def test_chunking_does_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    v = _values(100)
    whole = bootstrap_ci(v, n_resamples=1001)
    monkeypatch.setattr(stats, "_CHUNK_BYTES", 16 * 100 * 7)  # chunks of 7 resamples
    assert bootstrap_ci(v, n_resamples=1001) == whole


def test_paired_identical_arrays() -> None:
    v = _values(100)
    res = paired_bootstrap(v, v.copy(), n_resamples=1000)
    assert res == {"diff": 0.0, "ci95": [0.0, 0.0], "p": 1.0}


def test_paired_clearly_better() -> None:
    b = _values(200, seed=2)
    a = b + 0.1 + 0.05 * np.random.default_rng(5).standard_normal(200)
    res = paired_bootstrap(a, b, n_resamples=2000)
    assert res["diff"] == pytest.approx(float(a.mean() - b.mean()))
    lo, hi = res["ci95"]
    assert 0 < lo < res["diff"] < hi
    assert res["p"] < 0.01
    rev = paired_bootstrap(b, a, n_resamples=2000)
    assert rev["diff"] == pytest.approx(-res["diff"]) and rev["p"] < 0.01
    assert rev["ci95"][1] < 0


def test_paired_no_difference_has_a_large_p() -> None:
    a = _values(200, seed=8)
    b = a + np.where(np.arange(200) % 2 == 0, 0.1, -0.1)  # mean difference exactly 0
    res = paired_bootstrap(a, b, n_resamples=1000)
    assert res["diff"] == pytest.approx(0.0, abs=1e-12)
    assert res["p"] > 0.5
    assert res["ci95"][0] < 0 < res["ci95"][1]


def test_paired_is_deterministic_and_pairs_queries() -> None:
    a, b = _values(150, seed=3), _values(150, seed=4)
    assert paired_bootstrap(a, b, seed=9, n_resamples=500) == paired_bootstrap(
        a, b, seed=9, n_resamples=500
    )
    # Paired: the same as bootstrapping the per-query differences a - b.
    res = paired_bootstrap(a, b, seed=9, n_resamples=500)
    assert res["ci95"] == list(bootstrap_ci(a - b, seed=9, n_resamples=500))


def test_errors() -> None:
    with pytest.raises(ConfigError):
        bootstrap_ci(np.array([]))
    with pytest.raises(ConfigError):
        bootstrap_ci(np.array([0.1, np.nan]))
    with pytest.raises(ConfigError):
        bootstrap_ci(np.ones((2, 2)))
    with pytest.raises(ConfigError):
        bootstrap_ci(np.ones(3), level=1.0)
    with pytest.raises(ConfigError):
        bootstrap_ci(np.ones(3), n_resamples=0)
    with pytest.raises(ConfigError, match="same length"):
        paired_bootstrap(np.ones(3), np.ones(4))
    with pytest.raises(ConfigError):
        mean_std([])


def test_mean_std_is_population_std() -> None:
    m, s = mean_std([1.0, 2.0, 3.0])
    assert m == pytest.approx(2.0)
    assert s == pytest.approx((2 / 3) ** 0.5)  # ddof=0
    assert mean_std([0.4]) == (0.4, 0.0)
