"""The hand-written natural updates sets are well formed (the benchmark reads them as data)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "natural_updates.jsonl"
FRESH = DATA.with_name("natural_updates_fresh.jsonl")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _check(rows: list[dict], splits: tuple[str, ...]) -> None:
    assert len({r["kind"] for r in rows}) >= 15
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        ids = [t["id"] for t in r["turns"]]
        dates = [t["date"] for t in r["turns"]]
        assert r["target"] in ids and dates == sorted(dates), r["id"]
        assert r["label"] in ("superseded", "current") and r["split"] in splits
        if r["label"] == "superseded":
            assert ids.index(r["superseded_by"]) > ids.index(r["target"]), r["id"]
        else:
            assert r["superseded_by"] is None


def test_natural_updates_are_well_formed_and_split_once():
    rows = _rows(DATA)
    assert len(rows) >= 60
    _check(rows, ("dev", "test"))
    halves = Counter((r["split"], r["label"]) for r in rows)
    for label in ("superseded", "current"):
        assert abs(halves[("dev", label)] - halves[("test", label)]) <= 1


def test_the_fresh_histories_are_well_formed_and_new():
    """40 histories written after the first set's test half had been scored by several
    candidates (split "fresh"); no id is shared with the first set."""
    rows = _rows(FRESH)
    _check(rows, ("fresh",))
    assert Counter(r["label"] for r in rows) == {"superseded": 22, "current": 18}
    assert not {r["id"] for r in rows} & {r["id"] for r in _rows(DATA)}
