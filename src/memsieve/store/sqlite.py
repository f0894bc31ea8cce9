"""SQLite store: one file holding records, metadata and float32 vectors.

WAL mode, so one writer and many readers can work at once. Lexical (BM25) and dense indexes
are derived from these rows per namespace and cached against ``revision`` by the retriever,
so purging a row removes its text, vector and index entries together.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from memsieve.errors import ConfigError, NotFound, StoreError
from memsieve.store import migrations
from memsieve.types import Memory, State

_COLUMNS = (
    "id, namespace, conversation_id, session_id, turn_index, speaker, text, timestamp, "
    "state, policy_tags, metadata"
)


def open_store(path: str | Path, *, create: bool = True) -> SQLiteStore:
    """Open (or create) the SQLite store at ``path``; ``":memory:"`` gives a throwaway store."""
    return SQLiteStore(path, create=create)


class SQLiteStore:
    """The embedded default store. See ``memsieve.store.base.Store`` for the contract."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            p = Path(self.path)
            if p.is_dir():
                raise StoreError(f"cannot open database {self.path}: it is a directory")
            if not p.exists() and not create:
                raise NotFound(f"no database at {self.path} (run `memsieve ingest` first)")
        try:
            self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            self._conn.execute("PRAGMA busy_timeout = 30000")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            migrations.apply(self._conn)
        except sqlite3.DatabaseError as err:
            raise StoreError(f"cannot open database {self.path}: {err}") from None

    # -- writes ------------------------------------------------------------------------------

    def add(
        self,
        memories: Sequence[Memory],
        *,
        vectors: np.ndarray | None = None,
        model: str | None = None,
    ) -> int:
        """Insert or update (by id) a batch of memories in one transaction; return the count.

        ``vectors`` (one float row per memory) and the ``model`` that made them are stored with
        the rows; a store holds vectors of one model only. Within a batch, the last copy of a
        repeated id wins. A memory id may not move to another namespace.
        """
        memories = list(memories)
        if not memories:
            return 0
        if vectors is not None:
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(memories):
                raise ConfigError(
                    f"vectors must have one row per memory: got shape {vectors.shape} "
                    f"for {len(memories)} memories"
                )
            if not model:
                raise ConfigError("vectors given without the name of the model that made them")
        rows = []
        for i, m in enumerate(memories):
            emb = vectors[i].tobytes() if vectors is not None else None
            rows.append(
                (
                    m.id,
                    m.namespace,
                    m.conversation_id,
                    m.session_id,
                    m.turn_index,
                    m.speaker,
                    m.text,
                    m.timestamp.isoformat() if m.timestamp else None,
                    m.state.value,
                    json.dumps(list(m.policy_tags)),
                    json.dumps(m.metadata, sort_keys=True),
                    emb,
                )
            )
        try:
            with self._conn:
                if vectors is not None:
                    self._check_model(model, vectors.shape[1])
                ids = [m.id for m in memories]
                self._check_namespaces(memories, ids)
                self._conn.executemany(
                    f"""INSERT INTO memories ({_COLUMNS}, embedding)
                        VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
                        ON CONFLICT(id) DO UPDATE SET
                          conversation_id=excluded.conversation_id,
                          session_id=excluded.session_id, turn_index=excluded.turn_index,
                          speaker=excluded.speaker, text=excluded.text,
                          timestamp=excluded.timestamp, state=excluded.state,
                          policy_tags=excluded.policy_tags, metadata=excluded.metadata,
                          embedding=COALESCE(excluded.embedding, memories.embedding)""",
                    rows,
                )
                self._bump({m.namespace for m in memories})
        except sqlite3.Error as err:
            raise StoreError(f"cannot write to {self.path}: {err}") from None
        return len({m.id for m in memories})

    def _check_model(self, model: str | None, dim: int) -> None:
        stored = self._meta("embedding_model")
        want = f"{model}:{dim}"
        if stored is None:
            self._conn.execute("INSERT INTO meta VALUES ('embedding_model', ?)", (want,))
        elif stored != want:
            raise ConfigError(
                f"this store holds vectors of {stored!r}; cannot add vectors of {want!r}"
            )

    def _check_namespaces(self, memories: Sequence[Memory], ids: list[str]) -> None:
        batch: dict[str, str] = {}
        for m in memories:
            if batch.setdefault(m.id, m.namespace) != m.namespace:
                raise ConfigError(f"memory {m.id!r} appears in two namespaces in one batch")
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            q = f"SELECT id, namespace FROM memories WHERE id IN ({','.join('?' * len(chunk))})"
            for mid, ns in self._conn.execute(q, chunk):
                if batch[mid] != ns:
                    raise ConfigError(
                        f"memory {mid!r} already exists in namespace {ns!r}; "
                        f"it cannot move to {batch[mid]!r}"
                    )

    def _bump(self, namespaces: Iterable[str]) -> None:
        self._conn.executemany(
            """INSERT INTO namespaces VALUES (?, 1)
               ON CONFLICT(name) DO UPDATE SET revision = revision + 1""",
            [(ns,) for ns in sorted(namespaces)],
        )

    def set_state(self, memory_id: str, state: State | str) -> None:
        """Set a memory's lifecycle state (``current``, ``stale``, ``superseded``, ...)."""
        try:
            state = State(state)
        except ValueError:
            raise ConfigError(
                f"unknown state {state!r}; expected one of {[s.value for s in State]}"
            ) from None
        ns = self.get(memory_id).namespace
        with self._conn:
            self._conn.execute("UPDATE memories SET state=? WHERE id=?", (state.value, memory_id))
            self._bump([ns])

    def forget(self, memory_id: str) -> None:
        """Mark a memory ``forgotten``: it stays (for the audit trail) but is never admissible."""
        self.set_state(memory_id, State.forgotten)

    def purge(self, memory_ids: Iterable[str]) -> int:
        """Delete memories for good (row, vector and derived index entries) and reclaim space."""
        ids = list(dict.fromkeys(memory_ids))
        removed = 0
        with self._conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                nss = [
                    r[0]
                    for r in self._conn.execute(
                        f"SELECT DISTINCT namespace FROM memories WHERE id IN ({marks})", chunk
                    )
                ]
                removed += self._conn.execute(
                    f"DELETE FROM memories WHERE id IN ({marks})", chunk
                ).rowcount
                self._bump(nss)
        if removed:
            # VACUUM rewrites the file without the freed pages: the space goes back to the OS.
            self._conn.execute("VACUUM")
        if self.path != ":memory:":
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return removed

    # -- reads -------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        """The memory with this id; NotFound if there is none."""
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE id=?", (memory_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        return _memory(row)

    def list(self, namespace: str) -> list[Memory]:
        """All memories of a namespace in store order (empty for an unknown namespace)."""
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE namespace=? ORDER BY seq", (namespace,)
        )
        return [_memory(r) for r in rows]

    def vectors(self, namespace: str) -> tuple[list[str], np.ndarray]:
        """Ids and the (n, d) float32 matrix of a namespace's vectors, in store order."""
        rows = self._conn.execute(
            "SELECT id, embedding FROM memories WHERE namespace=? AND embedding IS NOT NULL "
            "ORDER BY seq",
            (namespace,),
        ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return [r[0] for r in rows], mat.reshape(len(rows), -1)

    def namespaces(self) -> list[str]:
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT DISTINCT namespace FROM memories ORDER BY namespace"
            )
        ]

    def count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return self._conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        return self._conn.execute(
            "SELECT COUNT(*) FROM memories WHERE namespace=?", (namespace,)
        ).fetchone()[0]

    def embedding_model(self) -> str | None:
        """The model name whose vectors this store holds, or None before the first vectors."""
        value = self._meta("embedding_model")
        return value.rsplit(":", 1)[0] if value else None

    def revision(self, namespace: str) -> int:
        row = self._conn.execute(
            "SELECT revision FROM namespaces WHERE name=?", (namespace,)
        ).fetchone()
        return row[0] if row else 0

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _memory(row: tuple) -> Memory:
    (mid, ns, conv, sess, turn, speaker, text, ts, state, tags, meta) = row
    return Memory.model_construct(
        id=mid,
        namespace=ns,
        conversation_id=conv,
        session_id=sess,
        turn_index=turn,
        speaker=speaker,
        text=text,
        timestamp=datetime.fromisoformat(ts) if ts else None,
        state=State(state),
        policy_tags=tuple(json.loads(tags)),
        metadata=json.loads(meta),
    )
