"""The matched-recall route study on a small task with known vectors."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from memsieve.errors import ConfigError
from memsieve.eval.datasets import EvalQuery, EvalTask
from memsieve.eval.routes import route_study
from memsieve.types import Memory


def task_and_vectors():
    """Persona a: gold a0 (closest), a1; persona b holds two turns even closer to the query,
    and one dated after the question (never in any support)."""
    mems, vecs = [], []
    for mid, ns, day, v in [("a0", "a", 1, 0.9), ("a1", "a", 2, 0.5), ("a2", "a", 3, 0.1),
                            ("b0", "b", 1, 0.99), ("b1", "b", 2, 0.95), ("b2", "b", 9, 1.0)]:
        mems.append(Memory(id=mid, namespace=ns, text=mid, timestamp=datetime(2024, 1, day),
                           metadata={"date": f"2024-01-0{day}"}))
        vecs.append([v, 1.0])
    q = EvalQuery("q1", "question", "a", frozenset({"a0", "a1"}), frozenset(), "fact",
                  "2024-01-05")
    return (EvalTask("toy", mems, [q], {}), np.array(vecs, dtype=np.float32),
            {"question": np.array([1.0, 0.0], dtype=np.float32)})


def test_namespace_support_reaches_the_evidence_with_fewer_evaluations():
    task, vectors, qvecs = task_and_vectors()
    out = route_study(task, vectors, qvecs, k=3, tau=1.0)
    g, n = out["routes"]["global"], out["routes"]["namespace"]
    assert g["similarity_evals"] == 5 and n["similarity_evals"] == 3  # b2 is after the date
    assert g["recall@3"] == 0.5 and g["feasibility"] == 0.0 and g["loss"] == 1.0
    assert n["recall@3"] == 1.0 and n["feasibility"] == 1.0
    assert n["bounds"] == [0.0, 0.0] and n["coverage"] == 1.0
    out = route_study(task, vectors, qvecs, k=5, tau=1.0)
    g = out["routes"]["global"]  # prefix b0, b1, a0, a1: two scope violations in four
    assert g["feasibility"] == 1.0 and g["bounds"] == [0.5, 0.5]
    assert g["scope_violation"] == 0.5 and g["policy_violation"] == 0.0
    assert out["work_ratio"] == pytest.approx(5 / 3)


def test_hidden_labels_widen_the_bounds_and_leave_recall():
    task, vectors, qvecs = task_and_vectors()
    full = route_study(task, vectors, qvecs, k=5, tau=1.0)["routes"]["global"]
    hidden = route_study(task, vectors, qvecs, k=5, tau=1.0, hide=0.99)["routes"]["global"]
    assert hidden["recall@5"] == full["recall@5"]
    assert hidden["bounds"][0] <= full["bounds"][0] <= full["bounds"][1] <= hidden["bounds"][1]
    assert hidden["coverage"] < 1.0


def test_bad_route_or_tau_is_a_config_error():
    task, vectors, qvecs = task_and_vectors()
    with pytest.raises(ConfigError, match="routes"):
        route_study(task, vectors, qvecs, routes=["random"])
    with pytest.raises(ConfigError):
        route_study(task, vectors, qvecs, tau=0.0)
