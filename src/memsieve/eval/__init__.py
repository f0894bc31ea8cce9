"""The evaluation harness: datasets, metrics (ranx), bootstrap statistics, reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memsieve.embed import Encoder


def evaluate(
    dataset: str,
    data: str | Path | None,
    pipelines: Sequence[str],
    *,
    level: str = "turn",
    seeds: Sequence[int] = (7, 11, 23, 31, 47),
    encoder_factory: Callable[[], Encoder],
    progress: bool = True,
) -> dict:
    """Evaluate ``pipelines[0]`` (and compare it with ``pipelines[1]`` if given).

    Returns the fixed result schema of benchmarks/PROTOCOL.md; with two pipelines, the key
    ``compare`` holds the second pipeline's result and the paired bootstrap of the difference.
    """
    from memsieve.eval.datasets import load_task
    from memsieve.eval.harness import Context, compare, get_pipeline, run_seeds, summarise

    for name in pipelines:  # fail on a bad name before any work
        get_pipeline(name, level)
    task = load_task(dataset, data)
    ctx = Context(task, encoder_factory(), progress=progress)
    try:
        runs = [run_seeds(ctx, name, level, seeds) for name in pipelines]
        result = summarise(task, pipelines[0], level, runs[0])
        if len(runs) > 1:
            result["compare"] = {
                "pipeline": pipelines[1],
                "result": summarise(task, pipelines[1], level, runs[1]),
                "diff": compare(task, runs[0], runs[1]),
            }
        return result
    finally:
        ctx.close()


__all__ = ["evaluate"]
