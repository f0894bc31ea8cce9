"""Markdown table formatting and the two PNG plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memsieve.errors import ConfigError
from memsieve.eval.report import markdown_table, plot_per_category, plot_quality_latency

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_markdown_table_formats_cells() -> None:
    rows = [
        {"pipeline": "bm25", "MRR": (0.5123, 0.0104), "R@10": 0.81234, "ci": [0.5, 0.53], "n": 500},
        {"pipeline": "a|b", "MRR": np.float64(0.25), "ci": (0.1, 0.2, 0.3), "n": np.int64(7)},
    ]
    table = markdown_table(rows, ["pipeline", "MRR", "R@10", "ci", "n"])
    assert table == (
        "| pipeline | MRR | R@10 | ci | n |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| bm25 | 0.512 ± 0.010 | 0.812 | [0.500, 0.530] | 500 |\n"
        "| a\\|b | 0.250 | — | (0.1, 0.2, 0.3) | 7 |\n"
    )


def test_markdown_table_fmt_and_errors() -> None:
    rows = [{"x": 0.12345, "y": (1.0, 0.5), "ci": np.array([0.1, 0.2])}]
    assert markdown_table(rows, ["x", "y", "ci"], fmt="{:.1f}").splitlines()[2] == (
        "| 0.1 | 1.0 ± 0.5 | [0.100, 0.200] |"
    )
    assert markdown_table([], ["a"]) == "| a |\n| --- |\n"
    with pytest.raises(ConfigError):
        markdown_table(rows, [])


POINTS = [
    {"pipeline": "bm25", "latency_ms": 1.5, "MRR": 0.41, "ci95": [0.38, 0.44]},
    {"pipeline": "hybrid", "latency_ms": 12.0, "MRR": (0.52, 0.01)},
    {"pipeline": "full", "latency_ms": 80.0, "MRR": 0.55, "ci95": [0.52, 0.58]},
]


def _assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC)


def test_plot_quality_latency_writes_png(tmp_path: Path) -> None:
    out = plot_quality_latency(POINTS, tmp_path / "sub" / "ql.png", metric="MRR")
    assert out == tmp_path / "sub" / "ql.png"
    _assert_png(out)


def test_plot_quality_latency_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        plot_quality_latency([], tmp_path / "x.png")
    with pytest.raises(ConfigError, match="'R@10'"):
        plot_quality_latency(POINTS, tmp_path / "x.png", metric="R@10")
    with pytest.raises(ConfigError, match="latency"):
        plot_quality_latency([{"pipeline": "p", "latency_ms": 0.0, "MRR": 0.1}], tmp_path / "x.png")
    with pytest.raises(ConfigError, match="pipeline"):
        plot_quality_latency([{"latency_ms": 1.0, "MRR": 0.1}], tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


PER_CATEGORY = {
    "bm25": {"single-hop": {"R@10": 0.6, "MRR": 0.4}, "multi-hop": {"R@10": 0.3}},
    "hybrid": {"single-hop": {"R@10": (0.7, 0.02)}, "temporal": {"R@10": 0.5}},
}


def test_plot_per_category_writes_png(tmp_path: Path) -> None:
    _assert_png(plot_per_category(PER_CATEGORY, tmp_path / "cat.png", metric="R@10"))
    _assert_png(plot_per_category(PER_CATEGORY, tmp_path / "v.png", value_labels=True))


def test_plot_per_category_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        plot_per_category({}, tmp_path / "x.png")
    with pytest.raises(ConfigError):
        plot_per_category({"bm25": {}}, tmp_path / "x.png")
    with pytest.raises(ConfigError, match="NDCG@5"):
        plot_per_category(PER_CATEGORY, tmp_path / "x.png", metric="NDCG@5")


def test_plots_leave_no_pyplot_figure_open(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot_quality_latency(POINTS, tmp_path / "a.png")
    plot_per_category(PER_CATEGORY, tmp_path / "b.png")
    assert plt.get_fignums() == before
