"""Tables and plots for RESULTS.md from the eval JSONs: python benchmarks/make_tables.py [DIR]

Prints Markdown tables (mean ± std over seeds, pooled bootstrap CI95, median ms/query) and the
paired comparisons; writes quality-vs-latency and per-category PNGs into DIR.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memsieve.eval.metrics import METRICS
from memsieve.eval.report import markdown_table, plot_per_category, plot_quality_latency


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "results")
    results = [json.loads(p.read_text()) for p in sorted(root.glob("*.json"))]
    seen = {}
    for r in results:  # one row per (dataset, level, pipeline); comparisons kept apart
        seen.setdefault((r["dataset"], r["level"], r["pipeline"]), r)
    for dataset in ("locomo", "longmemeval", "rhelm"):
        for level in ("turn", "session"):
            rows = [r for (d, lv, _), r in seen.items() if d == dataset and lv == level]
            if not rows:
                continue
            print(f"\n### {dataset}, {level} level ({rows[0]['n_queries']} test rows over "
                  f"seeds {rows[0]['seeds']})\n")
            table = []
            for r in rows:
                row = {"pipeline": r["pipeline"]}
                for m in METRICS:
                    row[m] = (r["metrics"][m], r["metrics_std"][m])
                row["MRR CI95"] = r["ci95"]["MRR"]
                row["R@10 CI95"] = r["ci95"]["R@10"]
                row["ms/query"] = r["latency_ms"]["total"]
                alphas = [p["alpha"] for p in r["params"] if "alpha" in p]
                row["α (train)"] = ", ".join(f"{a:.2f}" for a in alphas) if alphas else "—"
                table.append(row)
            print(markdown_table(table, ["pipeline", *METRICS, "R@10 CI95", "MRR CI95",
                                         "ms/query", "α (train)"]))
            comps = [r for r in results if r["dataset"] == dataset and r["level"] == level
                     and "compare" in r]
            if comps:
                crow = []
                for r in comps:
                    for m in ("R@10", "H@1", "MRR", "NDCG@5"):
                        d = r["compare"]["diff"][m]
                        crow.append({"comparison": f"{r['pipeline']} − {r['compare']['pipeline']}",
                                     "metric": m, "diff": d["diff"], "CI95": d["ci95"],
                                     "p": d["p"]})
                print()
                print(markdown_table(crow, ["comparison", "metric", "diff", "CI95", "p"]))
            points = [{"pipeline": r["pipeline"], "latency_ms": max(r["latency_ms"]["total"], 0.01),
                       "MRR": r["metrics"]["MRR"], "ci95": r["ci95"]["MRR"]} for r in rows]
            plot_quality_latency(points, root / f"{dataset}_{level}_quality_latency.png",
                                 metric="MRR")
            per_cat = {r["pipeline"]: r["per_category"] for r in rows}
            plot_per_category(per_cat, root / f"{dataset}_{level}_per_category.png",
                              metric="R@10" if level == "turn" else "H@1")


if __name__ == "__main__":
    main()
