"""Live use: an agent loop (add one memory, then search) against quiet search, per backend.

    .venv/bin/python benchmarks/bench_live.py [--backends sqlite,postgres] \
        [--scales 1e4,1e5,1e6x100] [--queries 50] [--json OUT]

``--rerank v1`` adds the v1 reranker (its per-namespace features follow the deltas too); v1 is
trained on MiniLM vectors, so queries are then encoded with MiniLM (memory vectors stay random).

A scale is the size of the queried namespace (``1e4``, ``1e5``) or ``TOTALxN``: TOTAL memories
across N namespaces of equal size, queried in one of them (per-query cost should follow the
namespace, not the store). Memories are LoCoMo turns repeated with a suffix (distinct texts,
real BM25 statistics) with random unit vectors (the cost of exact search does not depend on
the values); queries are LoCoMo questions, encoded by the hash encoder so the figures are the
store's and the index's, not the model's. Pipeline: fusion first stage, rerank and validity
off. Reported per scale: the cold first query of a fresh store object (index load; models
excluded), quiet search p50/p95, search right after a one-memory write p50/p95 and its ratio
to quiet, and the write itself. Median of ``--queries`` runs; the machine is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memsieve.embed import HashingEncoder, MiniLMEncoder
from memsieve.eval.datasets import load_locomo
from memsieve.pipeline import Pipeline
from memsieve.store import open_store
from memsieve.types import Memory, Query

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo10.json"
DIM = 384


def parse_scale(spec: str) -> tuple[int, int]:
    """``1e5`` -> (100000, 1); ``1e6x100`` -> (1000000, 100)."""
    total, _, n = spec.partition("x")
    return int(float(total)), int(n or 1)


def fill(store, total: int, n_ns: int, turns: list[str], model: str = "hash") -> float:
    """Add ``total`` memories over ``n_ns`` namespaces (ns0 is the queried one); seconds."""
    rng = np.random.default_rng(0)
    per = total // n_ns
    t0 = time.perf_counter()
    for ns in range(n_ns):
        for start in range(0, per, 10_000):
            size = min(10_000, per - start)
            vecs = rng.normal(size=(size, DIM)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            mems = [Memory(id=f"x{i}", namespace=f"ns{ns}",
                           text=f"{turns[i % len(turns)]} #{i // len(turns)}")
                    for i in range(start, start + size)]
            store.add(mems, vectors=vecs, model=model)
    return time.perf_counter() - t0


def pct(values: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(values, 50)), 2),
            "p95": round(float(np.percentile(values, 95)), 2)}


def measure(target: str, questions: list[str], n_queries: int, rerank: str = "off") -> dict:
    encoder = HashingEncoder(dim=DIM) if rerank == "off" else MiniLMEncoder()
    # cold: a fresh store object and pipeline; the first query loads the namespace's index
    t0 = time.perf_counter()
    store = open_store(target)
    pipe = Pipeline.default(store, encoder=encoder, rerank=rerank, validity="off", k=10)
    pipe.run(Query(text=questions[0], namespace="ns0"))
    cold_ms = (time.perf_counter() - t0) * 1000
    quiet, after, write = [], [], []
    rng = np.random.default_rng(1)
    for i in range(n_queries):
        q = Query(text=questions[i % len(questions)], namespace="ns0")
        t0 = time.perf_counter()
        pipe.run(q)
        quiet.append((time.perf_counter() - t0) * 1000)
    for i in range(n_queries):
        vec = rng.normal(size=(1, DIM)).astype(np.float32)
        vec /= np.linalg.norm(vec)
        m = Memory(id=f"live-{i}", namespace="ns0", text=f"agent turn {i}: {questions[i % 7]}")
        t0 = time.perf_counter()
        store.add([m], vectors=vec, model=encoder.name)
        write.append((time.perf_counter() - t0) * 1000)
        q = Query(text=questions[(i + 3) % len(questions)], namespace="ns0")
        t0 = time.perf_counter()
        pipe.run(q)
        after.append((time.perf_counter() - t0) * 1000)
    store.close()
    out = {"cold_first_query_ms": round(cold_ms, 1), "quiet_ms": pct(quiet),
           "after_write_ms": pct(after), "write_ms": pct(write)}
    out["after_over_quiet_p50"] = round(out["after_write_ms"]["p50"] / out["quiet_ms"]["p50"], 2)
    return out


@contextlib.contextmanager
def backend(name: str, tmp: Path, tag: str):
    if name == "sqlite":
        yield str(tmp / f"{tag}.db")
    else:
        from memsieve.store.local_pg import local_postgres

        with local_postgres() as url:
            yield url


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--scales", default="1e4,1e5,1e6x100")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--rerank", choices=["off", "v1"], default="off")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    task = load_locomo(LOCOMO)
    turns = [m.text for m in task.memories]
    questions = [q.text for q in task.queries][:500]
    result = {"machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                          "python": platform.python_version()}, "runs": []}
    print(json.dumps(result["machine"]), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="memsieve-live-") as tmp:
        for name in args.backends.split(","):
            for spec in args.scales.split(","):
                total, n_ns = parse_scale(spec)
                with backend(name, Path(tmp), f"{name}-{spec}") as target:
                    model = "hash" if args.rerank == "off" else "minilm"
                    with open_store(target) as store:
                        fill_s = fill(store, total, n_ns, turns, model)
                    run = {"backend": name, "scale": spec, "rerank": args.rerank,
                           "total": total, "namespaces": n_ns,
                           "queried_namespace": total // n_ns, "fill_s": round(fill_s, 1),
                           "fill_per_s": round(total / fill_s)}
                    run.update(measure(target, questions, args.queries, args.rerank))
                print(json.dumps(run), file=sys.stderr)
                result["runs"].append(run)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
