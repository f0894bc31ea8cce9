"""Access modes on LoCoMo: evidence recall inside a token budget, per mode and category.

    .venv/bin/python benchmarks/bench_context.py [--budgets 300,600,1200] \
        [--seeds 7,11,23,31,47] [--json OUT] [--plot PNG] [--write-rule] \
        [--rows ROWS.json | --from-rows ROWS.json]

Every query is retrieved once (fusion first stage, MiniLM; rerank and validity off, so the modes
are compared on the same ranking), then assembled by ``topk`` (plain whole turns in rank
order: the baseline), ``lookup``, ``compose`` and ``replay`` at each budget. Evidence recall =
the share of the query's gold turns that reach the context (a turn counts when any of its text
is in: one of its units, the whole turn, or the turn as a replayed neighbour).

``auto`` is fitted per split seed on the train half's conversations only (``AutoRule.fit``:
the best mode per budget and query-feature bucket) and scored on the test half. Reported per
budget and category: mean over seeds of the test-half means, and paired bootstrap CIs (test
queries of all seeds pooled) of auto minus each single mode and of each mode minus topk.
``--write-rule`` stores the rule fitted on seed 7's train half as the packaged default.

It also checks the admissibility contract on LoCoMo (all memories current, no policy):
``annotate`` and ``enforce`` leave every query's ranking exactly as without the stage.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memsieve.admissibility import AdmissibilityStage
from memsieve.assemble import Assembler, AutoRule
from memsieve.assemble.context import SINGLE_MODES, query_features
from memsieve.embed import MemoEncoder, get_encoder
from memsieve.eval.datasets import load_task, split
from memsieve.eval.harness import cached_vectors, machine
from memsieve.eval.stats import paired_bootstrap
from memsieve.pipeline import Pipeline
from memsieve.retrieve import Retriever
from memsieve.store import open_store
from memsieve.trace import Trace
from memsieve.types import Query

MODES = ["topk", "lookup", "compose", "replay"]
RULE = Path(__file__).resolve().parents[1] / "src" / "memsieve" / "assemble" / "auto-rule.json"


def score_all(budgets: list[int]) -> tuple[list, dict]:
    """Per query: category, conversation, feature bucket, recall per (budget, mode)."""
    task = load_task("locomo")
    encoder = get_encoder("minilm")
    memo = MemoEncoder(encoder, capacity=4096)
    texts = list(dict.fromkeys(q.text for q in task.queries))
    memo.remember(texts, cached_vectors(encoder, texts, progress=True))
    rows, check = [], {"changed_by_annotate": 0, "changed_by_enforce": 0, "queries": 0}
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "l.db") as store:
        vectors = cached_vectors(encoder, [m.text for m in task.memories], progress=True)
        store.add(task.memories, vectors=vectors, model=encoder.name)
        retriever = Retriever(store, memo, method="fusion")
        pipeline = Pipeline([retriever], store=store)
        assembler = Assembler(pipeline, rule=AutoRule({}))
        gates = {name: AdmissibilityStage(name) for name in ("annotate", "enforce")}
        t0 = time.perf_counter()
        for n, q in enumerate(task.queries):
            query = Query(text=q.text, namespace=q.namespace)
            with store.snapshot():
                cands = pipeline.candidates(query)
                order = [c.memory.id for c in cands]
                for name, gate in gates.items():
                    kept = [c.memory.id for c in gate(query, cands, trace=Trace())]
                    check[f"changed_by_{name}"] += kept != order
                check["queries"] += 1
                recall = {}
                for budget in budgets:
                    for mode in MODES:
                        ctx = assembler.assemble(query, cands, mode=mode, budget=budget)
                        got = set(ctx.memory_ids)
                        recall[f"{budget}/{mode}"] = len(q.gold & got) / len(q.gold)
            rows.append({"qid": q.qid, "category": q.category, "group": q.namespace,
                         "bucket": query_features(q.text, cands), "recall": recall})
            if n % 200 == 0:
                print(f"  {n}/{len(task.queries)} queries, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr)
    return rows, check | {"groups": task.groups}


def latency(n: int = 100) -> dict:
    """p50 ms over ``n`` LoCoMo questions of one conversation: the first stage alone, with the
    admissibility stage (annotate) on its 500-pool, each mode's assembly of the top 50 at a
    600-token budget, and recording one exposure."""
    task = load_task("locomo")
    conv = task.groups[0]
    encoder = get_encoder("minilm")
    memo = MemoEncoder(encoder, capacity=4096)
    queries = [q for q in task.queries if q.namespace == conv][:n]
    texts = [q.text for q in queries]
    memo.remember(texts, encoder.encode(texts))
    mems = [m for m in task.memories if m.namespace == conv]
    times: dict[str, list[float]] = {}

    def timed(name, fn, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        times.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
        return out

    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "l.db") as store:
        store.add(mems, vectors=encoder.encode([m.text for m in mems]), model=encoder.name)
        retriever = Retriever(store, memo, method="fusion")
        plain = Pipeline([retriever], store=store)
        gated = Pipeline([retriever, AdmissibilityStage("annotate")], store=store)
        assembler = Assembler(gated)
        for q in queries * 2:  # the first pass warms caches; both are timed, medians reported
            query = Query(text=q.text, namespace=q.namespace)
            timed("first stage (pool 500)", plain.candidates, query)
            cands = timed("first stage + admissibility", gated.candidates, query)
            with store.snapshot():
                for mode in MODES + ["auto"]:
                    ctx = timed(f"assemble {mode}", assembler.assemble, query, cands,
                                mode=mode, budget=600)
            timed("record exposure", assembler.record, query, ctx)
    return {name: float(np.median(v)) for name, v in times.items()} | {"queries": n}


def fit_rule(rows: list[dict], budgets: list[int], tag: str) -> AutoRule:
    data = [(r["bucket"], b, {m.value: r["recall"][f"{b}/{m.value}"] for m in SINGLE_MODES})
            for r in rows for b in budgets]
    return AutoRule.fit(data, fitted_on=tag)


def study(rows: list[dict], groups: list[str], budgets: list[int], seeds: list[int]) -> dict:
    cats = sorted({r["category"] for r in rows})
    per_seed: dict[str, list[float]] = {}
    pooled: dict[str, list[float]] = {}
    rules = {}
    for seed in seeds:
        train, test = split(groups, seed)
        rule = fit_rule([r for r in rows if r["group"] in train], budgets,
                        f"locomo train half of split seed {seed}")
        rules[seed] = rule.table
        test_rows = [r for r in rows if r["group"] in set(test)]
        for b in budgets:
            for r in test_rows:
                chosen = rule.choose(r["bucket"], b).value
                r["recall"][f"{b}/auto@{seed}"] = r["recall"][f"{b}/{chosen}"]
            for cat in cats + ["all"]:
                sel = [r for r in test_rows if cat in ("all", r["category"])]
                for mode in MODES + ["auto"]:
                    key = f"{b}/{mode}" if mode != "auto" else f"{b}/auto@{seed}"
                    vals = [r["recall"][key] for r in sel]
                    per_seed.setdefault(f"{b}|{cat}|{mode}", []).append(float(np.mean(vals)))
                    pooled.setdefault(f"{b}|{cat}|{mode}", []).extend(vals)
    table: dict = {}
    for key, vals in per_seed.items():
        b, cat, mode = key.split("|")
        table.setdefault(b, {}).setdefault(cat, {})[mode] = {
            "mean": float(np.mean(vals)), "std": float(np.std(vals)),
            "n": len(pooled[key]) // len(seeds)}
    diffs: dict = {}
    for b in map(str, budgets):
        for cat in cats + ["all"]:
            auto = pooled[f"{b}|{cat}|auto"]
            entry = {}
            for mode in MODES:
                base = pooled[f"{b}|{cat}|{mode}"]
                entry[f"auto-{mode}"] = paired_bootstrap(auto, base, n_resamples=2000)
                if mode != "topk":
                    entry[f"{mode}-topk"] = paired_bootstrap(base, pooled[f"{b}|{cat}|topk"],
                                                             n_resamples=2000)
            diffs.setdefault(b, {})[cat] = entry
    return {"budgets": budgets, "seeds": seeds, "recall": table, "diff": diffs,
            "rules": {str(s): t for s, t in rules.items()}}


def markdown(result: dict) -> str:
    lines = []
    for b in map(str, result["budgets"]):
        lines.append(f"\n**Budget {b} tokens** (evidence recall, test halves, mean over seeds; "
                     "auto − best single mode with its 95% CI)\n")
        lines.append("| category | n | topk | lookup | compose | replay | auto | auto − best |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for cat, modes in sorted(result["recall"][b].items(), key=lambda kv: kv[0] == "all"):
            best = max(("lookup", "compose", "replay"), key=lambda m: modes[m]["mean"])
            d = result["diff"][b][cat][f"auto-{best}"]
            cells = " | ".join(f"{modes[m]['mean']:.3f}" for m in MODES + ["auto"])
            lines.append(f"| {cat} | {modes['auto']['n']} | {cells} | {d['diff']:+.3f} "
                         f"[{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] ({best}) |")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    budgets = result["budgets"]
    for mode in MODES + ["auto"]:
        ys = [result["recall"][str(b)]["all"][mode]["mean"] for b in budgets]
        ax.plot(budgets, ys, marker="o", label=mode)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_xlabel("token budget")
    ax.set_ylabel("evidence recall (LoCoMo, test halves)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budgets", default="300,600,1200")
    ap.add_argument("--seeds", default="7,11,23,31,47")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--write-rule", action="store_true")
    ap.add_argument("--rows", type=Path, help="save the per-query recalls here")
    ap.add_argument("--from-rows", type=Path, help="refit and report from saved recalls")
    ap.add_argument("--latency-only", action="store_true", help="only the timing part")
    args = ap.parse_args()
    if args.latency_only:
        print(json.dumps(latency() | {"machine": machine()}, indent=1))
        return
    budgets = [int(b) for b in args.budgets.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.from_rows:
        saved = json.loads(args.from_rows.read_text())
        rows, check = saved["rows"], saved["check"]
    else:
        rows, check = score_all(budgets)
        if args.rows:
            args.rows.write_text(json.dumps({"rows": rows, "check": check}))
    groups = check.pop("groups")
    result = study(rows, groups, budgets, seeds) | {"admissibility_check": check,
                                                     "machine": machine()}
    print(markdown(result))
    print(f"\nadmissibility on LoCoMo: {check}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.plot:
        plot(result, args.plot)
    if args.write_rule:
        train, _ = split(groups, 7)
        rule = fit_rule([r for r in rows if r["group"] in train], budgets,
                        "locomo train half of split seed 7 (conversations "
                        + ", ".join(sorted(train)) + ")")
        RULE.write_text(rule.to_json() + "\n")
        print(f"wrote {RULE}")


if __name__ == "__main__":
    main()
