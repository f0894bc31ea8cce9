"""The evaluation harness: ingest a task into a real store, score every query once, fit any
parameter on each split's train half, and report the test halves with CIs and latency.

Protocol (benchmarks/PROTOCOL.md): per seed, sort the group ids, shuffle with
``random.Random(seed)``, first half train, second half test. Only test halves are reported.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memsieve.embed import Encoder, MemoEncoder
from memsieve.errors import ConfigError
from memsieve.eval.datasets import EvalQuery, EvalTask, split
from memsieve.eval.metrics import METRICS, per_query
from memsieve.eval.stats import bootstrap_ci, mean_std, paired_bootstrap
from memsieve.retrieve.bm25 import BM25Index
from memsieve.retrieve.fusion import fuse, rrf
from memsieve.retrieve.late import session_scores
from memsieve.retrieve.retriever import Retriever, select_pool
from memsieve.store import open_store
from memsieve.trace import Trace
from memsieve.types import Query

ALPHA_GRID = tuple(round(a, 2) for a in np.linspace(0.0, 1.0, 21))


def home() -> Path:
    """memsieve's data directory (caches); ``MEMSIEVE_HOME`` overrides it."""
    return Path(os.environ.get("MEMSIEVE_HOME") or Path.home() / ".cache" / "memsieve")


def machine() -> dict[str, object]:
    """What the figures were measured on."""
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }


@dataclasses.dataclass
class Scored:
    """One query's raw first-stage scores over its namespace, and what computing them cost."""

    query: EvalQuery
    ids: list[str]
    sessions: list[str]
    dense: np.ndarray
    bm25: np.ndarray
    ms: dict[str, float]


class Context:
    """A task ingested into a throwaway SQLite store, with every query scored once."""

    def __init__(self, task: EvalTask, encoder: Encoder, *, progress: bool = True) -> None:
        self.task, self.encoder = task, MemoEncoder(encoder)
        self._tmp = tempfile.TemporaryDirectory(prefix="memsieve-eval-")
        self.store = open_store(Path(self._tmp.name) / "eval.db")
        vectors = cached_vectors(encoder, [m.text for m in task.memories], progress=progress)
        self.store.add(task.memories, vectors=vectors, model=encoder.name)
        self.retriever = Retriever(self.store, self.encoder, method="fusion")
        self.scored = self._score_all(progress)
        self._session_bm25: dict[str, tuple[list[str], BM25Index]] = {}

    def _score_all(self, progress: bool) -> dict[str, Scored]:
        """Score every query once. Query vectors are batch-encoded (and cached on disk); the
        per-query ``encode_query`` latency is measured separately, see ``_encode_latency``."""
        from tqdm.auto import tqdm

        queries = self.task.queries
        texts = list(dict.fromkeys(q.text for q in queries))
        self.encoder.capacity = max(self.encoder.capacity, len(texts) + 16)
        self.encoder.remember(texts, cached_vectors(self.encoder.inner, texts, progress=progress))
        encode_ms = self._encode_latency(texts)
        out = {}
        sessions: dict[str, list[str]] = {}
        for q in tqdm(queries, desc="score queries", unit="q", disable=not progress):
            with self.store.snapshot():
                index = self.retriever.cache.get(q.namespace)
                trace = Trace()
                scores = self.retriever.score(Query(text=q.text, namespace=q.namespace), index,
                                              trace)
                if q.namespace not in sessions:
                    sessions[q.namespace] = [m.session_id or m.id
                                             for m in index.all_memories(self.store)]
            trace.timings_ms["encode_query"] = encode_ms
            out[q.qid] = Scored(q, list(index.ids), sessions[q.namespace], scores["dense"],
                                scores["bm25"], dict(trace.timings_ms))
        return out

    def _encode_latency(self, texts: Sequence[str], n: int = 30) -> float:
        """Median ms to encode one query on its own (the first ``n`` query texts, warm model)."""
        inner = self.encoder.inner
        sample = list(texts[:n])
        if not sample:
            return 0.0
        inner.encode(sample[:1])  # warm-up
        times = []
        for text in sample:
            t0 = time.perf_counter()
            inner.encode([text])
            times.append((time.perf_counter() - t0) * 1000.0)
        return float(np.median(times))

    def session_bm25(self, namespace: str) -> tuple[list[str], BM25Index]:
        """BM25 over session documents (a session's turns joined), built once per namespace."""
        if namespace not in self._session_bm25:
            texts: dict[str, list[str]] = {}
            for m in self.store.list(namespace):
                texts.setdefault(m.session_id or m.id, []).append(m.text)
            sids = list(texts)
            self._session_bm25[namespace] = (sids, BM25Index([" ".join(texts[s]) for s in sids]))
        return self._session_bm25[namespace]

    def close(self) -> None:
        self.store.close()
        self._tmp.cleanup()


def cached_vectors(encoder: Encoder, texts: Sequence[str], *, progress: bool) -> np.ndarray:
    """Encode ``texts`` once per (model, texts) and keep the matrix under MEMSIEVE_HOME/cache."""
    h = hashlib.sha256(encoder.name.encode())
    for t in texts:
        h.update(t.encode("utf-8") + b"\x00")
    path = home() / "cache" / f"vectors-{encoder.name}-{h.hexdigest()[:20]}.npy"
    if path.exists():
        return np.load(path)
    vectors = encoder.encode(texts, progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


# -- pipelines ------------------------------------------------------------------------------


@dataclasses.dataclass
class Ranking:
    """A ranked list of ids for one query and the stage latencies behind it (ms)."""

    ids: list[str]
    ms: dict[str, float]


class FirstStage:
    """A training-free first stage, optionally with a fusion weight fitted on the train half."""

    def __init__(self, name: str, level: str, pool: int = 500) -> None:
        self.name, self.level, self.pool = name, level, pool
        self.alpha: float | None = 0.5 if name == "fusion" else None

    def key(self, ctx: Context, s: Scored, alpha: float | None) -> tuple[list[str], np.ndarray]:
        """Ids (turns or sessions) and the ranking key over them."""
        if self.level == "turn":
            if self.name == "bm25":
                return s.ids, s.bm25
            if self.name == "dense":
                return s.ids, s.dense.astype(np.float64)
            if self.name == "rrf":
                return s.ids, rrf(s.dense, s.bm25)
            return s.ids, fuse(s.dense, s.bm25, alpha)
        sids, index = ctx.session_bm25(s.query.namespace)
        late = session_scores(s.dense, s.sessions)
        dense = np.array([late[x] for x in sids])
        if self.name == "late":
            return sids, dense
        bm25 = index.scores(s.query.text)
        if self.name == "bm25":
            return sids, bm25
        if self.name == "rrf":
            return sids, rrf(dense, bm25)
        return sids, fuse(dense, bm25, alpha)

    def fit(self, ctx: Context, train: Sequence[EvalQuery], seed: int) -> None:
        """Fit the fusion weight: the grid value with the best train MRR (ties: the smaller)."""
        if self.name != "fusion":
            return
        best = max(ALPHA_GRID, key=lambda a: (self._mrr(ctx, train, a), -a))
        self.alpha = best

    def _mrr(self, ctx: Context, queries: Sequence[EvalQuery], alpha: float) -> float:
        total = 0.0
        for q in queries:
            ids, key = self.key(ctx, ctx.scored[q.qid], alpha)
            gold = q.gold if self.level == "turn" else q.gold_sessions
            mask = np.array([i in gold for i in ids])
            if not mask.any():
                continue
            best = key[mask].max()
            # rank of the best gold item under select_pool's order (ties: by position)
            first = np.flatnonzero(mask & (key == best))[0]
            rank = 1 + int((key > best).sum()) + int((key[:first] == best).sum())
            total += 1.0 / rank
        return total / max(len(queries), 1)

    def rank(self, ctx: Context, q: EvalQuery) -> Ranking:
        s = ctx.scored[q.qid]
        t0 = time.perf_counter()
        ids, key = self.key(ctx, s, self.alpha)
        top = select_pool(key, self.pool)
        ranked = [ids[i] for i in top]
        select_ms = (time.perf_counter() - t0) * 1000.0
        ms = {}
        if self.name != "bm25":
            ms["encode_query"] = s.ms.get("encode_query", 0.0)
        stage = select_ms + s.ms.get("fuse", 0.0)
        stage += s.ms.get("dense", 0.0) if self.name != "bm25" else 0.0
        stage += s.ms.get("bm25", 0.0) if self.name != "dense" and self.name != "late" else 0.0
        ms["first_stage"] = stage
        return Ranking(ranked, ms)


PIPELINES: dict[str, dict[str, Callable[[], FirstStage]]] = {
    "turn": {n: (lambda n=n: FirstStage(n, "turn")) for n in ("bm25", "dense", "fusion", "rrf")},
    "session": {
        n: (lambda n=n: FirstStage(n, "session")) for n in ("bm25", "late", "fusion", "rrf")
    },
}


def _learned_v1() -> FirstStage:
    """The v1 reranker over the fusion pool (imported lazily: it needs torch)."""
    from memsieve.rerank.eval_pipeline import V1Pipeline

    return V1Pipeline()


def _learned_v2(quantize: bool = True) -> FirstStage:
    """v1, then the v2 cross-encoder over its protected top-10 (int8, as shipped; v2_fp32:
    the same checkpoints unquantised)."""
    from memsieve.rerank.eval_pipeline import V2Pipeline

    return V2Pipeline(quantize=quantize)


PIPELINES["turn"]["v1"] = _learned_v1
PIPELINES["turn"]["v2"] = _learned_v2
PIPELINES["turn"]["v2_fp32"] = lambda: _learned_v2(quantize=False)


def get_pipeline(name: str, level: str) -> FirstStage:
    if level not in PIPELINES:
        raise ConfigError(f"unknown level {level!r}; choose turn or session")
    if name not in PIPELINES[level]:
        raise ConfigError(
            f"unknown pipeline {name!r} at {level} level; choose one of {sorted(PIPELINES[level])}"
        )
    return PIPELINES[level][name]()


# -- evaluation ------------------------------------------------------------------------------


@dataclasses.dataclass
class SeedRun:
    seed: int
    params: dict[str, object]
    qids: list[str]
    values: dict[str, np.ndarray]  # metric -> per-query values (aligned with qids)
    categories: list[str]
    ms: list[dict[str, float]]


def ranked_run(ids: Sequence[str]) -> list[tuple[str, float]]:
    """A ranked id list as a ranx run: distinct descending scores from ranks, so ranx's order
    is exactly ours."""
    return [(i, float(len(ids) - k)) for k, i in enumerate(ids)]


def run_seeds(
    ctx: Context,
    name: str,
    level: str,
    seeds: Sequence[int],
    *,
    make: Callable[[int], FirstStage] | None = None,
) -> list[SeedRun]:
    """Fit on each seed's train half and score its test half. ``make(seed)`` builds the
    pipeline when given (a benchmark's variant), else the registered pipeline ``name``."""
    runs = []
    for seed in seeds:
        train_groups, test_groups = split(ctx.task.groups, seed)
        train = [q for q in ctx.task.queries if q.namespace in set(train_groups)]
        test = [q for q in ctx.task.queries if q.namespace in set(test_groups)]
        pipe = make(seed) if make is not None else get_pipeline(name, level)
        headline = set(ctx.task.headline)
        pipe.fit(ctx, [q for q in train if not headline or q.category in headline], seed)
        qrels, run, ms = {}, {}, []
        for q in test:
            r = pipe.rank(ctx, q)
            qrels[q.qid] = q.gold if level == "turn" else q.gold_sessions
            run[q.qid] = ranked_run(r.ids)
            ms.append(r.ms)
        values = per_query(qrels, run, list(METRICS))
        qids = sorted(qrels)
        cat = {q.qid: q.category for q in test}
        params = {"alpha": pipe.alpha} if pipe.alpha is not None else {}
        order = {q.qid: i for i, q in enumerate(test)}
        runs.append(
            SeedRun(
                seed, params, qids, values, [cat[q] for q in qids], [ms[order[q]] for q in qids]
            )
        )
    return runs


def _select(run: SeedRun, cats: set[str] | None) -> np.ndarray:
    return np.array([cats is None or c in cats for c in run.categories], dtype=bool)


def summarise(task: EvalTask, name: str, level: str, runs: list[SeedRun]) -> dict:
    """The fixed JSON schema (see benchmarks/PROTOCOL.md)."""
    head = set(task.headline) or None
    metrics, ci95 = {}, {}
    for m in METRICS:
        per_seed = [float(r.values[m][_select(r, head)].mean()) for r in runs]
        pooled = np.concatenate([r.values[m][_select(r, head)] for r in runs])
        mu, sd = mean_std(per_seed)
        metrics[m] = {"mean": mu, "std": sd, "per_seed": per_seed}
        lo, hi = bootstrap_ci(pooled)
        ci95[m] = [lo, hi]
    per_category = {}
    for c in sorted({c for r in runs for c in r.categories}, key=_cat_key):
        per_category[c] = {
            m: float(
                np.mean(
                    [r.values[m][_select(r, {c})].mean() for r in runs if _select(r, {c}).any()]
                )
            )
            for m in METRICS
        }
        per_category[c]["n_queries"] = int(sum(_select(r, {c}).sum() for r in runs))
    latency: dict[str, float] = {}
    all_ms = [ms for r in runs for ms, keep in zip(r.ms, _select(r, head), strict=True) if keep]
    for stage in dict.fromkeys(k for ms in all_ms for k in ms):
        latency[stage] = float(np.median([ms.get(stage, 0.0) for ms in all_ms]))
    latency["total"] = float(np.median([sum(ms.values()) for ms in all_ms]))
    return {
        "dataset": task.name,
        "level": level,
        "pipeline": name,
        "seeds": [r.seed for r in runs],
        "n_queries": int(sum(_select(r, head).sum() for r in runs)),
        "n_queries_per_seed": [int(_select(r, head).sum()) for r in runs],
        "headline_categories": sorted(head) if head else "all",
        "metrics": {m: v["mean"] for m, v in metrics.items()},
        "metrics_std": {m: v["std"] for m, v in metrics.items()},
        "metrics_per_seed": {m: v["per_seed"] for m, v in metrics.items()},
        "ci95": ci95,
        "per_category": per_category,
        "params": [dict(seed=r.seed, **r.params) for r in runs],
        "latency_ms": latency,
        "dropped": task.dropped,
        "repaired_evidence": task.repaired,
        "machine": machine(),
    }


def compare(task: EvalTask, a: list[SeedRun], b: list[SeedRun]) -> dict:
    """Paired bootstrap of A − B over the same (seed, query) pairs, per headline metric."""
    head = set(task.headline) or None
    out = {}
    for m in METRICS:
        va, vb = [], []
        for ra, rb in zip(a, b, strict=True):
            if ra.qids != rb.qids:
                raise ConfigError("pipelines were scored on different queries")
            va.append(ra.values[m][_select(ra, head)])
            vb.append(rb.values[m][_select(rb, head)])
        out[m] = paired_bootstrap(np.concatenate(va), np.concatenate(vb))
    return out


def _cat_key(c: str) -> tuple[int, str]:
    return (int(c), "") if c.isdigit() else (10**6, c)


__all__ = ["Context", "compare", "get_pipeline", "run_seeds", "summarise"]
