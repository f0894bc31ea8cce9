"""Latency per stage through the product pipeline (measure and print; nothing is asserted).

    .venv/bin/python benchmarks/bench_rerank.py [--queries 100] [--validity context] [--json OUT]

One LoCoMo conversation is ingested into a temporary SQLite store with its MiniLM vectors
(cached under MEMSIEVE_HOME) and its validity edges, then ``Pipeline.default(rerank="v2",
validity=...)`` answers the first ``--queries`` questions of it. Per-stage times come from
each response's trace: ``retrieve`` (query encoding, BM25, dense, fusion, pool cut),
``rerank_v1`` (500-pool, and its gate), ``rerank_v2`` (10 pairs, int8), ``validity`` (the
verifier over the top 10's edges); p50 / p95 in ms after two warm-up queries, with the torch
thread count, the share of queries v1's gate let through, and the validity stage's p50 against
the p50 of the rest of the query.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from memsieve.embed import MemoEncoder, MiniLMEncoder
from memsieve.eval.datasets import load_task
from memsieve.eval.harness import cached_vectors
from memsieve.pipeline import Pipeline
from memsieve.rerank.gate import zone_shares
from memsieve.store import open_store
from memsieve.types import Query
from memsieve.validity.edges import default_judge, rebuild

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=SHARED / "locomo" / "locomo10.json")
    ap.add_argument("--conversation", default="conv-26")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--validity", choices=("off", "context"), default="context")
    ap.add_argument("--target-gate", choices=("packaged", "off"), default="packaged",
                    help="the validity stage's target gate (off: judge every result's edges)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    import torch

    task = load_task("locomo", args.data)
    memories = [m for m in task.memories if m.namespace == args.conversation]
    questions = [q.text for q in task.queries if q.namespace == args.conversation]
    questions = questions[: args.queries + 2]
    encoder = MemoEncoder(MiniLMEncoder())
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "bench.db")
        store.add(memories, vectors=cached_vectors(encoder.inner, [m.text for m in memories],
                                                   progress=False), model=encoder.name)
        t0 = time.perf_counter()
        n_edges = rebuild(store, args.conversation, default_judge(encoder.name))
        edges_s = time.perf_counter() - t0
        pipe = Pipeline.default(store, encoder=encoder, rerank="v2", validity=args.validity)
        for stage in pipe.stages:
            if stage.name == "validity" and args.target_gate == "off":
                stage.target_gate = None
        timings: dict[str, list[float]] = {}
        weights = []
        stages = ("retrieve", "rerank_v1", "rerank_v2", "total") + (
            ("validity",) if args.validity != "off" else ())
        for i, text in enumerate(questions):
            trace = pipe.run(Query(text=text, namespace=args.conversation)).trace
            if i < 2:
                continue  # warm-up: index build, feature build, quantisation
            for stage in stages:
                timings.setdefault(stage, []).append(trace.timings_ms[stage])
            weights.append(trace.notes.get("rerank_v1_gate", {}).get("weight", 1.0))
        store.close()
    out = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "torch_threads": torch.get_num_threads()},
        "memories": len(memories),
        "queries": len(questions) - 2,
        "ms": {k: {"p50": round(float(np.median(v)), 2),
                   "p95": round(float(np.percentile(v, 95)), 2)} for k, v in timings.items()},
        "v1_gate": zone_shares(weights),
        "validity_edges": n_edges,
        "edges_build_s": round(edges_s, 3),
        "target_gate": args.target_gate,
    }
    if "validity" in timings:
        rest = np.array(timings["total"]) - np.array(timings["validity"])
        out["validity_over_rest_p50"] = round(
            float(np.median(timings["validity"]) / np.median(rest)), 3)
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
