"""SQLite store: one file holding records, float32 vectors, BM25 postings and a change log.

WAL mode: one writer and many readers at once, readers never blocked. Every write is one
``BEGIN IMMEDIATE`` transaction that checks and writes together (two processes cannot both
pass a check and then overwrite each other), updates the lexical postings and per-namespace
statistics with the rows, and bumps the namespace's revision; readers take a ``snapshot()``
so a query sees one state. ``secure_delete`` zeroes deleted content, and a purge checkpoints
the write-ahead log, so purged text leaves every byte of the files (or the purge says it could
not, and why).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import numpy as np

from memsieve.errors import ConfigError, MemsieveError, NotFound, StoreError
from memsieve.store import migrations
from memsieve.store.base import Delta, Postings, TermStats, chunks, id_list
from memsieve.types import Memory, State

_COLUMNS = (
    "id, namespace, conversation_id, session_id, turn_index, speaker, text, timestamp, "
    "state, policy_tags, metadata"
)
_SQLITE_HEADER = b"SQLite format 3\x00"


def open_store(path: str | Path, *, create: bool = True, readonly: bool = False) -> SQLiteStore:
    """Open (or create) the SQLite store at ``path``; ``":memory:"`` gives a throwaway store.

    ``readonly`` opens an existing store for reading only: the file is never created or changed.
    """
    return SQLiteStore(path, create=create and not readonly, readonly=readonly)


class SQLiteStore:
    """The embedded default store. See ``memsieve.store.base.Store`` for the contract."""

    def __init__(self, path: str | Path, *, create: bool = True, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        self._depth = 0
        self._analyzer = None
        memory = self.path == ":memory:"
        p = Path(self.path)
        if not memory:
            if p.is_dir():
                raise StoreError(f"cannot open database {self.path}: it is a directory")
            if not p.exists() and not create:
                raise NotFound(f"no database at {self.path} (run `memsieve ingest` first)")
            _check_header(p, create)
        try:
            # read-only is enforced with query_only rather than mode=ro: a mode=ro connection
            # leaves the -wal / -shm files behind, a normal one removes them when it closes
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
            if tables and "_migrations" not in tables:
                raise StoreError(
                    f"{self.path} is not a memsieve database (it holds tables "
                    f"{', '.join(sorted(tables)[:5])}); refusing to change it"
                )
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
                    conn.execute("PRAGMA journal_mode = WAL")
                migrations.apply(conn)
            conn.execute("PRAGMA secure_delete = ON")
        except sqlite3.DatabaseError as err:
            raise StoreError(f"cannot open database {self.path}: {err}") from None

    # -- transactions ------------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one consistent state of the file (a read transaction)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._run("BEGIN")
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0
                self._conn.execute("COMMIT" if self._conn.in_transaction else "SELECT 1")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: the check and the write it guards commit together."""
        if self.readonly:
            raise StoreError(f"{self.path} is open read-only")
        with self._lock:
            if self._depth:
                raise StoreError("cannot write inside a read snapshot")
            self._run("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as err:
                self._conn.execute("ROLLBACK")
                if isinstance(err, sqlite3.Error):
                    raise StoreError(f"cannot write to {self.path}: {_reason(err)}") from None
                raise

    def _run(self, sql: str, params: Sequence = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except sqlite3.Error as err:
            raise StoreError(f"cannot read {self.path}: {_reason(err)}") from None

    def _rows(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as err:
                raise StoreError(f"cannot read {self.path}: {_reason(err)}") from None

    # -- writes ------------------------------------------------------------------------------

    def add(
        self,
        memories: Sequence[Memory],
        *,
        vectors: np.ndarray | None = None,
        model: str | None = None,
    ) -> int:
        """Insert or update (by namespace and id) a batch in one transaction; return the count.

        ``vectors`` (one float row per memory) and the ``model`` that made them are stored with
        the rows; a store holds vectors of one model only. Within a batch, the last copy of a
        repeated (namespace, id) wins; an update keeps the memory's place in store order.
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
        last: dict[tuple[str, str], int] = {}
        for i, m in enumerate(memories):
            last[(m.namespace, m.id)] = i
        order = sorted(last.values())
        batch = [memories[i] for i in order]
        tokens = self._analyze([m.text for m in batch])
        by_ns: dict[str, list[int]] = {}
        for j, m in enumerate(batch):
            by_ns.setdefault(m.namespace, []).append(j)
        with self._write() as conn:
            if vectors is not None:
                self._check_model(model, vectors.shape[1])
            for ns in sorted(by_ns):
                rev = self._bump(ns)
                docs, terms = 0, 0
                idx = by_ns[ns]
                old = self._existing(ns, [batch[j].id for j in idx])
                for j in idx:
                    m, toks = batch[j], tokens[j]
                    prev = old.get(m.id)
                    if prev is not None and prev[1] != State.forgotten:
                        self._unpost(ns, prev[0], prev[2])
                        docs, terms = docs - 1, terms - prev[3]
                    emb = vectors[order[j]].tobytes() if vectors is not None else None
                    searchable = m.state is not State.forgotten
                    n_terms = len(toks) if searchable else 0
                    row = _row(m) + (emb, n_terms, rev)
                    if prev is None:
                        seq = conn.execute(
                            f"INSERT INTO memories ({_COLUMNS}, embedding, n_terms, version) "
                            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row,
                        ).lastrowid
                    else:
                        seq = prev[0]
                        conn.execute(
                            """UPDATE memories SET conversation_id=?, session_id=?,
                                 turn_index=?, speaker=?, text=?, timestamp=?, state=?,
                                 policy_tags=?, metadata=?,
                                 embedding=COALESCE(?, embedding), n_terms=?, version=?
                               WHERE seq=?""",
                            row[2:] + (seq,),
                        )
                    if searchable:
                        self._post(ns, seq, toks)
                        docs, terms = docs + 1, terms + len(toks)
                self._stats(ns, docs, terms)
        return len(batch)

    def _analyze(self, texts: Sequence[str]) -> list[list[str]]:
        if self._analyzer is None:
            from memsieve.retrieve.bm25 import Analyzer

            self._analyzer = Analyzer()
        return self._analyzer(texts)

    def _existing(self, ns: str, ids: Sequence[str]) -> dict[str, tuple[int, State, str, int]]:
        """id → (seq, state, text, n_terms) of the ids already stored in namespace ``ns``."""
        out = {}
        for chunk in chunks(list(dict.fromkeys(ids))):
            q = ("SELECT id, seq, state, text, n_terms FROM memories WHERE namespace=? AND id IN "
                 f"({','.join('?' * len(chunk))})")
            for mid, seq, state, text, n in self._conn.execute(q, [ns, *chunk]):
                out[mid] = (seq, State(state), text, n)
        return out

    def _post(self, ns: str, seq: int, tokens: Sequence[str]) -> None:
        self._conn.executemany(
            "INSERT INTO postings VALUES (?, ?, ?, ?, ?)",
            [(ns, t, seq, tf, len(tokens)) for t, tf in Counter(tokens).items()],
        )

    def _unpost(self, ns: str, seq: int, text: str) -> None:
        terms = set(self._analyze([text])[0])
        self._conn.executemany(
            "DELETE FROM postings WHERE namespace=? AND term=? AND seq=?",
            [(ns, t, seq) for t in terms],
        )

    def _stats(self, ns: str, docs: int, terms: int) -> None:
        self._conn.execute(
            "UPDATE namespaces SET n_docs = n_docs + ?, n_terms = n_terms + ? WHERE name=?",
            (docs, terms, ns),
        )

    def _bump(self, ns: str) -> int:
        """Move the namespace to its next revision (inside the write) and return it."""
        self._conn.execute(
            """INSERT INTO namespaces (name, revision) VALUES (?, 1)
               ON CONFLICT(name) DO UPDATE SET revision = revision + 1""",
            (ns,),
        )
        return self._conn.execute(
            "SELECT revision FROM namespaces WHERE name=?", (ns,)
        ).fetchone()[0]

    def _check_model(self, model: str | None, dim: int) -> None:
        stored = self._meta("embedding_model")
        want = f"{model}:{dim}"
        if stored is None:
            self._conn.execute("INSERT INTO meta VALUES ('embedding_model', ?)", (want,))
        elif stored != want:
            raise ConfigError(
                f"this store holds vectors of {stored!r}; cannot add vectors of {want!r}"
            )

    def set_state(self, namespace: str, memory_id: str, state: State | str) -> None:
        """Set a memory's lifecycle state; ``forgotten`` takes it out of search at once."""
        try:
            state = State(state)
        except ValueError:
            raise ConfigError(
                f"unknown state {state!r}; expected one of {[s.value for s in State]}"
            ) from None
        with self._write() as conn:
            prev = self._existing(namespace, [memory_id]).get(memory_id)
            if prev is None:
                raise NotFound(f"no memory {memory_id!r} in namespace {namespace!r}")
            seq, old, text, n_terms = prev
            rev = self._bump(namespace)
            if (old is State.forgotten) != (state is State.forgotten):
                if state is State.forgotten:
                    self._unpost(namespace, seq, text)
                    self._stats(namespace, -1, -n_terms)
                    n_terms = 0
                else:
                    toks = self._analyze([text])[0]
                    self._post(namespace, seq, toks)
                    n_terms = len(toks)
                    self._stats(namespace, 1, n_terms)
            conn.execute("UPDATE memories SET state=?, n_terms=?, version=? WHERE seq=?",
                         (state.value, n_terms, rev, seq))

    def forget(self, namespace: str, memory_id: str) -> None:
        """Mark a memory ``forgotten``: kept for the audit trail, never retrieved again."""
        self.set_state(namespace, memory_id, State.forgotten)

    def purge(self, namespace: str, memory_ids: Iterable[str], *, wait_s: float = 10.0) -> int:
        """Delete memories for good: row, vector and postings, their bytes zeroed in the file.

        After the commit the write-ahead log is checkpointed and truncated so no old copy of a
        page survives. A reader holding an older snapshot keeps those pages alive: the purge
        waits up to ``wait_s`` for it, then raises StoreError (the memories are deleted; call
        ``checkpoint()`` once readers are done to clear the old bytes).
        """
        ids = id_list(memory_ids)
        removed = 0
        if ids:
            with self._write() as conn:
                old = self._existing(namespace, ids)
                if old:
                    rev = self._bump(namespace)
                    for seq, state, text, n_terms in old.values():
                        if state is not State.forgotten:
                            self._unpost(namespace, seq, text)
                            self._stats(namespace, -1, -n_terms)
                        conn.execute("DELETE FROM memories WHERE seq=?", (seq,))
                        conn.execute("INSERT OR REPLACE INTO removed VALUES (?, ?, ?)",
                                     (namespace, seq, rev))
                    removed = len(old)
        if removed:
            with self._lock:  # sqlite3_exec steps the pragma until every free page is gone
                try:
                    self._conn.executescript("PRAGMA incremental_vacuum;")
                except sqlite3.Error as err:
                    raise StoreError(f"cannot reclaim space in {self.path}: {err}") from None
            self.checkpoint(wait_s=wait_s)
        return removed

    def checkpoint(self, *, wait_s: float = 10.0) -> None:
        """Copy the write-ahead log into the file and truncate it; StoreError if readers keep
        it busy for ``wait_s`` seconds."""
        if self.path == ":memory:" or self.readonly:
            return
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                busy = self._run("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"the memories are deleted, but another connection is still reading an "
                    f"older snapshot of {self.path}, so their old bytes remain in its "
                    "write-ahead log; run the purge again (or store.checkpoint()) when it is done"
                )
            time.sleep(0.05)

    # -- reads -------------------------------------------------------------------------------

    def get(self, namespace: str, memory_id: str) -> Memory:
        """The memory (namespace, id); NotFound if there is none."""
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM memories WHERE namespace=? AND id=?", (namespace, memory_id)
        )
        if not rows:
            raise NotFound(f"no memory {memory_id!r} in namespace {namespace!r}")
        return _memory(rows[0])

    def list(self, namespace: str) -> list[Memory]:
        """All memories of a namespace in store order, forgotten ones included (empty for an
        unknown namespace)."""
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM memories WHERE namespace=? ORDER BY seq", (namespace,)
        )
        return [_memory(r) for r in rows]

    def vectors(self, namespace: str) -> tuple[list[str], np.ndarray]:
        """Ids and the (n, d) float32 matrix of a namespace's vectors, in store order."""
        rows = self._rows(
            "SELECT id, embedding FROM memories WHERE namespace=? AND embedding IS NOT NULL "
            "ORDER BY seq",
            (namespace,),
        )
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return [r[0] for r in rows], mat.reshape(len(rows), -1)

    def namespaces(self) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT DISTINCT namespace FROM memories ORDER BY namespace")]

    def count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return self._rows("SELECT COUNT(*) FROM memories")[0][0]
        return self._rows(
            "SELECT COUNT(*) FROM memories WHERE namespace=?", (namespace,))[0][0]

    def embedding_model(self) -> str | None:
        """The model name whose vectors this store holds, or None before the first vectors."""
        value = self._meta("embedding_model")
        return value.rsplit(":", 1)[0] if value else None

    def embedding_dim(self) -> int:
        """The stored vectors' dimension (0 before the first vectors)."""
        value = self._meta("embedding_model")
        return int(value.rsplit(":", 1)[1]) if value else 0

    def revision(self, namespace: str) -> int:
        rows = self._rows("SELECT revision FROM namespaces WHERE name=?", (namespace,))
        return rows[0][0] if rows else 0

    def changes(self, namespace: str, since: int) -> Delta:
        """The searchable set's change since revision ``since`` (everything when 0)."""
        with self.snapshot():
            rev = self.revision(namespace)
            rows = self._rows(
                "SELECT seq, id, state, embedding FROM memories WHERE namespace=? AND version>? "
                "ORDER BY seq", (namespace, since),
            )
            gone = [] if since == 0 else [r[0] for r in self._rows(
                "SELECT seq FROM removed WHERE namespace=? AND version>?", (namespace, since))]
        dim = self.embedding_dim()
        keep = [r for r in rows if r[2] != State.forgotten]
        gone += [r[0] for r in rows if r[2] == State.forgotten]
        zero = bytes(4 * dim)
        blob = b"".join(r[3] if r[3] is not None else zero for r in keep)
        vectors = np.frombuffer(blob, dtype=np.float32).reshape(len(keep), dim).copy()
        return Delta(
            revision=rev,
            full=since == 0,
            seqs=np.array([r[0] for r in keep], dtype=np.int64),
            ids=[r[1] for r in keep],
            vectors=vectors,
            removed=np.array(sorted(gone), dtype=np.int64),
        )

    def postings(self, namespace: str, terms: Sequence[str]) -> TermStats:
        """The namespace's BM25 statistics and the postings of each distinct term."""
        with self.snapshot():
            stats = self._rows("SELECT n_docs, n_terms FROM namespaces WHERE name=?",
                               (namespace,))
            out = {}
            for term in dict.fromkeys(terms):
                rows = self._rows(
                    "SELECT seq, tf, dl FROM postings WHERE namespace=? AND term=? ORDER BY seq",
                    (namespace, term),
                )
                if rows:
                    a = np.array(rows, dtype=np.int64)
                    out[term] = Postings(a[:, 0], a[:, 1].astype(np.float64),
                                         a[:, 2].astype(np.float64))
        n_docs, n_terms = stats[0] if stats else (0, 0)
        return TermStats(n_docs, n_terms, out)

    def fetch(self, namespace: str, seqs: Sequence[int]) -> list[Memory]:
        """The memories at these seqs of the namespace, in the order given (missing ones
        are left out)."""
        found: dict[int, Memory] = {}
        for chunk in chunks([int(s) for s in seqs]):
            q = (f"SELECT seq, {_COLUMNS} FROM memories WHERE namespace=? AND seq IN "
                 f"({','.join('?' * len(chunk))})")
            for row in self._rows(q, [namespace, *chunk]):
                found[row[0]] = _memory(row[1:])
        return [found[s] for s in seqs if s in found]

    def _meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


def _reason(err: sqlite3.Error) -> str:
    msg = str(err)
    if "malformed" in msg or "not a database" in msg:
        return f"{msg} (the file is damaged)"
    return msg


def _row(m: Memory) -> tuple:
    return (
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
    )


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


__all__ = ["SQLiteStore", "open_store", "remove_if_empty"]
