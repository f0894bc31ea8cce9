"""Rerankers on every kind of memory we have: fusion, v1, v2 (the default) per dataset, the
leave-one-dataset-out table, and what v1's gate does (issue 12).

    .venv/bin/python benchmarks/bench_domains.py --json benchmarks/results/domains/domains.json
    .venv/bin/python benchmarks/bench_domains.py --part lodo --lodo-dir /tmp/lodo --train \\
        --json benchmarks/results/domains/lodo.json
    .venv/bin/python benchmarks/bench_domains.py --part zone --seeds 11,23,31,47 \\
        --lodo-dir /tmp/lodo --json benchmarks/results/domains/zone.json
    .venv/bin/python benchmarks/bench_domains.py --part length \\
        --json benchmarks/results/domains/v2_reading.json

Datasets: LoCoMo, RHELM, the LongMemEval sample and Memora (weekly, current-evidence turns as
gold), each at turn level from its default path under ../shared/data; ``--datasets`` can add
``locomo_plus`` (LoCoMo-Plus, a kind no checkpoint trains on and no rule was chosen on). For
each split seed S the pipelines are fitted on S's train half and scored on S's test half
(PROTOCOL.md); ``v1-seed{S}.pt`` and ``v2-seed{S}.pt`` never saw a test half (the eval
refuses one that did).

- ``--part main``: fusion, v1 without its gate, v1 (gated, as shipped), v2 = v1 + the
  cross-encoder (the default pipeline), with paired bootstrap CIs against fusion, and the shares
  of test queries the gate sent back to the first stage and gave the blend.
- ``--part lodo``: for each dataset D and seed S, a v1 trained on the train halves of the
  other datasets only (``memsieve train v1 --seed S --exclude D --out DIR/D/v1-seed{S}.pt``;
  ``--train`` runs the missing ones), scored on D's test half with and without its gate.
- ``--part zone``: how the gate's trust zone (``TRUST``, ``BLEND`` in ``rerank/gate.py``) was
  chosen, on train halves only: for each rule of a grid, v1's gain over fusion on each
  dataset's validation groups under the seed checkpoints (in kind) and on its train half under
  the checkpoints that left it out (unseen kind). The rule: among those no worse than
  ``ZONE_TOL`` below fusion in MRR and R@10 on every unseen kind, the best mean in-kind MRR.
- ``--part length``: how v2 reads a pool of each kind (``READING`` in ``rerank/cross.py``)
  was chosen, on train halves only: v2's top-10 MRR at each length of ``LENGTH_GRID``, each
  turn cut from its start or to its sentences nearest the query (``w``), on the seed
  checkpoints' validation groups (the pools v1 trusts), grouped by the gate's nearest training
  kind (what the product knows at query time); per kind the best mean, ties to the shorter
  (the cheaper) length, then to the plain cut.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from memsieve.embed import get_encoder
from memsieve.eval.datasets import load_task, split
from memsieve.eval.harness import (
    Context,
    FirstStage,
    compare,
    machine,
    ranked_run,
    run_seeds,
    summarise,
)
from memsieve.eval.metrics import per_query
from memsieve.rerank.cross import LENGTH_GRID, PROTECTED
from memsieve.rerank.eval_pipeline import V1Pipeline, V2Pipeline
from memsieve.rerank.gate import blend, zone_shares, zone_weight
from memsieve.rerank.learned import gate_of

DATASETS = ("locomo", "rhelm", "longmemeval", "memora")
SHOWN = ("R@10", "H@1", "MRR")
ZONE_GRID = [(t, b) for t in (0.8, 0.85, 0.9, 0.95) for b in (0.0, 0.3, 0.5, 0.7)] + [(0.99, 0.0)]
ZONE_TOL = 0.005


def gate_share(pipes: list[V1Pipeline]) -> tuple[float, float]:
    """Shares of scored queries whose pool the gate sent back to the first stage, and whose
    pool got the blend of v1 and the first stage (the zone at the gate's edge)."""
    shares = zone_shares([w for p in pipes for w in p.trust.values()])
    return shares["first_stage"], shares["blended"]


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


def fitted(ctx: Context, pipe: V1Pipeline, seed: int) -> list:
    """Fit ``pipe`` on the headline queries of split ``seed``'s train half (as the harness
    does) and return them."""
    head, train_groups = set(ctx.task.headline), set(split(ctx.task.groups, seed)[0])
    train = [q for q in ctx.task.queries
             if q.namespace in train_groups and (not head or q.category in head)]
    pipe.fit(ctx, train, seed)
    return train


def zone_pools(ctx: Context, seeds: list[int], folder: Path | None, *,
               val_only: bool) -> list[tuple]:
    """(query, first-stage ids, v1 scores, gate ratios, gate) for each headline query of the
    seeds' train halves (only the checkpoint's validation groups with ``val_only``), under the
    seed checkpoints in ``folder`` (None: the packaged ones)."""
    out = []
    for seed in seeds:
        pipe = V1Pipeline(weights=folder, gate=False)
        train = fitted(ctx, pipe, seed)
        gate = gate_of(pipe.config)
        val = set(pipe.config["val_groups"].get(ctx.task.name, [])) if val_only else None
        for q in train:
            if val is not None and q.namespace not in val:
                continue
            first = FirstStage.rank(pipe, ctx, q)
            feats = pipe.features(ctx, q, first)[1]
            out.append((q, first.ids, pipe.model.score_pool(feats.q, feats.m, feats.x),
                        gate.ratios(feats.x), gate))
    return out


def zone_gains(pools: list[tuple]) -> dict[str, dict[str, float]]:
    """Per grid rule: mean gain over fusion in R@10, H@1 and MRR."""
    # keyed by position: a query is in the train half of several seeds
    qrels = {str(k): q.gold for k, (q, *_) in enumerate(pools)}
    base = per_query(qrels, {str(k): ranked_run(ids) for k, (_, ids, *_) in enumerate(pools)},
                     list(SHOWN))
    inner: dict[tuple[int, float], dict[str, float]] = {}
    out = {}
    for trust, weight in ZONE_GRID:
        run = {}
        for k, (_, ids, v1, ratios, gate) in enumerate(pools):
            if (id(gate), trust) not in inner:
                inner[(id(gate), trust)] = gate.inner_at(trust)
            key = blend(v1, zone_weight(ratios, inner[(id(gate), trust)], weight))
            run[str(k)] = ranked_run([ids[i] for i in np.argsort(-key, kind="stable")])
        values = per_query(qrels, run, list(SHOWN))
        out[f"{trust}/{weight}"] = {m: float((values[m] - base[m]).mean()) for m in SHOWN}
    return out


def choose_zone(gains: dict) -> str:
    """The rule ``--part zone`` reports (see the module docstring)."""
    def worst(rule: str) -> float:
        return min(min(g[rule]["R@10"], g[rule]["MRR"]) for g in gains["unseen"].values())

    def in_kind(rule: str) -> float:
        return float(np.mean([g[rule]["MRR"] for g in gains["in_kind"].values()]))

    rules = [f"{t}/{b}" for t, b in ZONE_GRID]
    safe = [r for r in rules if worst(r) >= -ZONE_TOL]
    return max(safe, key=in_kind) if safe else max(rules, key=worst)


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
    ap.add_argument("--part", choices=("main", "lodo", "zone", "length"), default="main")
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
    if args.part == "zone":
        return zone(args, seeds, encoder)
    if args.part == "length":
        return length(args, seeds, encoder)
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


def zone(args: argparse.Namespace, seeds: list[int], encoder) -> None:
    gains: dict[str, dict] = {"in_kind": {}, "unseen": {}}
    for ds in args.datasets.split(","):
        ctx = Context(load_task(ds), encoder, progress=False)
        try:
            gains["in_kind"][ds] = zone_gains(zone_pools(ctx, seeds, args.weights,
                                                         val_only=True))
            gains["unseen"][ds] = zone_gains(zone_pools(ctx, seeds, args.lodo_dir / ds,
                                                        val_only=False))
        finally:
            ctx.close()
        print(f"  {ds} done", flush=True)
    names = list(gains["in_kind"])
    print("| TRUST / BLEND | " + " | ".join(f"in kind {d} MRR" for d in names) + " | "
          + " | ".join(f"unseen {d} R@10 / MRR" for d in names) + " |")
    print("|---|" + "---|" * (2 * len(names)))
    for t, b in ZONE_GRID:
        r = f"{t}/{b}"
        print(f"| {r} | " + " | ".join(f"{gains['in_kind'][d][r]['MRR']:+.3f}" for d in names)
              + " | " + " | ".join(f"{gains['unseen'][d][r]['R@10']:+.3f} / "
                                   f"{gains['unseen'][d][r]['MRR']:+.3f}" for d in names) + " |")
    chosen = choose_zone(gains)
    print(f"chosen: TRUST / BLEND = {chosen}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"part": "zone", "seeds": seeds, "tol": ZONE_TOL,
                                         "gains": gains, "chosen": chosen,
                                         "machine": machine()}, indent=1))
        print(f"wrote {args.json}")


def length(args: argparse.Namespace, seeds: list[int], encoder) -> None:
    """``--part length`` (see the module docstring)."""
    rrs: dict[str, dict[str, list[float]]] = {}
    for ds in args.datasets.split(","):
        ctx = Context(load_task(ds), encoder, progress=False)
        try:
            for seed in seeds:
                pipe = V2Pipeline(weights=args.weights)
                train = fitted(ctx, pipe, seed)
                val = set(pipe.config["val_groups"].get(ds, []))
                for q in train:
                    if q.namespace not in val:
                        continue
                    first, v1 = pipe.rank_scored(ctx, q)
                    if pipe.trust[q.qid] < 1:
                        continue  # v2 reorders trusted pools only
                    kind = pipe.nearest.get(q.qid, ds)
                    ids = first.ids[:PROTECTED]
                    texts = [pipe.namespace_texts(ctx, q.namespace)[i] for i in ids]
                    row = rrs.setdefault(kind, {})
                    row.setdefault("v1", []).append(_rr(range(len(ids)), ids, q.gold))
                    for n, window in READINGS:
                        pipe.cross.readings = {kind: (n, window)}
                        order = pipe.cross.reorder(q.text, texts, v1[: len(ids)], kind=kind)[0]
                        row.setdefault(_name(n, window), []).append(_rr(order, ids, q.gold))
        finally:
            ctx.close()
        print(f"  {ds} done", flush=True)
    names = [_name(n, w) for n, w in READINGS]
    print("| nearest kind | lists | v1 | " + " | ".join(f"v2 at {n}" for n in names)
          + " | chosen |")
    print("|---|---|---|" + "---|" * (len(names) + 1))
    chosen = {}
    for kind, row in sorted(rrs.items()):
        means = {_name(n, w): float(np.mean(row[_name(n, w)])) for n, w in READINGS}
        best = max(READINGS, key=lambda r: (round(means[_name(*r)], 6), -r[0], not r[1]))
        chosen[kind] = _name(*best)
        print(f"| {kind} | {len(row['v1'])} | {np.mean(row['v1']):.4f} | "
              + " | ".join(f"{means[n]:.4f}" for n in names) + f" | {chosen[kind]} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        mrr = {kind: {"lists": len(row["v1"]), **{k: float(np.mean(v)) for k, v in row.items()}}
               for kind, row in rrs.items()}
        args.json.write_text(json.dumps({"part": "length", "seeds": seeds, "mrr_top10": mrr,
                                         "chosen": chosen, "machine": machine()}, indent=1))
        print(f"wrote {args.json}")


READINGS = [(n, w) for n in LENGTH_GRID for w in (False, True)]


def _name(length: int, window: bool) -> str:
    """A reading's column: ``64`` (each turn's first tokens) or ``64w`` (its sentences nearest
    the query)."""
    return f"{length}w" if window else str(length)


def _rr(order, ids: list[str], gold) -> float:
    """Reciprocal rank of the first gold id in ``ids`` read in ``order`` (0: none)."""
    return next((1.0 / (r + 1) for r, i in enumerate(order) if ids[i] in gold), 0.0)


if __name__ == "__main__":
    main()
