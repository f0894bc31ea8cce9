"""The hand-written natural updates set is well formed (the benchmark reads it as data)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "natural_updates.jsonl"


def test_natural_updates_are_well_formed_and_split_once():
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 60 and len({r["kind"] for r in rows}) >= 15
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        ids = [t["id"] for t in r["turns"]]
        dates = [t["date"] for t in r["turns"]]
        assert r["target"] in ids and dates == sorted(dates), r["id"]
        assert r["label"] in ("superseded", "current") and r["split"] in ("dev", "test")
        if r["label"] == "superseded":
            assert ids.index(r["superseded_by"]) > ids.index(r["target"]), r["id"]
        else:
            assert r["superseded_by"] is None
    halves = Counter((r["split"], r["label"]) for r in rows)
    for label in ("superseded", "current"):
        assert abs(halves[("dev", label)] - halves[("test", label)]) <= 1
