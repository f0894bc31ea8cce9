"""Schema history, append-only: never edit a migration that has shipped; add the next one."""

from __future__ import annotations

import sqlite3
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


def apply(conn: sqlite3.Connection) -> None:
    """Apply pending migrations, each with its bookkeeping row in one transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with conn:
            fn(conn)
            conn.execute("INSERT INTO _migrations VALUES (?, datetime('now'))", (name,))
