"""PostgreSQL + pgvector store: the same schema and write path as SQLite (``store/sql.py``),
for teams that run memsieve as a server.

Every table is keyed by namespace first (``memories`` by (namespace, seq), unique on
(namespace, id); ``postings`` by (namespace, term, seq)), so every query, index key and lock
is per tenant and the tables can be distributed by namespace (docs/SCALING.md). Vectors are
pgvector ``vector`` values; search is exact over the namespace's vectors, kept in the process
and refreshed by deltas as with SQLite. ``hnsw=True`` also builds a pgvector HNSW index (cosine)
for server-side nearest-neighbour queries (``nearest``).

Writers of one namespace serialise on its ``namespaces`` row (taken first in every write);
readers use REPEATABLE READ READ ONLY snapshots and never wait for writers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from memsieve.errors import ConfigError, MissingDependency, StoreError
from memsieve.store.sql import (
    SQLStore,
    _reason,
    audit_tables,
    edge_tables,
    refuse_foreign,
    unit_rows,
)

SCHEMA = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    """CREATE TABLE memories (
        namespace TEXT NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        id TEXT NOT NULL,
        conversation_id TEXT,
        session_id TEXT,
        turn_index BIGINT,
        speaker TEXT,
        text TEXT NOT NULL,
        timestamp TEXT,
        state TEXT NOT NULL,
        policy_tags TEXT NOT NULL,
        metadata TEXT NOT NULL,
        embedding vector,
        n_terms INTEGER NOT NULL DEFAULT 0,
        version BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (namespace, seq),
        UNIQUE (namespace, id)
    )""",
    "CREATE INDEX memories_version ON memories (namespace, version)",
    """CREATE TABLE postings (
        namespace TEXT NOT NULL, term TEXT NOT NULL, seq BIGINT NOT NULL,
        tf INTEGER NOT NULL, dl INTEGER NOT NULL,
        PRIMARY KEY (namespace, term, seq)
    )""",
    """CREATE TABLE removed (
        namespace TEXT NOT NULL, seq BIGINT NOT NULL, version BIGINT NOT NULL,
        PRIMARY KEY (namespace, seq)
    )""",
    "CREATE INDEX removed_version ON removed (namespace, version)",
    """CREATE TABLE namespaces (
        name TEXT PRIMARY KEY, revision BIGINT NOT NULL,
        n_docs BIGINT NOT NULL DEFAULT 0, n_terms BIGINT NOT NULL DEFAULT 0
    )""",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO meta VALUES ('format', 'memsieve')",
]


def _backfill_units(conn: Any) -> None:
    rows = conn.execute("SELECT namespace, seq, text FROM memories ORDER BY seq").fetchall()
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO units VALUES (%s, %s, %s, %s)", unit_rows(rows))


MIGRATIONS = [
    ("p001_live_core", SCHEMA),
    ("p002_units_and_audit",
     [*audit_tables("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"), _backfill_units]),
    ("p003_validity_edges", edge_tables()),
]
_LOCK_KEY = 7_316_405_201  # advisory lock: concurrent first opens run the schema once


def is_url(target: object) -> bool:
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


class PostgresStore(SQLStore):
    """``Store`` on PostgreSQL with pgvector (psycopg 3). See ``memsieve.store.base.Store``."""

    BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    VECTOR_OUT = "vector_send(embedding)"  # pgvector's wire format: no per-row Python object
    BEGIN_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"

    def __init__(self, url: str, *, readonly: bool = False, hnsw: bool = False) -> None:
        super().__init__(re.sub(r"://([^:@/]*):[^@/]*@", r"://\1:***@", url), readonly=readonly)
        try:
            import psycopg
            from pgvector.psycopg import register_vector
        except ImportError as err:
            raise MissingDependency(
                "the PostgreSQL backend needs `pip install 'memsieve[postgres]'`"
            ) from err
        self.errors = (psycopg.Error,)
        self.hnsw = hnsw
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as err:
            raise StoreError(f"cannot connect to {self.where}: {_reason(err)}") from None
        try:
            self._migrate()
            register_vector(self._conn)
            if readonly:
                self._conn.execute("SET default_transaction_read_only = on")
        except psycopg.Error as err:
            self._conn.close()
            raise StoreError(f"cannot open {self.where}: {_reason(err)}") from None
        except BaseException:
            self._conn.close()
            raise

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def _recover(self) -> None:
        from psycopg import pq

        if self._conn.info.transaction_status == pq.TransactionStatus.INERROR:
            self._conn.execute("ROLLBACK")

    def _migrate(self) -> None:
        conn = self._conn
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
        refuse_foreign(self.where, tables)
        if self.readonly:
            if not tables:
                raise StoreError(f"{self.where} holds no memsieve store yet")
            done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
            if any(name not in done for name, _ in MIGRATIONS):
                raise StoreError(
                    f"{self.where} was written by an older memsieve; upgrade it once with "
                    "`memsieve migrate --db URL` (read commands never change a store)"
                )
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations "
                         "(name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ DEFAULT now())")
            done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
            for name, statements in MIGRATIONS:
                if name not in done:
                    for sql in statements:
                        sql(conn) if callable(sql) else conn.execute(sql)
                    conn.execute("INSERT INTO _migrations (name) VALUES (%s)", (name,))
            if self.hnsw:
                self._hnsw_index()

    def _hnsw_index(self) -> None:
        dim = self.embedding_dim()
        if dim:  # pgvector indexes need a fixed dimension
            self._conn.execute(f"ALTER TABLE memories ALTER COLUMN embedding TYPE vector({dim})")
            self._conn.execute("CREATE INDEX IF NOT EXISTS memories_hnsw ON memories "
                               "USING hnsw (embedding vector_cosine_ops)")

    def _vector_in(self, row: np.ndarray) -> Any:
        return np.asarray(row, dtype=np.float32)

    def _vectors_out(self, values: Sequence[bytes | None], dim: int) -> np.ndarray:
        """Unpack ``vector_send`` values: a 4-byte header (dimension, unused), then ``dim``
        big-endian float4s, i.e. ``dim + 1`` words a row."""
        words = np.zeros((len(values), dim + 1), dtype=">f4")
        if words.size == 0:
            return np.zeros((len(values), dim), dtype=np.float32)
        flat, width = memoryview(words).cast("B"), 4 * (dim + 1)
        for i, v in enumerate(values):
            if v is not None:
                flat[i * width : (i + 1) * width] = v
        return words[:, 1:].astype(np.float32)

    def _exec(self, sql: str, params: Sequence = ()) -> Any:
        # binary transfer: vectors arrive as packed floats, not text to parse
        return self._conn.execute(self._sql(sql), params, binary=True)

    def _after_purge(self, wait_s: float) -> None:
        """VACUUM the tables so the dead rows' space is reclaimable at once. PostgreSQL does not
        zero freed tuples or old WAL segments: the bytes go when pages are reused and WAL is
        recycled (docs/SCALING.md says so; use SQLite where erasure must be immediate)."""
        with self._lock:
            for table in ("memories", "postings"):
                self._conn.execute(f"VACUUM {table}")

    def nearest(self, namespace: str, vector: np.ndarray, k: int) -> list[str]:
        """Ids of the ``k`` searchable memories nearest ``vector`` (cosine), computed in the
        server (the HNSW index when built, else an exact scan of the namespace)."""
        if k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        rows = self._rows(
            "SELECT id FROM memories WHERE namespace=? AND state != 'forgotten' "
            "AND embedding IS NOT NULL ORDER BY embedding <=> ? LIMIT ?",
            (namespace, np.asarray(vector, dtype=np.float32), k),
        )
        return [r[0] for r in rows]
