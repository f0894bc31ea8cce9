"""Fusion maths on hand-checkable vectors."""

from __future__ import annotations

import numpy as np
import pytest

from memsieve.retrieve import fuse, minmax, rrf, session_scores


def test_minmax():
    assert np.allclose(minmax(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    assert np.allclose(minmax(np.array([5.0, 5.0])), [0.0, 0.0])  # constant ranks nothing


def test_fuse_weighted_sum_of_normalised_scores():
    dense = np.array([0.2, 0.6, 0.4])  # -> [0, 1, .5]
    bm25 = np.array([3.0, 0.0, 6.0])  # -> [.5, 0, 1]
    out = fuse(dense, bm25, alpha=0.25)
    assert np.allclose(out, [0.25 * 0 + 0.75 * 0.5, 0.25 * 1 + 0.75 * 0, 0.25 * 0.5 + 0.75 * 1])
    assert np.allclose(fuse(dense, bm25, 1.0), minmax(dense))
    assert np.allclose(fuse(dense, bm25, 0.0), minmax(bm25))
    with pytest.raises(ValueError, match="alpha"):
        fuse(dense, bm25, 1.5)


def test_rrf_matches_formula():
    a = np.array([0.9, 0.5, 0.1])  # ranks 1, 2, 3
    b = np.array([0.1, 0.2, 0.3])  # ranks 3, 2, 1
    out = rrf(a, b, k=60)
    assert out[0] == pytest.approx(1 / (60 + 1) + 1 / (60 + 3))
    assert out[1] == pytest.approx(1 / (60 + 2) + 1 / (60 + 2))
    assert out[2] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))


def test_session_late_interaction_max_and_topk():
    scores = np.array([0.1, 0.9, 0.3, 0.5, 0.4])
    sessions = ["s1", "s1", "s2", "s2", "s2"]
    assert session_scores(scores, sessions) == {"s1": 0.9, "s2": 0.5}
    pooled = session_scores(scores, sessions, top_k=2)
    assert pooled["s1"] == pytest.approx((0.9 + 0.1) / 2)
    assert pooled["s2"] == pytest.approx((0.5 + 0.4) / 2)
    with pytest.raises(ValueError):
        session_scores(scores, sessions, top_k=0)
