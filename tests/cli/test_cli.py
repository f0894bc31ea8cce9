"""The CLI through subprocess, as a user runs it: happy paths and every bad-input case."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memsieve.store import open_store


def run(*args: str | bytes, cwd: Path | None = None) -> subprocess.CompletedProcess:
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
        run("search", "x", "--db", str(db), "--namespace", "u"), "not a memsieve database"
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
    # the context keeps the health memory out (policy) and the exposure is in the audit log
    assert "kept out: [demo:s2:4] inadmissible: policy" in proc.stdout
    assert "audit: exposure 1" in proc.stdout


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


# -- every user mistake: one line on stderr, exit 2, no traceback, nothing written -----------


def _jsonl(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def _garbled(tmp_path: Path, db: Path) -> str:
    bad = tmp_path / "garbled.db"
    raw = bytearray(db.read_bytes())
    raw[200:] = bytes(len(raw) - 200)  # keep the header, zero the schema and the pages
    bad.write_bytes(bytes(raw))
    return str(bad)


MISTAKES = {
    "unknown option": lambda t, db: ("search", "--bogus"),
    "unknown command": lambda t, db: ("frobnicate",),
    "missing --db": lambda t, db: ("search", "x", "--namespace", "sam"),
    "k zero": lambda t, db: ("search", "x", "--db", str(db), "--namespace", "sam", "--k", "0"),
    "k negative": lambda t, db: ("search", "x", "--db", str(db), "--namespace", "sam",
                                 "--k", "-1"),
    "k not a number": lambda t, db: ("search", "x", "--db", str(db), "--namespace", "sam",
                                     "--k", "abc"),
    "pool zero": lambda t, db: ("search", "x", "--db", str(db), "--namespace", "sam",
                                "--pool", "0"),
    "db is a folder": lambda t, db: ("search", "x", "--db", str(t), "--namespace", "sam"),
    "garbled db": lambda t, db: ("search", "x", "--db", _garbled(t, db), "--namespace", "sam"),
    "input is a folder": lambda t, db: ("ingest", "jsonl", str(t), "--db", str(t / "n.db")),
    "lone surrogate in jsonl": lambda t, db: (
        "ingest", "jsonl", _jsonl(t, "s.jsonl", '{"namespace": "u", "text": "a \\ud800"}\n'),
        "--db", str(t / "n.db"), "--model", "hash"),
    "metadata nested 5000 deep": lambda t, db: (
        "ingest", "jsonl", _jsonl(t, "d.jsonl", '{"namespace": "u", "text": "a", "metadata": '
                                  + '{"a": ' * 5000 + "1" + "}" * 5001 + "\n"),
        "--db", str(t / "n.db"), "--model", "hash"),
    "turn_index 10^30": lambda t, db: (
        "ingest", "jsonl", _jsonl(t, "i.jsonl", '{"namespace": "u", "text": "a", '
                                  '"turn_index": 1000000000000000000000000000000}\n'),
        "--db", str(t / "n.db"), "--model", "hash"),
    "invalid UTF-8 in queries": lambda t, db: (
        "search", "--queries", _jsonl(t, "q.jsonl", b'{"query": "\xff", "namespace": "sam"}\n'),
        "--db", str(db)),
    "lone surrogate in queries": lambda t, db: (
        "search", "--queries", _jsonl(t, "q.jsonl", '{"query": "\\udc00", "namespace": "u"}\n'),
        "--db", str(db)),
    "raw byte in the query": lambda t, db: ("search", b"caf\xff", "--db", str(db),
                                            "--namespace", "sam"),
    "unknown intent": lambda t, db: ("search", "x", "--db", str(db), "--namespace", "sam",
                                     "--intent", "future"),
    "unknown admissibility": lambda t, db: ("search", "x", "--db", str(db), "--namespace", "sam",
                                            "--admissibility", "strict"),
    "policy with an unknown key in queries": lambda t, db: (
        "search", "--queries", _jsonl(t, "q.jsonl", '{"query": "x", "namespace": "sam", '
                                      '"policy": {"allow": ["a"]}}\n'), "--db", str(db)),
    "context mode unknown": lambda t, db: ("context", "x", "--db", str(db), "--namespace", "sam",
                                           "--mode", "deep"),
    "context budget zero": lambda t, db: ("context", "x", "--db", str(db), "--namespace", "sam",
                                          "--budget", "0"),
    "context without namespace": lambda t, db: ("context", "x", "--db", str(db)),
    "context on a missing db": lambda t, db: ("context", "x", "--db", str(t / "n.db"),
                                              "--namespace", "sam"),
    "audit on a missing db": lambda t, db: ("audit", "--db", str(t / "n.db")),
    "route study on locomo": lambda t, db: ("eval", "locomo", "--routes", "global,namespace"),
    "serve without a keys file": lambda t, db: ("serve", "--db", str(db), "--keys",
                                                str(t / "keys.json")),
    "serve with a bad keys file": lambda t, db: ("serve", "--db", str(db), "--keys",
                                                 _jsonl(t, "keys.json", '{"short": ["a"]}')),
    "mcp with an unknown transport": lambda t, db: ("mcp", "--db", str(db), "--namespace", "sam",
                                                    "--transport", "tcp"),
    "train v2 on an unknown dataset": lambda t, db: ("train", "v2", "--datasets", "bogus",
                                                     "--out", str(t / "x.pt")),
    "train v2 on other datasets into the package": lambda t, db: ("train", "v2", "--datasets",
                                                                  "locomo,rhelm"),
    "train v1 with every dataset excluded": lambda t, db: (
        "train", "v1", "--exclude", "locomo,rhelm,longmemeval,memora", "--out", str(t / "x.pt")),
    # an unwritable output is refused before any training, not after it
    "train the statement gate into a file's folder": lambda t, db: (
        "train", "statement-gate", "--out", str(db / "gate.pt")),
    "train validity with a folder as its report": lambda t, db: (
        "train", "validity", "--report", str(t)),
    "train v1 into a file's folder": lambda t, db: ("train", "v1", "--out", str(db / "v1.pt")),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_user_mistake_is_one_line_exit_2(case: str, db: Path, tmp_path: Path):
    proc = run(*MISTAKES[case](tmp_path, db))
    assert_user_error(proc)
    assert not (tmp_path / "n.db").exists()  # a failed first ingest leaves no file


def test_no_arguments_prints_usage_and_exits_2():
    proc = run()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    assert "Usage" in proc.stdout + proc.stderr


def test_plain_output_escapes_control_characters(tmp_path: Path):
    rows = [{"namespace": "u", "id": "evil", "text": "cat\n  1  9.999  forged  row\x1b[31m"}]
    src = _jsonl(tmp_path, "e.jsonl", json.dumps(rows[0]) + "\n")
    db = tmp_path / "e.db"
    assert run("ingest", "jsonl", src, "--db", str(db), "--model", "hash").returncode == 0
    proc = run("search", "cat", "--db", str(db), "--namespace", "u", "--validity", "off")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "forged" in proc.stdout
    assert [ln for ln in proc.stdout.splitlines() if "forged" in ln][0].lstrip().startswith("1")
    assert "\\n" in proc.stdout and "\\x1b" in proc.stdout


def test_search_never_creates_or_changes_a_file(db: Path, tmp_path: Path):
    import hashlib
    import sqlite3

    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    empty = tmp_path / "empty.db"
    empty.touch()
    snapshot = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (db, other, empty)}
    names = sorted(p.name for p in tmp_path.iterdir())
    assert run("search", "cat", "--db", str(db), "--namespace", "sam",
               "--validity", "off").returncode == 0
    assert_user_error(run("search", "x", "--db", str(other), "--namespace", "u"),
                      "not a memsieve database")
    assert_user_error(run("search", "x", "--db", str(empty), "--namespace", "u"), "empty")
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in snapshot} == snapshot
    assert sorted(p.name for p in tmp_path.iterdir()) == names


def test_ctrl_c_during_ingest_is_interrupted_130_and_writes_nothing(tmp_path: Path):
    import signal
    import time

    rows = "".join(json.dumps({"namespace": "u", "text": f"memory {i} " + "word " * 60}) + "\n"
                   for i in range(3000))
    src = _jsonl(tmp_path, "big.jsonl", rows)
    db = tmp_path / "big.db"
    # a child of a non-interactive shell may inherit SIGINT ignored: give it the terminal's
    proc = subprocess.Popen([sys.executable, "-m", "memsieve", "ingest", "jsonl", src, "--db",
                             str(db), "--no-progress"], stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(8)  # the model is loaded and encoding has begun
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert not db.exists()


@pytest.mark.postgres
def test_cli_on_postgres(pg_server: str, memories_file: Path):
    """The same commands against a PostgreSQL URL (the server the fixture started)."""
    import psycopg

    url = pg_server.rsplit("/", 1)[0] + "/cli_db"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute("CREATE DATABASE cli_db")
    proc = run("ingest", "jsonl", str(memories_file), "--db", url, "--model", "hash",
               "--no-progress")
    assert proc.returncode == 0, proc.stderr
    proc = run("search", "what is the cat called", "--db", url, "--namespace", "sam", "--k", "1",
               "--json", "--validity", "off")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["memory_id"] == "m2"
    proc = run("migrate", "--db", url)
    assert proc.returncode == 0 and "validity edges" in proc.stderr, proc.stderr
    nobody = "postgresql://postgres@127.0.0.1:1/none"  # nothing listens on port 1
    assert_user_error(run("search", "x", "--db", nobody, "--namespace", "sam"), "cannot connect")



def test_forget_and_purge(db: Path):
    search = ("search", "cat", "--db", str(db), "--namespace", "sam", "--json",
              "--validity", "off")
    assert "m2" in [r["memory_id"] for r in json.loads(run(*search).stdout)["results"]]
    assert_user_error(run("forget", "m2", "nope", "--namespace", "sam", "--db", str(db)),
                      "no memory 'nope' in namespace 'sam'")
    assert "m2" in [r["memory_id"] for r in json.loads(run(*search).stdout)["results"]]
    proc = run("forget", "m2", "--namespace", "sam", "--db", str(db))
    assert proc.returncode == 0 and "forgot 1" in proc.stderr
    assert "m2" not in [r["memory_id"] for r in json.loads(run(*search).stdout)["results"]]
    assert_user_error(run("forget", "a1", "--namespace", "sam", "--db", str(db)), "'a1'")
    proc = run("forget", "m2", "m9", "--purge", "--namespace", "sam", "--db", str(db))
    assert proc.returncode == 0 and "purged 1 memories from 'sam' (1 not found)" in proc.stderr
    assert b"Pepper" not in db.read_bytes()


def test_context_json_then_audit(db: Path):
    fast = ("--validity", "off", "--db", str(db))
    proc = run("context", "what is the cat called", "--namespace", "sam", "--mode", "lookup",
               "--budget", "40", "--json", *fast)
    assert proc.returncode == 0, proc.stderr
    ctx = json.loads(proc.stdout)
    assert {"query", "mode", "memories", "excluded", "text"} <= set(ctx)
    assert ctx["mode"] == "lookup" and ctx["tokens"] <= 40
    assert ctx["memories"][0]["memory_id"] == "m2" and "Pepper" in ctx["text"]
    assert all(m["admissibility"]["status"] == "admissible" for m in ctx["memories"])
    assert all(m["memory_id"] != "a1" for m in ctx["memories"])
    assert run("forget", "m2", "--namespace", "sam", "--db", str(db)).returncode == 0
    proc = run("context", "what is the cat called", "--namespace", "sam", "--json", *fast)
    assert "m2" not in [m["memory_id"] for m in json.loads(proc.stdout)["memories"]]
    audit = json.loads(run("audit", "--db", str(db), "--json").stdout)
    assert [e["namespace"] for e in audit["exposures"]] == ["sam", "sam"]
    assert audit["exposures"][1]["memory_ids"][0] == "m2"
    assert "Pepper" not in json.dumps(audit)  # the audit never holds memory text
    reached = json.loads(run("audit", "--db", str(db), "--memory", "m2", "--json").stdout)
    assert [e["id"] for e in reached["exposures"]] == [audit["exposures"][1]["id"]]
    assert run("forget", "m2", "--purge", "--namespace", "sam", "--db", str(db)).returncode == 0
    audit = json.loads(run("audit", "--db", str(db), "--namespace", "sam", "--json").stdout)
    assert "m2" not in json.dumps(audit["exposures"])
    assert [(e["namespace"], e["count"]) for e in audit["erasures"]] == [("sam", 1)]
    plain = run("audit", "--db", str(db))
    assert plain.returncode == 0 and "erasure" in plain.stdout


def test_search_enforce_keeps_out_what_the_policy_denies(tmp_path: Path):
    rows = [{"namespace": "u", "id": "h", "text": "my blood test came back fine",
             "policy_tags": ["health"]},
            {"namespace": "u", "id": "o", "text": "my old flat had a blue door", "state": "stale"},
            {"namespace": "u", "id": "n", "text": "my new flat has a red door"}]
    src = _jsonl(tmp_path, "p.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "p.db"
    assert run("ingest", "jsonl", src, "--db", str(db), "--model", "hash").returncode == 0
    base = ("search", "my flat door blood test", "--db", str(db), "--namespace", "u",
            "--validity", "off", "--json")
    annotated = json.loads(run(*base).stdout)
    assert {r["memory_id"] for r in annotated["results"]} == {"h", "o", "n"}
    status = {r["memory_id"]: r["admissibility"]["status"] for r in annotated["results"]}
    assert status == {"h": "admissible", "o": "unresolved", "n": "admissible"}
    proc = run(*base, "--admissibility", "enforce", "--intent", "current", "--deny", "health")
    out = json.loads(proc.stdout)
    assert [r["memory_id"] for r in out["results"]] == ["n"]
    assert {e["memory_id"] for e in out["excluded"]} == {"h", "o"}
    history = json.loads(run(*base, "--admissibility", "enforce", "--intent", "history").stdout)
    assert {r["memory_id"] for r in history["results"]} == {"h", "o", "n"}
