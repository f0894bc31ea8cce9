"""Report pieces: a GitHub markdown table and two PNG plots (quality vs latency, per category).

The plots use matplotlib's object-oriented ``Figure`` API with the Agg canvas: they need no
display and never change the global pyplot backend or state, and nothing is left open.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from memsieve.errors import ConfigError

_MISSING = "—"
_DPI = 120


def _fmt_number(x: Any, fmt: str) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, Integral):
        return str(int(x))
    return fmt.format(float(x))


def _cell(value: Any, fmt: str) -> str:
    """Markdown text of one cell (see ``markdown_table``)."""
    if value is None:
        return _MISSING
    if isinstance(value, str):
        return value.replace("|", "\\|").replace("\n", " ")
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, Real) for v in value):
        return f"{fmt.format(float(value[0]))} ± {fmt.format(float(value[1]))}"
    if isinstance(value, Real):
        return _fmt_number(value, fmt)
    if isinstance(value, Sequence) or getattr(value, "ndim", 0) == 1:
        seq = list(value)
        if len(seq) == 2 and all(isinstance(v, Real) for v in seq):
            return f"[{float(seq[0]):.3f}, {float(seq[1]):.3f}]"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict], columns: list[str], *, fmt: str = "{:.3f}") -> str:
    """Render rows as a GitHub markdown table.

    Cells: a ``(mean, std)`` tuple prints as ``"0.512 ± 0.010"`` (both with ``fmt``); a float
    with ``fmt``; an int as is; a ``[lo, hi]`` list (a CI) as ``"[0.500, 0.530]"`` (3
    decimals); a string as is (``|`` escaped); a missing key or ``None`` as ``"—"``.

    Args:
        rows: one dict per table row, column name -> value.
        columns: the columns to show, in order (also the header).
        fmt: format of floats and of the parts of ``(mean, std)`` tuples.

    Returns:
        The table, lines joined by ``"\\n"``, with a trailing newline.

    Raises:
        ConfigError: no columns.
    """
    if not columns:
        raise ConfigError("markdown_table needs at least one column")
    lines = [
        "| " + " | ".join(_cell(c, fmt) for c in columns) + " |",
        "| " + " | ".join("---" for _ in columns) + " |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c), fmt) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _value(x: Any) -> tuple[float, float | None]:
    """(value, std or None) of a float or a (mean, std) tuple."""
    if isinstance(x, tuple) and len(x) == 2:
        return float(x[0]), float(x[1])
    return float(x), None


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: str | os.PathLike[str]) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=_DPI, format="png")
    fig.clear()
    return out


def _label(point: Mapping[str, Any], i: int) -> str:
    for key in ("pipeline", "name", "label"):
        if point.get(key) is not None:
            return str(point[key])
    raise ConfigError(f"point {i} has no 'pipeline' (or 'name', 'label') key to label it")


def plot_quality_latency(
    points: list[dict], path: str | os.PathLike[str], *, metric: str = "MRR"
) -> Path:
    """Scatter of quality vs latency, one labelled point per pipeline; saves a PNG.

    Args:
        points: one dict per pipeline with ``"pipeline"`` (the label; ``"name"`` or ``"label"``
            also work), ``"latency_ms"`` (total ms per query, > 0; the x axis is log scale),
            ``metric`` (the mean, a float or a ``(mean, std)`` tuple) and optionally
            ``"ci95"`` (``[lo, hi]``, drawn as an error bar).
        path: where to write the PNG (parent folders are created).
        metric: the key of the quality value, also used in the title and axis label.

    Returns:
        The path written.

    Raises:
        ConfigError: no points, or a point missing a key or with a latency <= 0.
    """
    if not points:
        raise ConfigError("plot_quality_latency: no points to plot")
    parsed = []
    for i, point in enumerate(points):
        label = _label(point, i)
        for key in ("latency_ms", metric):
            if point.get(key) is None:
                raise ConfigError(f"point {i} ({label!r}) has no {key!r} value")
        x = float(point["latency_ms"])
        if not x > 0 or math.isinf(x):
            raise ConfigError(f"point {i} ({label!r}): latency_ms must be > 0 for a log axis")
        y, _ = _value(point[metric])
        ci = point.get("ci95")
        parsed.append((label, x, y, None if ci is None else (float(ci[0]), float(ci[1]))))

    fig = _figure(7.0, 4.8)
    ax = fig.add_subplot()
    for n, (label, x, y, ci) in enumerate(parsed):
        color = f"C{n % 10}"
        if ci is not None:
            yerr = [[max(0.0, y - ci[0])], [max(0.0, ci[1] - y)]]
            ax.errorbar([x], [y], yerr=yerr, fmt="o", color=color, capsize=4, markersize=6)
        else:
            ax.plot([x], [y], "o", color=color, markersize=6)
        ax.annotate(label, (x, y), xytext=(6, 6), textcoords="offset points", fontsize=9)
    ax.set_xscale("log")
    ax.set_xlabel("latency (total ms per query, log scale)")
    ax.set_ylabel(f"{metric} (mean over queries)")
    ax.set_title(f"Quality vs latency: {metric}")
    ax.grid(True, which="both", alpha=0.3)
    ax.margins(x=0.15, y=0.1)
    return _save(fig, path)


def plot_per_category(
    per_category: dict[str, dict[str, dict[str, float]]],
    path: str | os.PathLike[str],
    *,
    metric: str = "R@10",
    value_labels: bool = False,
) -> Path:
    """Grouped bar chart: one group per category, one bar per pipeline; saves a PNG.

    Args:
        per_category: pipeline -> category -> metric -> value (a float, or a ``(mean, std)``
            tuple drawn with an error bar). Pipelines keep the order given; categories are in
            order of first appearance. A missing value leaves its bar out.
        path: where to write the PNG (parent folders are created).
        metric: the metric to plot.
        value_labels: write each bar's value above it.

    Returns:
        The path written.

    Raises:
        ConfigError: no pipelines, no categories, or ``metric`` present nowhere.
    """
    if not per_category:
        raise ConfigError("plot_per_category: no pipelines to plot")
    categories: list[str] = []
    for cats in per_category.values():
        for cat in cats:
            if cat not in categories:
                categories.append(cat)
    if not categories:
        raise ConfigError("plot_per_category: no categories to plot")
    if not any(metric in m for cats in per_category.values() for m in cats.values()):
        raise ConfigError(f"plot_per_category: metric {metric!r} is in no category")

    pipelines = list(per_category)
    width = 0.8 / len(pipelines)
    fig = _figure(max(6.0, 1.0 + 0.9 * len(categories) * max(1, len(pipelines) / 3)), 4.8)
    ax = fig.add_subplot()
    for n, pipeline in enumerate(pipelines):
        heights: list[float] = []
        errs: list[float | None] = []
        xs: list[float] = []
        for c, cat in enumerate(categories):
            raw = per_category[pipeline].get(cat, {}).get(metric)
            if raw is None:
                continue
            y, std = _value(raw)
            xs.append(c - 0.4 + width * (n + 0.5))
            heights.append(y)
            errs.append(std)
        ax.bar(xs, heights, width=width, label=pipeline, color=f"C{n % 10}")
        with_std = [(x, y, e) for x, y, e in zip(xs, heights, errs, strict=True) if e is not None]
        if with_std:
            ex, ey, ee = zip(*with_std, strict=True)
            ax.errorbar(ex, ey, yerr=ee, fmt="none", ecolor="black", capsize=3, linewidth=1)
        if value_labels:
            for x, y, e in zip(xs, heights, errs, strict=True):
                top = y + (e or 0.0)
                ax.annotate(
                    f"{y:.2f}",
                    (x, top),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
    ax.set_xticks(range(len(categories)))
    long = max(len(c) for c in categories) > 10 or len(categories) > 6
    ax.set_xticklabels(categories, rotation=25 if long else 0, ha="right" if long else "center")
    ax.set_xlabel("category")
    ax.set_ylabel(f"{metric} (mean over queries)")
    ax.set_title(f"{metric} per category")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)
