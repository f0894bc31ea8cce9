"""``memsieve eval DATASET --pipeline P --level turn|session --seeds ... --json OUT``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.errors import ConfigError


def _seeds(spec: str) -> list[int]:
    try:
        seeds = [int(s) for s in spec.split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"--seeds must be comma-separated integers, got {spec!r}") from None
    if not seeds:
        raise ConfigError("--seeds is empty")
    return seeds


@app.command("eval")
def eval_(
    dataset: Annotated[
        str, typer.Argument(help="locomo, longmemeval, rhelm, memora or locomo_plus.")
    ],
    data: Annotated[Path | None, typer.Option(help="Dataset file or folder.")] = None,
    pipeline: Annotated[str, typer.Option(help="Pipeline to evaluate.")] = "fusion",
    level: Annotated[str, typer.Option(help="turn or session.")] = "turn",
    seeds: Annotated[str, typer.Option(help="Split seeds, comma-separated.")] = "7,11,23,31,47",
    compare: Annotated[str | None, typer.Option(help="Second pipeline for a paired CI.")] = None,
    model: Annotated[str, typer.Option(help="Embedding model.")] = "minilm",
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the result JSON.")] = None,
    report: Annotated[Path | None, typer.Option(help="Write a Markdown report.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write a per-category PNG plot.")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    routes: Annotated[
        str | None,
        typer.Option(help="Route study instead (rhelm): global,namespace support compared at "
                     "matched evidence recall."),
    ] = None,
    k: Annotated[int, typer.Option(help="Route study: ranking depth.", min=1)] = 20,
    tau: Annotated[float, typer.Option(help="Route study: target evidence recall.")] = 0.8,
    hide: Annotated[
        float, typer.Option(help="Route study: share of evaluator labels hidden (unresolved).")
    ] = 0.0,
) -> None:
    """Evaluate a retrieval pipeline on held-out split halves, with bootstrap CIs and latency."""
    from memsieve.embed import get_encoder
    from memsieve.eval import evaluate

    if routes is not None:
        _route_study(dataset, data, routes, model, k, tau, hide, json_out, progress)
        return
    seed_list = _seeds(seeds)
    if level not in ("turn", "session"):
        raise ConfigError(f"--level must be turn or session, got {level!r}")
    result = evaluate(
        dataset,
        data,
        [pipeline] + ([compare] if compare else []),
        level=level,
        seeds=seed_list,
        encoder_factory=lambda: get_encoder(model),
        progress=progress,
    )
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(text + "\n", encoding="utf-8")
    if report:
        from memsieve.eval.summary import markdown_report

        report.write_text(markdown_report(result), encoding="utf-8")
    if plot:
        from memsieve.eval.report import plot_per_category

        per_cat = {result["pipeline"]: result["per_category"]}
        if "compare" in result:
            per_cat[result["compare"]["pipeline"]] = result["compare"]["result"]["per_category"]
        plot_per_category(per_cat, plot, metric="R@10")
    typer.echo(text if not json_out else _headline(result))


def _route_study(dataset: str, data: Path | None, routes: str, model: str, k: int, tau: float,
                 hide: float, json_out: Path | None, progress: bool) -> None:
    from memsieve.embed import get_encoder
    from memsieve.eval.datasets import load_task
    from memsieve.eval.harness import cached_vectors, machine
    from memsieve.eval.routes import route_study

    if dataset != "rhelm":
        raise ConfigError("--routes needs a dataset with dated questions: rhelm")
    names = [r.strip() for r in routes.split(",") if r.strip()]
    task = load_task(dataset, data)
    encoder = get_encoder(model)
    vectors = cached_vectors(encoder, [m.text for m in task.memories], progress=progress)
    texts = list(dict.fromkeys(q.text for q in task.queries))
    qvecs = dict(zip(texts, cached_vectors(encoder, texts, progress=progress), strict=True))
    result = route_study(task, vectors, qvecs, routes=names, k=k, tau=tau, hide=hide)
    result |= {"encoder": encoder.name, "machine": machine()}
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(text + "\n", encoding="utf-8")
        for name, r in result["routes"].items():
            bounds = r.get("bounds") or [float("nan")] * 2
            typer.echo(f"{name:10s} recall@{k} {r[f'recall@{k}']:.3f}  feasibility "
                       f"{r['feasibility']:.3f}  bounds [{bounds[0]:.3f}, {bounds[1]:.3f}]  "
                       f"loss {r['loss']:.3f}  similarity evals {r['similarity_evals']:.0f}")
    else:
        typer.echo(text)


def _headline(result: dict) -> str:
    lines = []
    rows = [result] + ([result["compare"]["result"]] if "compare" in result else [])
    for r in rows:
        m = r["metrics"]
        lines.append(
            f"{r['dataset']} {r['level']} {r['pipeline']}: "
            + "  ".join(f"{k} {m[k]:.3f}" for k in m)
            + f"  ({r['n_queries']} test queries, {r['latency_ms']['total']:.2f} ms/query)"
        )
    if "compare" in result:
        lines.append(
            f"{result['pipeline']} - {result['compare']['pipeline']}: "
            + "  ".join(
                f"{k} {v['diff']:+.3f} [{v['ci95'][0]:+.3f}, {v['ci95'][1]:+.3f}]"
                for k, v in result["compare"]["diff"].items()
            )
        )
    return "\n".join(lines)
