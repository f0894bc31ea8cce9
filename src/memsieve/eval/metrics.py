"""Ranking metrics per query, computed with ranx; pure functions with no knowledge of datasets.

Metric names: the headline metrics are ``METRICS`` (short name -> ranx name), in a fixed order.
``parse_metrics`` also accepts other cut-offs and lower-case spellings (``recall@10``, ``hit@1``,
``hit_rate@5``, ``mrr``, ``ndcg@5``) and returns canonical short names (``R@10``, ``H@1``, ...).

Definitions (binary relevance; a document is gold when its relevance is > 0):

- ``R@k``: |top-k ∩ gold| / |gold|.
- ``H@k``: 1 if any gold document is in the top k, else 0.
- ``MRR``: 1 / rank of the first gold document over the *whole* ranked list given, else 0
  (``MRR@k`` cuts the list at k).
- ``NDCG@k``: DCG@k / IDCG@k with binary gains, DCG = sum over gold hits of 1 / log2(rank + 1).

A query whose run is empty, or that is missing from the run, scores 0 on every metric.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from memsieve.errors import ConfigError

#: Headline metrics, in report order: short name -> ranx metric name.
METRICS: dict[str, str] = {
    "R@10": "recall@10",
    "H@1": "hit_rate@1",
    "H@5": "hit_rate@5",
    "MRR": "mrr",
    "NDCG@5": "ndcg@5",
}

# Accepted family spellings (lower-case) -> (canonical short prefix, ranx prefix, needs k).
_FAMILIES: dict[str, tuple[str, str, bool]] = {
    "r": ("R", "recall", True),
    "recall": ("R", "recall", True),
    "h": ("H", "hit_rate", True),
    "hit": ("H", "hit_rate", True),
    "hit_rate": ("H", "hit_rate", True),
    "mrr": ("MRR", "mrr", False),
    "ndcg": ("NDCG", "ndcg", False),
}
_SPEC = re.compile(r"^([a-z_]+)(?:@(\d+))?$")
_VALID = (
    f"valid: {', '.join(METRICS)}, or R@k, H@k, MRR@k, NDCG@k for another cut-off k "
    "(also spelt recall@k, hit@k, hit_rate@k, mrr, ndcg@k)"
)
# Stands in for the results of a query with an empty run (ranx needs >= 1 doc per query).
_EMPTY_RUN_DOC = "\x00memsieve:empty-run"

QrelsInput = Mapping[str, Iterable[str]] | Mapping[str, Mapping[str, int]]
RunInput = Mapping[str, Sequence[tuple[str, float]]] | Mapping[str, Mapping[str, float]]


def _canonical(spec: str) -> str:
    """Canonical short name of one metric spec; ConfigError if unknown."""
    match = _SPEC.match(spec.strip().lower())
    family = _FAMILIES.get(match.group(1)) if match else None
    if match is None or family is None:
        raise ConfigError(f"unknown metric {spec.strip()!r}; {_VALID}")
    short, _, needs_k = family
    k = match.group(2)
    if k is None:
        if needs_k:
            raise ConfigError(f"metric {spec.strip()!r} needs a cut-off, e.g. {short}@10; {_VALID}")
        return short
    if int(k) < 1:
        raise ConfigError(f"metric {spec.strip()!r}: the cut-off must be >= 1; {_VALID}")
    return f"{short}@{int(k)}"


def ranx_name(metric: str) -> str:
    """The ranx metric name for a metric spec, e.g. ``"H@5"`` -> ``"hit_rate@5"``.

    Raises:
        ConfigError: unknown metric.
    """
    short = _canonical(metric)
    prefix, _, k = short.partition("@")
    ranx_prefix = next(r for s, r, _ in _FAMILIES.values() if s == prefix)
    return f"{ranx_prefix}@{k}" if k else ranx_prefix


def parse_metrics(spec: str) -> list[str]:
    """Parse a comma-separated metric list into canonical short names, duplicates dropped.

    Example: ``"recall@10, hit@1,MRR"`` -> ``["R@10", "H@1", "MRR"]``.

    Raises:
        ConfigError: an empty list or an unknown metric (the message names it and the valid ones).
    """
    names: list[str] = []
    for part in spec.split(","):
        if not part.strip():
            continue
        name = _canonical(part)
        if name not in names:
            names.append(name)
    if not names:
        raise ConfigError(f"no metric given in {spec!r}; {_VALID}")
    return names


def _gold(qid: str, rels: Iterable[str] | Mapping[str, int]) -> dict[str, int]:
    """Binary qrels of one query: gold doc id -> 1."""
    if isinstance(rels, Mapping):
        gold = {str(d): 1 for d, r in rels.items() if r > 0}
    elif isinstance(rels, str):
        raise ConfigError(f"qrels of query {qid!r} must be a set of doc ids, not a string")
    else:
        gold = {str(d): 1 for d in rels}
    if not gold:
        raise ConfigError(
            f"query {qid!r} has no relevant document; leave such queries out of the qrels"
        )
    return gold


def _ranking(
    qid: str, results: Sequence[tuple[str, float]] | Mapping[str, float] | None
) -> dict[str, float]:
    """One query's run as doc id -> score, re-scored by rank so that ranx's order is ours.

    Documents are ranked by descending score; ties keep the order given (list order, or dict
    insertion order). A doc id that appears twice keeps its best rank.
    """
    if results is None:
        return {}
    items = results.items() if isinstance(results, Mapping) else results
    pairs: list[tuple[str, float]] = []
    for item in items:
        doc, score = item
        score = float(score)
        if math.isnan(score):
            raise ConfigError(f"run of query {qid!r}: document {doc!r} has a NaN score")
        pairs.append((str(doc), score))
    pairs.sort(key=lambda p: -p[1])  # stable: ties keep the given order
    ranked: dict[str, float] = {}
    for doc, _ in pairs:
        if doc not in ranked:
            ranked[doc] = 0.0
    n = len(ranked)
    return {doc: float(n - i) for i, doc in enumerate(ranked)}


def per_query(qrels: QrelsInput, run: RunInput, metrics: list[str]) -> dict[str, np.ndarray]:
    """Per-query metric values, computed with ranx.

    Args:
        qrels: query id -> gold doc ids (a set), or -> {doc id: relevance}; relevance > 0 is
            gold and gains are binary. Every query must have at least one gold document.
        run: query id -> ranked results, as ``[(doc id, score), ...]`` or ``{doc id: score}``.
            Documents are ranked by descending score. Give distinct scores for a
            deterministic ranking: ties are broken by the order given (list order, or dict
            insertion order), not by ranx. A query of the qrels with an empty run, or missing
            from the run, scores 0; run queries absent from the qrels are ignored.
        metrics: metric specs, as accepted by ``parse_metrics`` (e.g. ``list(METRICS)``).

    Returns:
        Canonical short metric name -> float64 array with one value per query, in the order of
        ``sorted(qrels)``.

    Raises:
        ConfigError: no qrels, no or unknown metrics, a query without gold, a NaN score.
    """
    from ranx import evaluate  # imported here: ranx (numba) is slow to import

    if not qrels:
        raise ConfigError("no query to evaluate: the qrels are empty")
    names = parse_metrics(",".join(metrics)) if metrics else []
    if not names:
        raise ConfigError(f"no metric given; {_VALID}")
    qids = sorted(qrels)
    gold = {qid: _gold(qid, qrels[qid]) for qid in qids}
    ranx_run: dict[str, dict[str, float]] = {}
    for qid in qids:
        ranked = _ranking(qid, run.get(qid))
        if not ranked:
            dummy = _EMPTY_RUN_DOC
            while dummy in gold[qid]:
                dummy += "_"
            ranked = {dummy: 1.0}
        ranx_run[qid] = ranked

    ranx_names = [ranx_name(n) for n in names]
    # Plain dicts keep insertion order (sorted qids) through ranx's conversion to typed lists.
    scores = evaluate(gold, ranx_run, ranx_names, return_mean=False)
    if not isinstance(scores, dict):  # ranx returns the bare array for a single metric
        scores = {ranx_names[0]: scores}
    return {
        n: np.asarray(scores[r], dtype=np.float64).copy()
        for n, r in zip(names, ranx_names, strict=True)
    }


def mean(values: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Mean over queries of each metric's per-query values.

    Raises:
        ConfigError: a metric with no values.
    """
    out: dict[str, float] = {}
    for name, vals in values.items():
        arr = np.asarray(vals, dtype=np.float64)
        if arr.size == 0:
            raise ConfigError(f"metric {name!r} has no per-query values to average")
        out[name] = float(arr.mean())
    return out
