"""Ingest throughput and query latency per stage (a benchmark: it measures and prints).

    .venv/bin/python benchmarks/bench_store.py [--sizes 10000,100000] [--queries 100]

1. Ingest: all 10 LoCoMo conversations through ``add_memories`` (read, MiniLM encode, one
   SQLite transaction) into a fresh store; turns/s with the encode / write split.
2. Query latency: one namespace of N memories (LoCoMo turns repeated with a suffix so each
   text is distinct; random unit vectors stand in for embeddings, which does not change the
   cost of exact search), queried with LoCoMo questions through the Retriever (fusion). Reports
   p50 / p95 ms per stage, and the one-off index load (the namespace's vectors; BM25 postings
   live in the store since the live core) per namespace. bench_live.py measures live use.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memsieve.embed import MemoEncoder, MiniLMEncoder
from memsieve.eval.datasets import load_locomo
from memsieve.ingest import add_memories, read_memories
from memsieve.retrieve import Retriever
from memsieve.store import open_store
from memsieve.trace import Trace
from memsieve.types import Memory, Query

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo10.json"


def bench_ingest(encoder: MiniLMEncoder, tmp: Path) -> dict:
    memories = list(read_memories("locomo", LOCOMO))
    with open_store(tmp / "ingest.db") as store:
        report = add_memories(store, memories, encoder, progress=True)
    return {
        "memories": report.memories, "namespaces": report.namespaces,
        "seconds": round(report.seconds, 2), "turns_per_s": round(report.turns_per_s, 1),
        "encode_s": round(report.encode_s, 2), "write_s": round(report.write_s, 3),
        "write_turns_per_s": round(report.memories / max(report.write_s, 1e-9), 0),
    }


def bench_query(encoder: MiniLMEncoder, n: int, questions: list[str], tmp: Path) -> dict:
    turns = [m.text for m in read_memories("locomo", LOCOMO)]
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(n, encoder.dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    mems = [Memory(id=f"x{i}", namespace="big", text=f"{turns[i % len(turns)]} #{i // len(turns)}")
            for i in range(n)]
    with open_store(tmp / f"q{n}.db") as store:
        t0 = time.perf_counter()
        store.add(mems, vectors=vecs, model=encoder.name)
        write_s = time.perf_counter() - t0
        memo = MemoEncoder(encoder)
        retriever = Retriever(store, memo, method="fusion", pool=500)
        t0 = time.perf_counter()
        retriever.cache.get("big")
        build_s = time.perf_counter() - t0
        stages: dict[str, list[float]] = {}
        for q in questions:
            trace = Trace()
            memo._memo.clear()  # every query pays its own encoding
            with trace.timed("total"):
                retriever(Query(text=q, namespace="big"), [], trace=trace)
            for k, v in trace.timings_ms.items():
                stages.setdefault(k, []).append(v)
    pct = {k: {"p50": round(float(np.percentile(v, 50)), 3),
               "p95": round(float(np.percentile(v, 95)), 3)} for k, v in stages.items()}
    return {"memories": n, "write_s": round(write_s, 2), "index_build_s": round(build_s, 2),
            "queries": len(questions), "ms": pct}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    import torch

    encoder = MiniLMEncoder()
    questions = [q.text for q in load_locomo(LOCOMO).queries][: args.queries]
    out = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                       "torch_threads": torch.get_num_threads(),
                       "python": sys.version.split()[0]}}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_ingest:
            out["ingest_locomo"] = bench_ingest(encoder, Path(tmp))
            print(json.dumps({"ingest_locomo": out["ingest_locomo"]}), flush=True)
        out["query"] = []
        for n in (int(s) for s in args.sizes.split(",")):
            res = bench_query(encoder, n, questions, Path(tmp))
            out["query"].append(res)
            print(json.dumps(res), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
