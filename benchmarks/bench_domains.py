"""Rerankers on every kind of memory we have: fusion, v1, v2 (the default) per dataset, the
leave-one-dataset-out table, and what v1's gate does (issue 12).

    .venv/bin/python benchmarks/bench_domains.py --json benchmarks/results/domains/domains.json
    .venv/bin/python benchmarks/bench_domains.py --part lodo --lodo-dir /tmp/lodo --train \\
        --json benchmarks/results/domains/lodo.json

Datasets: LoCoMo, RHELM, the LongMemEval sample and Memora (weekly, current-evidence turns as
gold), each at turn level from its default path under ../shared/data. For each split seed S the
pipelines are fitted on S's train half and scored on S's test half (PROTOCOL.md);
``v1-seed{S}.pt`` and ``v2-seed{S}.pt`` never saw a test half (the eval refuses one that did).

- ``--part main``: fusion, v1 without its gate, v1 (gated, as shipped), v2 = v1 + the
  cross-encoder (the default pipeline), with paired bootstrap CIs against fusion, and the shares
  of test queries the gate sent back to the first stage and gave the blend.
- ``--part lodo``: for each dataset D and seed S, a v1 trained on the train halves of the
  other datasets only (``memsieve train v1 --seed S --exclude D --out DIR/D/v1-seed{S}.pt``;
  ``--train`` runs the missing ones), scored on D's test half with and without its gate.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from memsieve.embed import get_encoder
from memsieve.eval.datasets import load_task
from memsieve.eval.harness import Context, FirstStage, compare, machine, run_seeds, summarise
from memsieve.rerank.eval_pipeline import V1Pipeline, V2Pipeline

DATASETS = ("locomo", "rhelm", "longmemeval", "memora")
SHOWN = ("R@10", "H@1", "MRR")


def gate_share(pipes: list[V1Pipeline]) -> tuple[float, float]:
    """Shares of scored queries whose pool the gate sent back to the first stage, and whose
    pool got the blend of v1 and the first stage (the zone at the gate's edge)."""
    weights = np.array([w for p in pipes for w in p.trust.values()])
    if not len(weights):
        return 0.0, 0.0
    return float(np.mean(weights == 0)), float(np.mean((weights > 0) & (weights < 1)))


def evaluate(ctx: Context, seeds: list[int], variants: dict) -> dict:
    """Each variant's summary, its paired difference with fusion, and its gate share."""
    fusion = run_seeds(ctx, "fusion", "turn", seeds)
    out = {"fusion": {"summary": summarise(ctx.task, "fusion", "turn", fusion)}}
    for name, make in variants.items():
        pipes: list[FirstStage] = []

        def build(seed: int, make=make, pipes=pipes) -> FirstStage:
            pipes.append(make(seed))
            return pipes[-1]

        runs = run_seeds(ctx, name, "turn", seeds, make=build)
        gated, blended = gate_share(pipes)
        out[name] = {"summary": summarise(ctx.task, name, "turn", runs),
                     "vs_fusion": compare(ctx.task, runs, fusion),
                     "gated_share": gated, "blend_share": blended}
        print(f"  {ctx.task.name} {name}: " + ", ".join(
            f"{m} {out[name]['summary']['metrics'][m]:.3f} "
            f"({out[name]['vs_fusion'][m]['diff']:+.3f})" for m in SHOWN)
            + f", gated {gated:.1%}, blended {blended:.1%}", flush=True)
    return out


def train_lodo(root: Path, dataset: str, seed: int) -> Path:
    path = root / dataset / f"v1-seed{seed}.pt"
    if not path.is_file():
        subprocess.run([sys.executable, "-m", "memsieve", "train", "v1", "--seed", str(seed),
                        "--exclude", dataset, "--out", str(path), "--no-progress"], check=True)
    return path


def table(results: dict, rows: list[str]) -> str:
    head = "| dataset | pipeline | " + " | ".join(SHOWN) + " | " + " | ".join(
        f"{m} − fusion [CI95]" for m in SHOWN) + " | gated | blended |"
    lines = [head, "|" + "---|" * (4 + 2 * len(SHOWN))]
    for ds, res in results.items():
        for name in rows:
            if name not in res:
                continue
            r = res[name]
            cells = [f"{r['summary']['metrics'][m]:.3f}" for m in SHOWN]
            if "vs_fusion" in r:
                cells += [f"{r['vs_fusion'][m]['diff']:+.3f} [{r['vs_fusion'][m]['ci95'][0]:+.3f}, "
                          f"{r['vs_fusion'][m]['ci95'][1]:+.3f}]" for m in SHOWN]
                cells += [f"{r['gated_share']:.1%}", f"{r.get('blend_share', 0.0):.1%}"]
            else:
                cells += [""] * (len(SHOWN) + 2)
            lines.append(f"| {ds} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("main", "lodo"), default="main")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--seeds", default="7,11,23,31,47")
    ap.add_argument("--weights", type=Path, default=None, help="folder of v1/v2-seed{S}.pt")
    ap.add_argument("--lodo-dir", type=Path, default=Path("/tmp/memsieve-lodo"))
    ap.add_argument("--train", action="store_true", help="train missing LODO checkpoints")
    ap.add_argument("--no-v2", action="store_true", help="skip the cross-encoder (faster)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    encoder = get_encoder("minilm")
    results = {}
    for ds in args.datasets.split(","):
        ctx = Context(load_task(ds), encoder, progress=False)
        try:
            if args.part == "main":
                variants = {
                    "v1_ungated": lambda s: V1Pipeline(weights=args.weights, gate=False),
                    "v1": lambda s: V1Pipeline(weights=args.weights),
                }
                if not args.no_v2:
                    variants["v2 (default)"] = lambda s: V2Pipeline(weights=args.weights)
            else:
                if args.train:
                    for s in seeds:
                        train_lodo(args.lodo_dir, ds, s)
                folder = args.lodo_dir / ds
                variants = {
                    "v1 without D, ungated": lambda s, f=folder: V1Pipeline(weights=f,
                                                                            gate=False),
                    "v1 without D, gated": lambda s, f=folder: V1Pipeline(weights=f),
                }
            results[ds] = evaluate(ctx, seeds, variants)
        finally:
            ctx.close()
    rows = ["fusion", *next(iter(results.values())).keys()]
    print(table(results, list(dict.fromkeys(rows))))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"part": args.part, "seeds": seeds, "results": results,
                                         "machine": machine()}, indent=1, default=float))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
