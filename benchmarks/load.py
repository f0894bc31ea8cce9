"""Load test of ``memsieve serve``: concurrent clients on loopback, mixed add / search / context.

    .venv/bin/python benchmarks/load.py [--backends sqlite,postgres] [--clients 32] \
        [--requests 5000] [--model hash|minilm] [--layers off|default] [--json OUT]

Per backend: a fresh store seeded with ``--seed-memories`` LoCoMo turns in 10 namespaces, one
server process (``memsieve serve``, models loaded once), then ``--clients`` threads, each with
its own HTTP connection and key, share ``--requests`` requests: 30% batch adds (5 memories),
50% searches, 20% contexts, in a fixed random order. Reported: throughput, p50/p95/p99 per
operation and overall, and every error (non-2xx or exception). ``--model hash`` with
``--layers off`` (rerank and validity off) measures the service and the store; ``--model
minilm --layers default`` the product as shipped (fewer requests: it is ~100x slower per query).
Only 127.0.0.1 is ever contacted; every loop is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from memsieve.embed import get_encoder
from memsieve.eval.datasets import load_locomo
from memsieve.eval.harness import machine
from memsieve.ingest import add_memories
from memsieve.store import open_store
from memsieve.types import Memory

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo10.json"
KEY = "load-test-key-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seed(target: str, model: str, n: int) -> tuple[list[str], list[str]]:
    task = load_locomo(LOCOMO)
    turns = [m.text for m in task.memories][:n]
    questions = [q.text for q in task.queries]
    namespaces = [f"ns{i}" for i in range(10)]
    mems = [Memory(id=f"t{i}", namespace=namespaces[i % 10], text=t) for i, t in enumerate(turns)]
    with open_store(target) as store:
        add_memories(store, mems, get_encoder(model))
    return namespaces, questions


def run_backend(target: str, args: argparse.Namespace, tmp: Path) -> dict:
    import httpx

    namespaces, questions = seed(target, args.model, args.seed_memories)
    keys = tmp / "keys.json"
    keys.write_text(json.dumps({KEY: namespaces}))
    port = free_port()
    layers = ["--rerank", "off", "--validity", "off"] if args.layers == "off" else []
    server = subprocess.Popen([sys.executable, "-m", "memsieve", "serve", "--db", target,
                               "--keys", str(keys), "--port", str(port), *layers],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                    break
            if server.poll() is not None:
                raise RuntimeError(server.stderr.read())
            time.sleep(0.2)
        rng = random.Random(0)
        plan = [rng.choices(["add", "search", "context"], weights=[3, 5, 2])[0]
                for _ in range(args.requests)]
        lock = threading.Lock()
        cursor = [0]
        lat: dict[str, list[float]] = {"add": [], "search": [], "context": []}
        errors: list[str] = []

        def client(cid: int) -> None:
            r = random.Random(cid)
            with httpx.Client(base_url=url, timeout=600,
                              headers={"Authorization": f"Bearer {KEY}"}) as http:
                while True:
                    with lock:
                        i = cursor[0]
                        cursor[0] += 1
                    if i >= len(plan):
                        return
                    op, ns = plan[i], r.choice(namespaces)
                    if op == "add":
                        body = {"memories": [{"namespace": ns, "id": f"c{cid}-{i}-{j}",
                                              "text": r.choice(questions)} for j in range(5)]}
                        path = "/v1/memories"
                    else:
                        body = {"query": r.choice(questions), "namespace": ns}
                        path = f"/v1/{op}"
                    t0 = time.perf_counter()
                    try:
                        res = http.post(path, json=body)
                        ok = res.status_code == 200
                        why = f"{op}: {res.status_code} {res.text[:200]}"
                    except httpx.HTTPError as err:
                        ok, why = False, f"{op}: {err!r}"
                    ms = (time.perf_counter() - t0) * 1000
                    with lock:
                        lat[op].append(ms)
                        if not ok:
                            errors.append(why)

        t0 = time.perf_counter()
        threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=3600)
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(timeout=60)
    every = [x for v in lat.values() for x in v]

    def pct(v: list[float]) -> dict:
        return {f"p{p}": float(np.percentile(v, p)) for p in (50, 95, 99)} | {"n": len(v)}

    return {"requests": len(every), "errors": len(errors), "error_samples": errors[:5],
            "seconds": wall, "throughput_rps": len(every) / wall, "all": pct(every),
            **{op: pct(v) for op, v in lat.items() if v}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--seed-memories", type=int, default=2000)
    ap.add_argument("--model", default="hash")
    ap.add_argument("--layers", choices=["off", "default"], default="off")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    out = {"config": vars(args) | {"json": str(args.json)}, "machine": machine(), "backends": {}}
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            if backend == "sqlite":
                result = run_backend(str(Path(tmp) / "load.db"), args, Path(tmp))
            else:
                from memsieve.store.local_pg import local_postgres

                with local_postgres(database="memsieve_load") as pg:
                    result = run_backend(pg, args, Path(tmp))
        out["backends"][backend] = result
        a = result["all"]
        print(f"{backend}: {result['requests']} requests, {result['errors']} errors, "
              f"{result['throughput_rps']:.1f} req/s, p50 {a['p50']:.1f} ms, p95 "
              f"{a['p95']:.1f} ms, p99 {a['p99']:.1f} ms", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
