"""ranx-backed metrics cross-checked against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsieve.errors import ConfigError
from memsieve.eval.metrics import METRICS, mean, parse_metrics, per_query, ranx_name

L2 = math.log2

# Query ids are inserted out of sorted order on purpose: results follow sorted(qrels).
QRELS = {
    "q2": {"g3", "g4"},  # first gold at rank 3; 1 of 2 gold retrieved
    "q1": {"g1", "g2"},  # gold at ranks 1 and 4
    "q3": {"g5"},  # gold at rank 2
    "q5": {"g7"},  # empty run
    "q4": {"g6"},  # gold not retrieved
    "q6": {"g8"},  # missing from the run
}
RUN = {
    "q1": [("g1", 0.9), ("x1", 0.8), ("x2", 0.7), ("g2", 0.6), ("x3", 0.5)],
    "q2": [("x1", 0.9), ("x2", 0.8), ("g3", 0.7), ("x3", 0.6)],
    "q3": {"x1": 0.9, "g5": 0.8},
    "q4": [("x1", 0.9), ("x2", 0.8)],
    "q5": [],
    "q9": [("g1", 1.0)],  # not in the qrels: ignored
}
IDCG2 = 1 + 1 / L2(3)  # two gold documents at ranks 1 and 2
EXPECTED = {  # in the order q1, q2, q3, q4, q5, q6
    "R@10": [2 / 2, 1 / 2, 1 / 1, 0, 0, 0],
    "H@1": [1, 0, 0, 0, 0, 0],
    "H@5": [1, 1, 1, 0, 0, 0],
    "MRR": [1 / 1, 1 / 3, 1 / 2, 0, 0, 0],
    "NDCG@5": [(1 + 1 / L2(5)) / IDCG2, (1 / L2(4)) / IDCG2, (1 / L2(3)) / 1, 0, 0, 0],
}


@pytest.fixture(scope="module")
def values() -> dict[str, np.ndarray]:
    return per_query(QRELS, RUN, list(METRICS))


def test_headline_metrics_in_fixed_order() -> None:
    assert list(METRICS) == ["R@10", "H@1", "H@5", "MRR", "NDCG@5"]
    assert list(METRICS.values()) == ["recall@10", "hit_rate@1", "hit_rate@5", "mrr", "ndcg@5"]


def test_per_query_matches_hand_computed(values: dict[str, np.ndarray]) -> None:
    assert list(values) == list(METRICS)
    for name, expected in EXPECTED.items():
        assert values[name].dtype == np.float64
        np.testing.assert_allclose(values[name], expected, rtol=0, atol=1e-12, err_msg=name)


def test_hand_formulas_spelled_out(values: dict[str, np.ndarray]) -> None:
    # q1, q2, q3 are the first three queries in sorted order.
    assert values["MRR"][:3].mean() == pytest.approx((1 / 1 + 1 / 3 + 1 / 2) / 3)
    assert values["R@10"][1] == pytest.approx(1 / 2)  # 2 gold, 1 retrieved
    assert values["NDCG@5"][2] == pytest.approx((1 / L2(3)) / 1)  # single gold at rank 2
    assert values["NDCG@5"][0] == pytest.approx((1 + 1 / L2(5)) / (1 + 1 / L2(3)))  # ranks 1, 4


def test_empty_missing_and_unretrieved_queries_score_zero(values: dict[str, np.ndarray]) -> None:
    for name in METRICS:
        assert values[name][3:].tolist() == [0.0, 0.0, 0.0], name


def test_mean(values: dict[str, np.ndarray]) -> None:
    means = mean(values)
    assert means["MRR"] == pytest.approx((1 + 1 / 3 + 1 / 2 + 0 + 0 + 0) / 6)
    assert means["H@5"] == pytest.approx(3 / 6)
    assert all(isinstance(v, float) for v in means.values())
    with pytest.raises(ConfigError):
        mean({"MRR": np.array([])})


def test_mrr_uses_the_whole_list_and_cutoffs_apply() -> None:
    ranked = [(f"x{i}", 100.0 - i) for i in range(10)] + [("g", 1.0)]  # gold at rank 11
    vals = per_query({"q": {"g"}}, {"q": ranked}, ["MRR", "R@10", "H@5", "NDCG@5"])
    assert vals["MRR"][0] == pytest.approx(1 / 11)
    assert vals["R@10"][0] == 0.0
    six = [(f"x{i}", 100.0 - i) for i in range(5)] + [("g", 1.0)]  # gold at rank 6
    vals = per_query({"q": {"g"}}, {"q": six}, ["H@5", "NDCG@5", "R@10"])
    assert (vals["H@5"][0], vals["NDCG@5"][0], vals["R@10"][0]) == (0.0, 0.0, 1.0)


def test_ranking_is_by_score_and_ties_keep_the_given_order() -> None:
    unsorted = {"q": [("x", 0.1), ("g", 0.9), ("y", 0.5)]}  # g ranks first by score
    assert per_query({"q": {"g"}}, unsorted, ["MRR"])["MRR"][0] == 1.0
    tied = {"q": [("x", 0.5), ("g", 0.5), ("y", 0.5)]}  # all tied: list order, g at rank 2
    assert per_query({"q": {"g"}}, tied, ["MRR"])["MRR"][0] == pytest.approx(1 / 2)


def test_graded_qrels_are_binary_and_zero_is_not_relevant() -> None:
    qrels = {"q": {"g1": 2, "g2": 1, "n": 0}}
    run = {"q": [("n", 3.0), ("g1", 2.0), ("g2", 1.0)]}
    vals = per_query(qrels, run, ["MRR", "NDCG@5", "R@10"])
    assert vals["MRR"][0] == pytest.approx(1 / 2)
    dcg = 1 / L2(3) + 1 / L2(4)  # binary gains at ranks 2 and 3
    assert vals["NDCG@5"][0] == pytest.approx(dcg / (1 + 1 / L2(3)))
    assert vals["R@10"][0] == 1.0


def test_single_metric_and_aliases() -> None:
    vals = per_query(QRELS, RUN, ["mrr"])
    assert list(vals) == ["MRR"]
    np.testing.assert_allclose(vals["MRR"], EXPECTED["MRR"])


def test_per_query_errors() -> None:
    with pytest.raises(ConfigError, match="no relevant"):
        per_query({"q": set()}, {"q": [("a", 1.0)]}, ["MRR"])
    with pytest.raises(ConfigError, match="empty"):
        per_query({}, {}, ["MRR"])
    with pytest.raises(ConfigError, match="no metric"):
        per_query({"q": {"a"}}, {}, [])
    with pytest.raises(ConfigError, match="P@5"):
        per_query({"q": {"a"}}, {}, ["P@5"])
    with pytest.raises(ConfigError, match="NaN"):
        per_query({"q": {"a"}}, {"q": [("a", float("nan"))]}, ["MRR"])


def test_parse_metrics() -> None:
    assert parse_metrics("R@10,H@1,H@5,MRR,NDCG@5") == list(METRICS)
    assert parse_metrics(" recall@10, hit@1 ,hit_rate@5,mrr,ndcg@5 ") == list(METRICS)
    assert parse_metrics("r@20,MRR,mrr,ndcg") == ["R@20", "MRR", "NDCG"]
    assert ranx_name("H@5") == "hit_rate@5"
    assert ranx_name("r@20") == "recall@20"
    assert ranx_name("NDCG") == "ndcg"
    with pytest.raises(ConfigError) as err:
        parse_metrics("R@10,bleu")
    assert "'bleu'" in str(err.value) and "R@10, H@1, H@5, MRR, NDCG@5" in str(err.value)
    for bad in ("", " , ", "recall", "R@0", "hit@x"):
        with pytest.raises(ConfigError):
            parse_metrics(bad)


def _reference(gold: set[str], ranked: list[str]) -> dict[str, float]:
    hits = [d in gold for d in ranked]
    rr = next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    dcg = sum(1 / L2(i + 2) for i, h in enumerate(hits[:5]) if h)
    idcg = sum(1 / L2(i + 2) for i in range(min(5, len(gold))))
    return {
        "R@10": sum(hits[:10]) / len(gold),
        "H@1": float(any(hits[:1])),
        "H@5": float(any(hits[:5])),
        "MRR": rr,
        "NDCG@5": dcg / idcg,
    }


def test_random_runs_match_a_reference_implementation() -> None:
    rng = np.random.default_rng(7)
    qrels: dict[str, set[str]] = {}
    run: dict[str, list[tuple[str, float]]] = {}
    for q in range(60):
        docs = [f"d{i}" for i in range(30)]
        qrels[f"q{q:02d}"] = set(rng.choice(docs, size=int(rng.integers(1, 5)), replace=False))
        ranked = list(rng.choice(docs, size=int(rng.integers(0, 20)), replace=False))
        run[f"q{q:02d}"] = [(d, 1.0 - i / 100) for i, d in enumerate(ranked)]
    vals = per_query(qrels, run, list(METRICS))
    for i, qid in enumerate(sorted(qrels)):
        ref = _reference(qrels[qid], [d for d, _ in run[qid]])
        for name in METRICS:
            assert vals[name][i] == pytest.approx(ref[name]), (qid, name)
