"""Matched-recall route study (admissibility paper §3.4, §5): global vs namespace support.

Each route ranks candidate memories for a query by dense similarity (stable id ties) over its
support: ``global`` = every persona's memories dated before the question; ``namespace`` = the
asking persona's only (the trusted principal, DESIGN.md stage 1). For each query and route:

- ``recall@k``: the share of the required evidence in the top k;
- feasibility at τ: whether some prefix of the top k reaches evidence recall τ; the smallest
  such prefix P is what the reader would need to see;
- on P, each memory's admissibility (``memsieve.admissibility.judge``): c established
  violations, v established admissible, h unresolved; known-label risk c/(c+v), coverage
  (c+v)/|P| and the bounds [c/|P|, (c+h)/|P|]; the loss charges an infeasible query 1;
- ``similarity_evals``: query–memory score computations (the support's size).

``hide`` replaces a stable-hash share of the evaluator's axis judgments by "?" (the paper's
missing-label sensitivity): routes and recall stay, coverage falls and the bounds widen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memsieve.admissibility import UNRESOLVED, judge
from memsieve.errors import ConfigError
from memsieve.eval.datasets import EvalTask
from memsieve.eval.stats import paired_bootstrap
from memsieve.types import Query

ROUTES = ("global", "namespace")


def _hidden(qid: str, mid: str, share: float) -> bool:
    if share <= 0:
        return False
    h = hashlib.blake2b(f"{qid}\x00{mid}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64 < share


def route_study(task: EvalTask, memory_vectors: np.ndarray, query_vectors: dict[str, np.ndarray],
                *, routes: Sequence[str] = ROUTES, k: int = 20, tau: float = 0.8,
                hide: float = 0.0) -> dict:
    """Per-route means and per-query values; paired bootstrap CIs of namespace − global."""
    bad = [r for r in routes if r not in ROUTES]
    if bad or not routes:
        raise ConfigError(f"--routes must be a comma-separated subset of {', '.join(ROUTES)}")
    if not 0.0 < tau <= 1.0 or k < 1 or not 0.0 <= hide < 1.0:
        raise ConfigError("need 0 < tau <= 1, k >= 1 and 0 <= hide < 1")
    mems = task.memories
    dates = np.array([(m.metadata.get("date") or (m.timestamp.date().isoformat()
                       if m.timestamp else "")) for m in mems])
    spaces = np.array([m.namespace for m in mems])
    order = np.arange(len(mems))
    per: dict[str, dict[str, list[float]]] = {r: {} for r in routes}
    used = 0
    for q in task.queries:
        if q.date is None:
            continue
        used += 1
        before = dates < q.date
        for route in routes:
            support = np.flatnonzero(before & (spaces == q.namespace) if route == "namespace"
                                     else before)
            scores = memory_vectors[support] @ query_vectors[q.text]
            top = support[np.lexsort((order[support], -scores))[:k]]
            values = _query_values(task, q, top, tau, hide)
            values["similarity_evals"] = float(len(support))
            for name, v in values.items():
                per[route].setdefault(name, []).append(v)
    out: dict = {"dataset": task.name, "k": k, "tau": tau, "hide": hide, "n_queries": used,
                 "routes": {}}
    for route in routes:
        vals = per[route]
        feasible = np.array(vals["feasible"], dtype=bool)
        summary = {
            f"recall@{k}": float(np.mean(vals["recall"])),
            "feasibility": float(feasible.mean()),
            "similarity_evals": float(np.mean(vals["similarity_evals"])),
            "loss": float(np.mean(vals["loss"])),
        }
        if feasible.any():
            for name in ("lower", "upper", "known_risk", "coverage", "scope_violation",
                         "policy_violation", "lifecycle_violation"):
                col = np.array(vals[name], dtype=float)[feasible]
                summary[name] = float(np.nanmean(col)) if np.isfinite(col).any() else None
            summary["bounds"] = [summary.pop("lower"), summary.pop("upper")]
        out["routes"][route] = summary
    if set(ROUTES) <= set(routes):
        a, b = per["namespace"], per["global"]
        out["namespace_minus_global"] = {
            f"recall@{k}": paired_bootstrap(a["recall"], b["recall"]),
            "feasibility": paired_bootstrap(a["feasible"], b["feasible"]),
            "loss": paired_bootstrap(a["loss"], b["loss"]),
        }
        out["work_ratio"] = (out["routes"]["global"]["similarity_evals"]
                             / max(out["routes"]["namespace"]["similarity_evals"], 1e-9))
    return out


def _query_values(task: EvalTask, q, top: np.ndarray, tau: float, hide: float) -> dict:
    mems = task.memories
    gold = q.gold
    hits = np.array([mems[i].id in gold for i in top], dtype=float)
    recall_at = np.cumsum(hits) / len(gold)
    reach = np.flatnonzero(recall_at >= tau - 1e-12)
    values = {"recall": float(recall_at[-1]) if len(top) else 0.0,
              "feasible": float(len(reach) > 0)}
    if not len(reach):
        return values | {"loss": 1.0, "lower": np.nan, "upper": np.nan, "known_risk": np.nan,
                         "coverage": np.nan, "scope_violation": np.nan,
                         "policy_violation": np.nan, "lifecycle_violation": np.nan}
    prefix = top[: reach[0] + 1]
    query = Query(text=q.text, namespace=q.namespace)
    c = h = v = 0
    typed = {"scope": 0, "policy": 0, "lifecycle": 0}
    for i in prefix:
        record = judge(mems[i], query)
        axes = {"scope": record.scope, "policy": record.policy, "lifecycle": record.lifecycle}
        if _hidden(q.qid, mems[i].id, hide):
            axes = dict.fromkeys(axes, UNRESOLVED)
        for name, value in axes.items():
            typed[name] += value == 0
        if 0 in axes.values():
            c += 1
        elif all(x == 1 for x in axes.values()):
            v += 1
        else:
            h += 1
    n = len(prefix)
    return values | {
        "loss": (c + h) / n, "lower": c / n, "upper": (c + h) / n,
        "known_risk": c / (c + v) if c + v else np.nan, "coverage": (c + v) / n,
        **{f"{name}_violation": typed[name] / n for name in typed},
    }
