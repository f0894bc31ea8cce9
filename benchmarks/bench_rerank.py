"""Reranker latency through the product pipeline (measure and print; nothing is asserted).

    .venv/bin/python benchmarks/bench_rerank.py [--queries 100] [--json OUT]

One LoCoMo conversation is ingested into a temporary SQLite store with its MiniLM vectors
(cached under MEMSIEVE_HOME), then ``Pipeline.default(rerank="v2", validity="off")`` answers
the first ``--queries`` questions of it (bench_validity.py times the validity layer).
Per-stage times come from each response's trace: ``retrieve`` (query encoding, BM25, dense,
fusion, pool cut), ``rerank_v1`` (500-pool), ``rerank_v2`` (10 pairs, int8); p50 / p95 in ms
after two warm-up queries, with the torch thread count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

import numpy as np

from memsieve.embed import MemoEncoder, MiniLMEncoder
from memsieve.eval.datasets import load_task
from memsieve.eval.harness import cached_vectors
from memsieve.pipeline import Pipeline
from memsieve.store import open_store
from memsieve.types import Query

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=SHARED / "locomo" / "locomo10.json")
    ap.add_argument("--conversation", default="conv-26")
    ap.add_argument("--queries", type=int, default=100)
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
        pipe = Pipeline.default(store, encoder=encoder, rerank="v2", validity="off")
        timings: dict[str, list[float]] = {}
        for i, text in enumerate(questions):
            trace = pipe.run(Query(text=text, namespace=args.conversation)).trace
            if i < 2:
                continue  # warm-up: index build, feature build, quantisation
            for stage in ("retrieve", "rerank_v1", "rerank_v2", "total"):
                timings.setdefault(stage, []).append(trace.timings_ms[stage])
        store.close()
    out = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "torch_threads": torch.get_num_threads()},
        "memories": len(memories),
        "queries": len(questions) - 2,
        "ms": {k: {"p50": round(float(np.median(v)), 2),
                   "p95": round(float(np.percentile(v, 95)), 2)} for k, v in timings.items()},
    }
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
