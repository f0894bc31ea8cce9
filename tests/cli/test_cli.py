"""The CLI through subprocess, as a user runs it: happy paths and every bad-input case."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memsieve.store import open_store


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memsieve", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def memories_file(tmp_path: Path) -> Path:
    rows = [
        {"namespace": "sam", "id": "m1", "text": "Sam: I work as a nurse in Leeds."},
        {"namespace": "sam", "id": "m2", "text": "Sam: My cat is called Pepper."},
        {"namespace": "sam", "id": "m3", "text": "Sam: I moved to York last month."},
        {"namespace": "alex", "id": "a1", "text": "Alex: I am a pilot and my cat is Tom."},
    ]
    path = tmp_path / "mem.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def db(tmp_path: Path, memories_file: Path) -> Path:
    path = tmp_path / "mem.db"
    proc = run(
        "ingest", "jsonl", str(memories_file), "--db", str(path), "--model", "hash", "--no-progress"
    )
    assert proc.returncode == 0, proc.stderr
    assert "ingested 4 memories into 2 namespace(s)" in proc.stderr
    return path


def test_help_lists_commands():
    proc = run("--help")
    assert proc.returncode == 0
    for cmd in ("ingest", "search", "demo", "eval"):
        assert cmd in proc.stdout


def test_search_json(db: Path):
    proc = run(
        "search",
        "what is the cat called",
        "--db",
        str(db),
        "--namespace",
        "sam",
        "--k",
        "2",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["query"] == "what is the cat called"
    assert [r["rank"] for r in out["results"]] == [1, 2]
    assert out["results"][0]["memory_id"] == "m2"
    assert {"rank", "memory_id", "score", "text"} <= set(out["results"][0])
    assert all(r["namespace"] == "sam" for r in out["results"])


def test_search_batch(db: Path, tmp_path: Path):
    q = tmp_path / "q.jsonl"
    q.write_text(
        json.dumps({"query": "where did Sam move to", "namespace": "sam", "k": 1})
        + "\n\n"
        + json.dumps({"query": "cat", "namespace": "alex", "intent": "current"})
        + "\n"
    )
    proc = run("search", "--queries", str(q), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert len(lines) == 2 and len(lines[0]["results"]) == 1
    assert lines[0]["results"][0]["memory_id"] == "m3"
    assert [r["memory_id"] for r in lines[1]["results"]] == ["a1"]


def test_search_plain_text(db: Path):
    proc = run("search", "nurse", "--db", str(db), "--namespace", "sam")
    assert proc.returncode == 0 and "m1" in proc.stdout


def test_unknown_namespace_is_empty_not_error(db: Path):
    proc = run("search", "cat", "--db", str(db), "--namespace", "nobody", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"] == []


def test_reingest_is_idempotent(db: Path, memories_file: Path):
    proc = run(
        "ingest", "jsonl", str(memories_file), "--db", str(db), "--model", "hash", "--no-progress"
    )
    assert proc.returncode == 0
    with open_store(db) as store:
        assert store.count() == 4


def test_empty_query(db: Path):
    assert_user_error(run("search", "   ", "--db", str(db), "--namespace", "sam"), "empty")


def test_query_needs_namespace(db: Path):
    assert_user_error(run("search", "cat", "--db", str(db)), "--namespace")


def test_malformed_jsonl_names_line_and_writes_nothing(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"namespace": "u", "text": "fine"}\n{"namespace": "u", "text": \n')
    db = tmp_path / "x.db"
    assert_user_error(
        run("ingest", "jsonl", str(bad), "--db", str(db), "--model", "hash"), "bad.jsonl:2"
    )
    assert not db.exists() or open_store(db).count() == 0


def test_unknown_field_is_named(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"namespace": "u", "text": "fine", "colour": "red"}\n')
    assert_user_error(
        run("ingest", "jsonl", str(bad), "--db", str(tmp_path / "x.db")), "colour", "bad.jsonl:1"
    )


def test_malformed_queries_file_names_line(db: Path, tmp_path: Path):
    q = tmp_path / "q.jsonl"
    q.write_text('{"query": "a", "namespace": "sam"}\nnot json\n')
    assert_user_error(run("search", "--queries", str(q), "--db", str(db)), "q.jsonl:2")


def test_missing_file(tmp_path: Path):
    assert_user_error(
        run("ingest", "jsonl", str(tmp_path / "nope.jsonl"), "--db", str(tmp_path / "x.db")),
        "nope.jsonl",
    )


def test_wrong_format_name(tmp_path: Path, memories_file: Path):
    assert_user_error(
        run("ingest", "csv", str(memories_file), "--db", str(tmp_path / "x.db")),
        "unknown format 'csv'",
    )


def test_missing_db_for_search(tmp_path: Path):
    db = tmp_path / "absent.db"
    assert_user_error(run("search", "x", "--db", str(db), "--namespace", "u"), "no database")
    assert not db.exists()


def test_unreadable_db(tmp_path: Path):
    db = tmp_path / "junk.db"
    db.write_bytes(b"not sqlite" * 200)
    assert_user_error(
        run("search", "x", "--db", str(db), "--namespace", "u"), "cannot open database"
    )


def test_bad_eval_options(tmp_path: Path):
    assert_user_error(run("eval", "locomo", "--pipeline", "magic"), "unknown pipeline 'magic'")
    assert_user_error(run("eval", "locomo", "--seeds", "a,b"), "--seeds")
    assert_user_error(run("eval", "nosuch"), "unknown dataset")


def test_demo_runs_with_every_layer():
    proc = run("demo")
    assert proc.returncode == 0, proc.stderr
    assert "Q: Where does Sam work?" in proc.stdout
    assert "demo:other:0" not in proc.stdout  # another principal's memory never shows
    # the validity layer (on by default) notes that the move to York overturns the Leeds flat
    assert "may be out of date" in proc.stdout and "Later: [demo:s4:0]" in proc.stdout


def test_search_annotates_validity_by_default(db: Path):
    base = ("search", "where does Sam live", "--db", str(db), "--namespace", "sam", "--json")
    proc = run(*base)  # --validity context is the default
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert results and all(
        {"status", "invalid_score", "superseded_by", "evidence", "context_note"}
        <= set(r["validity"]) for r in results)
    nearest = run(*base, "--sources", "nearest")
    assert nearest.returncode == 0, nearest.stderr
    # context keeps the ranking whatever the sources; off leaves the annotation out
    assert [r["memory_id"] for r in json.loads(nearest.stdout)["results"]] == \
        [r["memory_id"] for r in results]
    off = json.loads(run(*base, "--validity", "off").stdout)["results"]
    assert [r["memory_id"] for r in off] == [r["memory_id"] for r in results]
    assert all("validity" not in r for r in off)
    assert_user_error(run(*base, "--sources", "oldest"), "--sources")


def test_bad_validity_mode(db: Path):
    assert_user_error(run("search", "x", "--db", str(db), "--namespace", "sam",
                          "--validity", "loud"), "--validity")
