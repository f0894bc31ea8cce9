"""SQLite schema history, append-only: never edit a migration that has shipped; add the next one.

``apply`` runs every pending migration and its bookkeeping row inside one ``BEGIN IMMEDIATE``
transaction: a crash mid-way leaves the file as it was, and two processes opening a new file at
once serialise on the write lock (the second finds the work done).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable

MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = []


def migration(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_create_tables(conn: sqlite3.Connection) -> None:
    # rowid order is store order: the order memories were first added (upserts keep it).
    conn.execute(
        """CREATE TABLE memories (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            conversation_id TEXT,
            session_id TEXT,
            turn_index INTEGER,
            speaker TEXT,
            text TEXT NOT NULL,
            timestamp TEXT,
            state TEXT NOT NULL,
            policy_tags TEXT NOT NULL,
            metadata TEXT NOT NULL,
            embedding BLOB
        )"""
    )
    conn.execute("CREATE INDEX memories_namespace ON memories(namespace, seq)")
    conn.execute("CREATE TABLE namespaces (name TEXT PRIMARY KEY, revision INTEGER NOT NULL)")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


@migration
def m002_live_core(conn: sqlite3.Connection) -> None:
    """Identity (namespace, id); a change log for index deltas; BM25 postings per namespace.

    - ``memories``: unique on (namespace, id); ``version`` is the namespace revision that last
      wrote the row, ``n_terms`` its BM25 length (0 while not searchable, i.e. forgotten).
      AUTOINCREMENT: a purged seq is never reused, so store order only grows.
    - ``removed``: seqs purged from a namespace, by revision (ids only, never text).
    - ``postings``: one row per (namespace, term, memory) of every searchable memory, with the
      term frequency and the memory's length; ``namespaces`` keeps the per-namespace BM25
      statistics (documents and total terms), so one tenant never shifts another's scores.
    """
    from memsieve.retrieve.bm25 import Analyzer

    conn.execute("ALTER TABLE memories RENAME TO memories_v1")
    conn.execute("DROP INDEX memories_namespace")
    conn.execute(
        """CREATE TABLE memories (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            namespace TEXT NOT NULL,
            id TEXT NOT NULL,
            conversation_id TEXT,
            session_id TEXT,
            turn_index INTEGER,
            speaker TEXT,
            text TEXT NOT NULL,
            timestamp TEXT,
            state TEXT NOT NULL,
            policy_tags TEXT NOT NULL,
            metadata TEXT NOT NULL,
            embedding BLOB,
            n_terms INTEGER NOT NULL DEFAULT 0,
            version INTEGER NOT NULL DEFAULT 0,
            UNIQUE (namespace, id)
        )"""
    )
    conn.execute("CREATE INDEX memories_version ON memories(namespace, version)")
    conn.execute(
        """CREATE TABLE postings (
            namespace TEXT NOT NULL, term TEXT NOT NULL, seq INTEGER NOT NULL,
            tf INTEGER NOT NULL, dl INTEGER NOT NULL,
            PRIMARY KEY (namespace, term, seq)
        ) WITHOUT ROWID"""
    )
    conn.execute(
        """CREATE TABLE removed (
            namespace TEXT NOT NULL, seq INTEGER NOT NULL, version INTEGER NOT NULL,
            PRIMARY KEY (namespace, seq)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX removed_version ON removed(namespace, version)")
    conn.execute("ALTER TABLE namespaces ADD COLUMN n_docs INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE namespaces ADD COLUMN n_terms INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        """INSERT INTO memories (seq, namespace, id, conversation_id, session_id, turn_index,
               speaker, text, timestamp, state, policy_tags, metadata, embedding, version)
           SELECT m.seq, m.namespace, m.id, m.conversation_id, m.session_id, m.turn_index,
               m.speaker, m.text, m.timestamp, m.state, m.policy_tags, m.metadata, m.embedding,
               COALESCE(n.revision, 0)
           FROM memories_v1 m LEFT JOIN namespaces n ON n.name = m.namespace ORDER BY m.seq"""
    )
    conn.execute("DROP TABLE memories_v1")
    analyzer = Analyzer()
    rows = conn.execute(
        "SELECT seq, namespace, text FROM memories WHERE state != 'forgotten' ORDER BY seq"
    ).fetchall()
    tokens = analyzer([r[2] for r in rows])
    for (seq, ns, _), toks in zip(rows, tokens, strict=True):
        conn.executemany(
            "INSERT INTO postings VALUES (?, ?, ?, ?, ?)",
            [(ns, t, seq, tf, len(toks)) for t, tf in Counter(toks).items()],
        )
        conn.execute("UPDATE memories SET n_terms=? WHERE seq=?", (len(toks), seq))
    conn.execute(
        """UPDATE namespaces SET
             n_docs = (SELECT COUNT(*) FROM memories m
                       WHERE m.namespace = name AND m.state != 'forgotten'),
             n_terms = (SELECT COALESCE(SUM(n_terms), 0) FROM memories m
                        WHERE m.namespace = name)"""
    )
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('format', 'memsieve')")


@migration
def m003_namespace_order(conn: sqlite3.Connection) -> None:
    """Index a namespace's rows in store order (an index on namespace carries the rowid), so a
    reader's first load reads them in order instead of sorting them."""
    conn.execute("CREATE INDEX memories_namespace_seq ON memories(namespace)")


@migration
def m004_units_and_audit(conn: sqlite3.Connection) -> None:
    """Atomic units of every turn, the exposure and erasure logs (``sql.audit_tables``)."""
    from memsieve.store.sql import audit_tables, unit_rows

    for sql in audit_tables("INTEGER PRIMARY KEY AUTOINCREMENT"):
        conn.execute(sql)
    rows = conn.execute("SELECT namespace, seq, text FROM memories ORDER BY seq").fetchall()
    conn.executemany("INSERT INTO units VALUES (?, ?, ?, ?)", unit_rows(rows))


@migration
def m005_validity_edges(conn: sqlite3.Connection) -> None:
    """Write-time candidate edges of the validity layer (``sql.edge_tables``); a store written
    before them gets its edges from ``memsieve migrate``."""
    from memsieve.store.sql import edge_tables

    for sql in edge_tables():
        conn.execute(sql)


LATEST = MIGRATIONS[-1][0]


def pending(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations this file still needs (all of them for a new file)."""
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='_migrations'"
    ).fetchone()
    done = {r[0] for r in conn.execute("SELECT name FROM _migrations")} if has else set()
    return [name for name, _ in MIGRATIONS if name not in done]


def apply(conn: sqlite3.Connection) -> None:
    """Apply pending migrations in one transaction (the connection is in autocommit mode)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
        )
        todo = set(pending(conn))
        for name, fn in MIGRATIONS:
            if name in todo:
                fn(conn)
                conn.execute("INSERT INTO _migrations VALUES (?, datetime('now'))", (name,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
