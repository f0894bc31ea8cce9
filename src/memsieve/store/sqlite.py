"""SQLite store: one file holding records, float32 vectors, BM25 postings and a change log.

WAL mode: one writer and many readers at once, readers never blocked; writes take the write
lock up front (``BEGIN IMMEDIATE``). ``secure_delete`` zeroes deleted content, and a purge
returns the freed pages and checkpoints the write-ahead log, so purged text leaves every byte
of the files (or the purge says it could not, and why).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsieve.errors import MemsieveError, NotFound, StoreError
from memsieve.store import migrations
from memsieve.store.sql import SQLStore, _reason, refuse_foreign

_SQLITE_HEADER = b"SQLite format 3\x00"


class SQLiteStore(SQLStore):
    """The embedded default store. See ``memsieve.store.base.Store`` for the contract.

    ``readonly`` opens an existing store for reading only: the file is never created or
    changed (``query_only``; a ``mode=ro`` connection would leave WAL side files behind).
    """

    BEGIN_WRITE = "BEGIN IMMEDIATE"
    errors = (sqlite3.Error,)
    NS_BY_SEQ = "+namespace=?"

    def __init__(self, path: str | Path, *, create: bool = True, readonly: bool = False) -> None:
        super().__init__(str(path), readonly=readonly)
        self.path = str(path)
        memory = self.path == ":memory:"
        p = Path(self.path)
        if not memory:
            if p.is_dir():
                raise StoreError(f"cannot open database {self.path}: it is a directory")
            if not p.exists() and not create:
                raise NotFound(f"no database at {self.path} (run `memsieve ingest` first)")
            _check_header(p, create)
        try:
            self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False,
                                         isolation_level=None)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open database {self.path}: {err}") from None
        try:
            self._setup(memory)
        except BaseException:
            self._conn.close()
            raise

    def _setup(self, memory: bool) -> None:
        conn = self._conn
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            refuse_foreign(self.path, tables)
            if self.readonly:
                conn.execute("PRAGMA query_only = ON")
                if not tables:
                    raise StoreError(f"{self.path} is an empty database, not a memsieve store")
                if migrations.pending(conn):
                    raise StoreError(
                        f"{self.path} was written by an older memsieve; upgrade it once with "
                        f"`memsieve migrate --db {self.path}` (read commands never change a file)"
                    )
            else:
                if not tables:  # a new file: free pages go back to the OS on purge
                    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                if not memory:
                    _wal(conn)
                migrations.apply(conn)
            conn.execute("PRAGMA secure_delete = ON")
        except sqlite3.DatabaseError as err:
            raise StoreError(f"cannot open database {self.path}: {_reason(err)}") from None

    def _vector_in(self, row: np.ndarray) -> bytes:
        return np.asarray(row, dtype=np.float32).tobytes()

    def _vectors_out(self, values: Sequence[bytes | None], dim: int) -> np.ndarray:
        out = np.zeros((len(values), dim), dtype=np.float32)
        if out.size == 0:
            return out
        flat, width = memoryview(out).cast("B"), 4 * dim  # one copy, straight into the matrix
        for i, v in enumerate(values):
            if v is not None:
                flat[i * width : (i + 1) * width] = v
        return out

    def _after_purge(self, wait_s: float) -> None:
        """Return the freed pages (incremental vacuum; sqlite3_exec steps it to the end), then
        checkpoint: the pages were zeroed by ``secure_delete``."""
        with self._lock:
            try:
                self._conn.executescript("PRAGMA incremental_vacuum;")
            except sqlite3.Error as err:
                raise StoreError(f"cannot reclaim space in {self.path}: {err}") from None
        self.checkpoint(wait_s=wait_s)

    def checkpoint(self, *, wait_s: float = 10.0) -> None:
        """Copy the write-ahead log into the file and truncate it, so no older copy of a page
        survives. A reader holding an older snapshot keeps those pages alive: after ``wait_s``
        seconds this raises StoreError (the deletion itself is committed; call it again once
        the reader is done)."""
        if self.path == ":memory:" or self.readonly:
            return
        deadline = time.monotonic() + wait_s
        while True:
            busy = self._rows("PRAGMA wal_checkpoint(TRUNCATE)")[0][0]
            if not busy:
                return
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"the memories are deleted, but another connection is still reading an "
                    f"older snapshot of {self.path}, so their old bytes remain in its "
                    "write-ahead log; run the purge again (or store.checkpoint()) when it is done"
                )
            time.sleep(0.05)


def _wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch to WAL. While another process converts a new file at the same moment, the pragma
    answers SQLITE_BUSY at once, without the busy handler, so retry it for a bounded time."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError as err:
            if err.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def remove_if_empty(path: str | Path) -> None:
    """Delete a store file (and its WAL side files) that holds no memory: what a failed first
    ingest leaves. A file with memories, or not a memsieve store, is never touched."""
    p = Path(path)
    if not p.is_file():
        return
    try:
        with SQLiteStore(p, create=False) as store:
            if store.count():
                return
    except MemsieveError:
        return
    for f in (p, p.with_name(p.name + "-wal"), p.with_name(p.name + "-shm")):
        f.unlink(missing_ok=True)


def _check_header(path: Path, create: bool) -> None:
    """Refuse a file that is not SQLite before SQLite touches it (an empty file is new)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as err:
        raise StoreError(f"cannot open database {path}: {err.strerror}") from None
    if not head:
        if not create:
            raise StoreError(f"{path} is an empty file, not a memsieve database")
        return
    if head != _SQLITE_HEADER:
        raise StoreError(f"cannot open database {path}: it is not a memsieve database")
