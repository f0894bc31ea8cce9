"""A Markdown report of one evaluation result (the fixed JSON schema)."""

from __future__ import annotations

from memsieve.eval.metrics import METRICS
from memsieve.eval.report import markdown_table


def _row(result: dict) -> dict:
    row = {"pipeline": result["pipeline"], "n": result["n_queries"]}
    for m in METRICS:
        row[m] = (result["metrics"][m], result["metrics_std"][m])
        row[f"{m} CI95"] = result["ci95"][m]
    row["ms/query"] = result["latency_ms"]["total"]
    return row


def markdown_report(result: dict) -> str:
    """Headline table (mean ± std over seeds, pooled CI), per-category table, comparison."""
    results = [result] + ([result["compare"]["result"]] if "compare" in result else [])
    cols = ["pipeline", "n"] + [c for m in METRICS for c in (m, f"{m} CI95")] + ["ms/query"]
    out = [
        f"# {result['dataset']} ({result['level']} level), seeds {result['seeds']}\n",
        f"Headline categories: {result['headline_categories']}; test halves only.\n",
        markdown_table([_row(r) for r in results], cols),
    ]
    for r in results:
        rows = [{"category": c, **v} for c, v in r["per_category"].items()]
        out.append(f"\n## Per category: {r['pipeline']}\n")
        out.append(markdown_table(rows, ["category", "n_queries", *METRICS]))
    if "compare" in result:
        diff = result["compare"]["diff"]
        out.append(f"\n## {result['pipeline']} − {result['compare']['pipeline']} (paired)\n")
        rows = [
            {"metric": m, "diff": v["diff"], "CI95": v["ci95"], "p": v["p"]}
            for m, v in diff.items()
        ]
        out.append(markdown_table(rows, ["metric", "diff", "CI95", "p"]))
    return "\n".join(out) + "\n"
