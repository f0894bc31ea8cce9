"""The SQL store both backends share: one schema, one write path, one change log.

Every write is one transaction that checks and writes together (two processes cannot both pass
a check and then overwrite each other), updates the BM25 postings and per-namespace statistics
with the rows, and bumps the namespace's revision; rows carry the revision that last wrote
them (``version``) and purged seqs leave a tombstone, so a reader asks for what changed since
its revision instead of reloading. Reads inside ``snapshot()`` see one consistent state.

A backend subclass (``SQLiteStore``, ``PostgresStore``) supplies the connection, its schema,
the transaction statements, the placeholder style and how vectors cross the wire.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np

from memsieve.errors import ConfigError, NotFound, StoreError
from memsieve.store.base import (
    PURGED,
    Delta,
    Erasure,
    Exposure,
    Postings,
    TermStats,
    chunks,
    id_list,
)
from memsieve.types import Memory, State, content
from memsieve.validity.edges import Edge

COLUMNS = (
    "id, namespace, conversation_id, session_id, turn_index, speaker, text, timestamp, "
    "state, policy_tags, metadata"
)


class _Stored(NamedTuple):
    """What a write reads of a memory already stored under its id."""

    seq: int
    state: State
    text: str
    n_terms: int
    speaker: str | None


class SQLStore:
    """Shared implementation of ``memsieve.store.base.Store`` over a DB-API connection."""

    #: statements that open a read snapshot and a write transaction
    BEGIN_READ = "BEGIN"
    BEGIN_WRITE = "BEGIN"
    #: the driver's error base class(es)
    errors: tuple[type[BaseException], ...] = ()
    #: the namespace condition of a lookup by seq (SQLite: ``+namespace``, so its planner
    #: takes the seq key instead of scanning the namespace)
    NS_BY_SEQ = "namespace=?"
    #: how the embedding column is read (as bytes, unpacked by ``_vectors_out``)
    VECTOR_OUT = "embedding"

    def __init__(self, where: str, *, readonly: bool) -> None:
        self.where = where  # a path or a URL without its password, for messages
        self.readonly = readonly
        self._lock = threading.RLock()
        self._depth = 0
        self._analyzer = None
        self._conn: Any = None

    # -- backend hooks -----------------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        """The statement in the driver's placeholder style (written with ``?``)."""
        return sql

    def _vector_in(self, row: np.ndarray) -> Any:
        raise NotImplementedError

    def _vectors_out(self, values: Sequence[Any], dim: int) -> np.ndarray:
        raise NotImplementedError

    def _after_purge(self, wait_s: float) -> None:
        """Make the purged bytes unreachable in the backend's files."""

    # -- plumbing ----------------------------------------------------------------------------

    def _exec(self, sql: str, params: Sequence = ()) -> Any:
        return self._conn.execute(self._sql(sql), params)

    def _many(self, sql: str, rows: Sequence[Sequence]) -> None:
        if rows:
            self._conn.cursor().executemany(self._sql(sql), rows)

    def _rows(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._exec(sql, params).fetchall()
            except self.errors as err:
                self._recover()
                raise StoreError(f"cannot read {self.where}: {_reason(err)}") from None

    def _recover(self) -> None:
        """After a failed statement outside a transaction, leave the connection usable."""

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one consistent state of the store (a read transaction)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            try:
                self._exec(self.BEGIN_READ)
            except self.errors as err:
                raise StoreError(f"cannot read {self.where}: {_reason(err)}") from None
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0
                try:
                    self._exec("COMMIT")
                except self.errors:
                    self._recover()

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction: the check and the write it guards commit together."""
        if self.readonly:
            raise StoreError(f"{self.where} is open read-only")
        with self._lock:
            if self._depth:
                raise StoreError("cannot write inside a read snapshot")
            try:
                self._exec(self.BEGIN_WRITE)
            except self.errors as err:
                raise StoreError(f"cannot write to {self.where}: {_reason(err)}") from None
            try:
                yield
                self._exec("COMMIT")
            except BaseException as err:
                try:
                    self._exec("ROLLBACK")
                except self.errors:
                    self._recover()
                if isinstance(err, self.errors):
                    raise StoreError(f"cannot write to {self.where}: {_reason(err)}") from None
                raise

    # -- writes ------------------------------------------------------------------------------

    def add(
        self,
        memories: Sequence[Memory],
        *,
        vectors: np.ndarray | None = None,
        model: str | None = None,
        edges: Mapping[str, Sequence[Edge]] | None = None,
    ) -> int:
        """Insert or update (by namespace and id) a batch in one transaction; return the count.

        ``vectors`` (one float row per memory) and the ``model`` that made them are stored with
        the rows; a store holds vectors of one model only. Within a batch, the last copy of a
        repeated (namespace, id) wins; an update keeps the memory's place in store order, and
        one that changes the text drops the validity edges the memory had. ``edges``
        (namespace → the batch's write-time validity edges, ``validity/edges.py``) are written
        in the same transaction.
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
        with self._write():
            if vectors is not None:
                self._check_model(model, vectors.shape[1])
            for ns in sorted(by_ns):  # one lock order for every writer
                rev = self._bump(ns)
                old = self._existing(ns, [batch[j].id for j in by_ns[ns]])
                docs, terms, posts, units = 0, 0, [], []
                for j in by_ns[ns]:
                    m, toks = batch[j], tokens[j]
                    prev = old.get(m.id)
                    if prev is not None and prev.state is not State.forgotten:
                        self._unpost(ns, prev.seq, prev.text)
                        docs, terms = docs - 1, terms - prev.n_terms
                    emb = self._vector_in(vectors[order[j]]) if vectors is not None else None
                    searchable = m.state is not State.forgotten
                    row = _row(m) + (emb, len(toks) if searchable else 0, rev)
                    if prev is None:
                        seq = self._exec(
                            f"INSERT INTO memories ({COLUMNS}, embedding, n_terms, version) "
                            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING seq", row,
                        ).fetchone()[0]
                    else:
                        seq = prev.seq
                        self._exec("DELETE FROM units WHERE namespace=? AND seq=?", (ns, seq))
                        if content(prev) != content(m):  # a rewrite, not a re-ingest
                            self._drop_edges(ns, seq)
                        self._exec(
                            f"""UPDATE memories SET conversation_id=?, session_id=?,
                                 turn_index=?, speaker=?, text=?, timestamp=?, state=?,
                                 policy_tags=?, metadata=?,
                                 embedding=COALESCE(?, embedding), n_terms=?, version=?
                               WHERE {self.NS_BY_SEQ} AND seq=?""",
                            row[2:] + (ns, seq),
                        )
                    units.append((ns, seq, m.text))
                    if searchable:
                        posts += [(ns, t, seq, tf, len(toks)) for t, tf in Counter(toks).items()]
                        docs, terms = docs + 1, terms + len(toks)
                self._many("INSERT INTO postings VALUES (?, ?, ?, ?, ?)", posts)
                self._many("INSERT INTO units VALUES (?, ?, ?, ?)", unit_rows(units))
                self._stats(ns, docs, terms)
                self._put_edges(ns, (edges or {}).get(ns, ()))
        return len(batch)

    def _put_edges(self, ns: str, edges: Sequence[Edge]) -> None:
        """Write edges as the complete outgoing edges of their sources: what a source pointed
        at before is replaced (a rewrite re-links later sources); ids resolved to seqs, an
        edge naming a missing memory is skipped."""
        if not edges:
            return
        seqs = {mid: v[0] for mid, v in self._existing(
            ns, [e.source for e in edges] + [e.target for e in edges]).items()}
        self._many("DELETE FROM validity_edges WHERE namespace=? AND source=?",
                   [(ns, seqs[s]) for s in dict.fromkeys(e.source for e in edges) if s in seqs])
        self._many(
            """INSERT INTO validity_edges VALUES (?, ?, ?, ?)
               ON CONFLICT (namespace, target, source) DO UPDATE SET score = excluded.score""",
            [(ns, seqs[e.target], seqs[e.source], float(e.score)) for e in edges
             if e.source in seqs and e.target in seqs])

    def _drop_edges(self, ns: str, seq: int) -> None:
        self._exec("DELETE FROM validity_edges WHERE namespace=? AND (source=? OR target=?)",
                   (ns, seq, seq))

    def set_edges(self, namespace: str, edges: Sequence[Edge]) -> None:
        """Replace every validity edge of a namespace (``memsieve migrate`` backfills stores
        written before edges existed)."""
        with self._write():
            self._bump(namespace)
            self._exec("DELETE FROM validity_edges WHERE namespace=?", (namespace,))
            self._put_edges(namespace, edges)

    def edges_from(self, namespace: str, source_ids: Sequence[str]) -> list[Edge]:
        """The stored write-time edges out of each source, whatever its state (a score is a
        judgement of two texts): what re-linking a source need not judge again."""
        out: list[Edge] = []
        for chunk in chunks(list(dict.fromkeys(source_ids))):
            q = ("SELECT s.id, t.id, e.score FROM validity_edges e "
                 "JOIN memories s ON s.namespace = e.namespace AND s.seq = e.source "
                 "JOIN memories t ON t.namespace = e.namespace AND t.seq = e.target "
                 f"WHERE e.namespace=? AND s.id IN ({','.join('?' * len(chunk))})")
            out += [Edge(sid, tid, float(score))
                    for sid, tid, score in self._rows(q, [namespace, *chunk])]
        return out

    def edges(self, namespace: str, target_ids: Sequence[str]) -> dict[str, list[Edge]]:
        """The write-time validity edges into each target, best score first; sources that
        are forgotten are left out (they are out of search, and out of evidence)."""
        out: dict[str, list[Edge]] = {}
        for chunk in chunks(list(dict.fromkeys(target_ids))):
            q = ("SELECT t.id, s.id, e.score FROM validity_edges e "
                 "JOIN memories t ON t.namespace = e.namespace AND t.seq = e.target "
                 "JOIN memories s ON s.namespace = e.namespace AND s.seq = e.source "
                 f"WHERE e.namespace=? AND t.id IN ({','.join('?' * len(chunk))}) "
                 "AND s.state != ? ORDER BY e.score DESC, s.seq")
            for tid, sid, score in self._rows(q, [namespace, *chunk, State.forgotten.value]):
                out.setdefault(tid, []).append(Edge(sid, tid, float(score)))
        return out

    def _analyze(self, texts: Sequence[str]) -> list[list[str]]:
        if self._analyzer is None:
            from memsieve.retrieve.bm25 import Analyzer

            self._analyzer = Analyzer()
        return self._analyzer(texts)

    def _existing(self, ns: str, ids: Sequence[str]) -> dict[str, _Stored]:
        """id → what is stored of each of ``ids`` already in namespace ``ns``."""
        out = {}
        for chunk in chunks(list(dict.fromkeys(ids))):
            q = ("SELECT id, seq, state, text, n_terms, speaker FROM memories WHERE namespace=? "
                 f"AND id IN ({','.join('?' * len(chunk))})")
            for mid, seq, state, text, n, speaker in self._exec(q, [ns, *chunk]).fetchall():
                out[mid] = _Stored(seq, State(state), text, n, speaker)
        return out

    def _unpost(self, ns: str, seq: int, text: str) -> None:
        self._many("DELETE FROM postings WHERE namespace=? AND term=? AND seq=?",
                   [(ns, t, seq) for t in sorted(set(self._analyze([text])[0]))])

    def _stats(self, ns: str, docs: int, terms: int) -> None:
        self._exec("UPDATE namespaces SET n_docs = n_docs + ?, n_terms = n_terms + ? "
                   "WHERE name=?", (docs, terms, ns))

    def _bump(self, ns: str) -> int:
        """Move the namespace to its next revision and return it. The row lock this takes
        serialises writers of one namespace until they commit."""
        return self._exec(
            """INSERT INTO namespaces (name, revision) VALUES (?, 1)
               ON CONFLICT (name) DO UPDATE SET revision = namespaces.revision + 1
               RETURNING revision""",
            (ns,),
        ).fetchone()[0]

    def _check_model(self, model: str | None, dim: int) -> None:
        want = f"{model}:{dim}"
        self._exec("INSERT INTO meta VALUES ('embedding_model', ?) ON CONFLICT (key) DO NOTHING",
                   (want,))
        stored = self._exec("SELECT value FROM meta WHERE key='embedding_model'").fetchone()[0]
        if stored != want:
            raise ConfigError(
                f"this store holds vectors of {stored!r}; cannot add vectors of {want!r}"
            )

    def set_state(self, namespace: str, memory_id: str, state: State | str) -> None:
        """Set a memory's lifecycle state; ``forgotten`` takes it out of search at once."""
        self.set_states(namespace, [memory_id], state)

    def set_states(self, namespace: str, memory_ids: Iterable[str], state: State | str) -> None:
        """Set the state of several memories in one transaction: all of them or, if one is
        missing (NotFound), none."""
        try:
            state = State(state)
        except ValueError:
            raise ConfigError(
                f"unknown state {state!r}; expected one of {[s.value for s in State]}"
            ) from None
        ids = id_list(memory_ids)
        with self._write():
            rev = self._bump(namespace)  # lock first, then read what to change
            found = self._existing(namespace, ids)
            missing = [i for i in ids if i not in found]
            if missing:
                raise NotFound(f"no memory {missing[0]!r} in namespace {namespace!r}")
            for memory_id in ids:
                self._set_state(namespace, found[memory_id], state, rev)

    def _set_state(self, namespace: str, prev: _Stored, state: State, rev: int) -> None:
        seq, old, text, n_terms = prev.seq, prev.state, prev.text, prev.n_terms
        if (old is State.forgotten) != (state is State.forgotten):
            if state is State.forgotten:
                self._unpost(namespace, seq, text)
                self._stats(namespace, -1, -n_terms)
                n_terms = 0
            else:
                toks = self._analyze([text])[0]
                self._many("INSERT INTO postings VALUES (?, ?, ?, ?, ?)",
                           [(namespace, t, seq, tf, len(toks)) for t, tf in Counter(toks).items()])
                n_terms = len(toks)
                self._stats(namespace, 1, n_terms)
        self._exec(f"UPDATE memories SET state=?, n_terms=?, version=? "
                   f"WHERE {self.NS_BY_SEQ} AND seq=?", (state.value, n_terms, rev, namespace, seq))

    def forget(self, namespace: str, memory_id: str) -> None:
        """Mark a memory ``forgotten``: kept for the audit trail, never retrieved again."""
        self.set_state(namespace, memory_id, State.forgotten)

    def purge(self, namespace: str, memory_ids: Iterable[str], *, wait_s: float = 10.0) -> int:
        """Delete memories for good: row, vector and postings; then the backend makes the
        bytes unreachable (see ``_after_purge``). Returns how many were deleted."""
        ids = id_list(memory_ids)
        removed = 0
        if ids:
            with self._write():
                rev = self._bump(namespace)
                old = self._existing(namespace, ids)
                for prev in old.values():
                    seq = prev.seq
                    if prev.state is not State.forgotten:
                        self._unpost(namespace, seq, prev.text)
                        self._stats(namespace, -1, -prev.n_terms)
                    self._exec(f"DELETE FROM memories WHERE {self.NS_BY_SEQ} AND seq=?",
                               (namespace, seq))
                    self._exec("DELETE FROM units WHERE namespace=? AND seq=?", (namespace, seq))
                    self._drop_edges(namespace, seq)
                    self._exec("""INSERT INTO removed VALUES (?, ?, ?)
                                  ON CONFLICT (namespace, seq) DO UPDATE
                                  SET version = excluded.version""", (namespace, seq, rev))
                removed = len(old)
                if removed:  # the audit keeps that an erasure happened, not what was erased
                    for chunk in chunks(list(old)):
                        self._exec(
                            "UPDATE exposure_items SET memory_id=? WHERE namespace=? AND "
                            f"memory_id IN ({','.join('?' * len(chunk))})",
                            [PURGED, namespace, *chunk],
                        )
                    self._exec("INSERT INTO erasures (time, namespace, count) VALUES (?, ?, ?)",
                               (_now(), namespace, removed))
        if removed:
            self._after_purge(wait_s)
        return removed

    # -- reads -------------------------------------------------------------------------------

    def get(self, namespace: str, memory_id: str) -> Memory:
        """The memory (namespace, id); NotFound if there is none."""
        rows = self._rows(
            f"SELECT {COLUMNS} FROM memories WHERE namespace=? AND id=?", (namespace, memory_id)
        )
        if not rows:
            raise NotFound(f"no memory {memory_id!r} in namespace {namespace!r}")
        return _memory(rows[0])

    def list(self, namespace: str) -> list[Memory]:
        """All memories of a namespace in store order, forgotten ones included (empty for an
        unknown namespace)."""
        rows = self._rows(
            f"SELECT {COLUMNS} FROM memories WHERE namespace=? ORDER BY seq", (namespace,)
        )
        return [_memory(r) for r in rows]

    def page(self, namespace: str, *, after: int = 0,
             limit: int = 100) -> tuple[list[Memory], int | None]:
        """Up to ``limit`` memories of a namespace in store order after cursor ``after``
        (forgotten ones included), and the cursor of the next page (None at the end)."""
        rows = self._rows(f"SELECT seq, {COLUMNS} FROM memories WHERE namespace=? AND seq>? "
                          "ORDER BY seq LIMIT ?", (namespace, int(after), int(limit) + 1))
        more = len(rows) > limit
        rows = rows[:limit]
        return [_memory(r[1:]) for r in rows], (rows[-1][0] if more else None)

    def vectors(self, namespace: str) -> tuple[list[str], np.ndarray]:
        """Ids and the (n, d) float32 matrix of a namespace's vectors, in store order."""
        rows = self._rows(
            f"SELECT id, {self.VECTOR_OUT} FROM memories WHERE namespace=? "
            "AND embedding IS NOT NULL "
            "ORDER BY seq",
            (namespace,),
        )
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r[0] for r in rows], self._vectors_out([r[1] for r in rows],
                                                       self.embedding_dim())

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
            if since == 0:  # a first load reads the namespace in store order
                rows = self._rows(f"SELECT seq, id, state, {self.VECTOR_OUT} FROM memories "
                                  "WHERE namespace=? ORDER BY seq", (namespace,))
            else:
                rows = self._rows(
                    f"SELECT seq, id, state, {self.VECTOR_OUT}, text FROM memories "
                    "WHERE namespace=? AND version>? ORDER BY seq", (namespace, since),
                )
            gone = [] if since == 0 else [r[0] for r in self._rows(
                "SELECT seq FROM removed WHERE namespace=? AND version>?", (namespace, since))]
            dim = self.embedding_dim()
        forgotten = State.forgotten.value
        keep = [r for r in rows if r[2] != forgotten]
        gone += [r[0] for r in rows if r[2] == forgotten]
        return Delta(
            revision=rev,
            full=since == 0,
            seqs=np.array([r[0] for r in keep], dtype=np.int64),
            ids=[r[1] for r in keep],
            vectors=self._vectors_out([r[3] for r in keep], dim),
            removed=np.array(sorted(gone), dtype=np.int64),
            texts=None if since == 0 else [r[4] for r in keep],
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
            q = (f"SELECT seq, {COLUMNS} FROM memories WHERE {self.NS_BY_SEQ} AND seq IN "
                 f"({','.join('?' * len(chunk))})")
            for row in self._rows(q, [namespace, *chunk]):
                found[row[0]] = _memory(row[1:])
        return [found[s] for s in seqs if s in found]

    def units(self, namespace: str, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """The atomic units of each memory (in turn order), by memory id."""
        out: dict[str, list[str]] = {}
        for chunk in chunks(list(dict.fromkeys(memory_ids))):
            q = ("SELECT m.id, u.text FROM units u JOIN memories m "
                 "ON m.namespace = u.namespace AND m.seq = u.seq "
                 f"WHERE u.namespace=? AND m.id IN ({','.join('?' * len(chunk))}) "
                 "ORDER BY u.seq, u.n")
            for mid, text in self._rows(q, [namespace, *chunk]):
                out.setdefault(mid, []).append(text)
        return out

    def neighbours(self, namespace: str, memory_ids: Sequence[str],
                   window: int = 1) -> dict[str, list[Memory]]:
        """Each memory with the searchable turns up to ``window`` before and after it in its
        session (by ``turn_index``), in turn order; a memory without session or turn index
        stands alone."""
        out: dict[str, list[Memory]] = {}
        with self.snapshot():
            for mid in dict.fromkeys(memory_ids):
                rows = self._rows(f"SELECT {COLUMNS} FROM memories WHERE namespace=? AND id=?",
                                  (namespace, mid))
                if not rows:
                    continue
                m = _memory(rows[0])
                if m.session_id is None or m.turn_index is None:
                    out[mid] = [m]
                    continue
                rows = self._rows(
                    f"SELECT {COLUMNS} FROM memories WHERE namespace=? AND session_id=? "
                    "AND turn_index BETWEEN ? AND ? AND (state != ? OR id = ?) "
                    "ORDER BY turn_index, seq",
                    (namespace, m.session_id, m.turn_index - window, m.turn_index + window,
                     State.forgotten.value, mid),
                )
                out[mid] = [_memory(r) for r in rows]
        return out

    def record_exposure(self, exposure: Exposure) -> Exposure:
        """Append one exposure (what reached one prompt, and what was kept out) in its own
        transaction; returns it with its id and time."""
        if self.readonly:
            raise StoreError(f"{self.where} is open read-only: cannot record the exposure")
        exposure = dataclasses.replace(exposure, time=exposure.time or _now())
        with self._write():
            eid = self._exec(
                "INSERT INTO exposures (time, namespace, query, mode, detail) "
                "VALUES (?, ?, ?, ?, ?) RETURNING seq",
                (exposure.time, exposure.namespace, exposure.query, exposure.mode,
                 json.dumps(exposure.detail, sort_keys=True)),
            ).fetchone()[0]
            items = [(mid, None) for mid in exposure.memory_ids] + list(exposure.excluded)
            self._many("INSERT INTO exposure_items VALUES (?, ?, ?, ?, ?)",
                       [(eid, pos, exposure.namespace, mid, reason)
                        for pos, (mid, reason) in enumerate(items)])
        return dataclasses.replace(exposure, id=int(eid))

    def exposures(self, namespace: str | None = None, memory_id: str | None = None,
                  *, limit: int = 100) -> list[Exposure]:
        """Recorded exposures, newest first: of a namespace, and/or those a memory reached
        (in the prompt or excluded from it)."""
        where, params = [], []
        if namespace is not None:
            where.append("e.namespace=?")
            params.append(namespace)
        if memory_id is not None:
            where.append("e.seq IN (SELECT exposure FROM exposure_items i WHERE i.memory_id=?"
                         + (" AND i.namespace=?)" if namespace is not None else ")"))
            params += [memory_id] + ([namespace] if namespace is not None else [])
        cond = f"WHERE {' AND '.join(where)}" if where else ""
        with self.snapshot():
            heads = self._rows(f"SELECT e.seq, e.time, e.namespace, e.query, e.mode, e.detail "
                               f"FROM exposures e {cond} ORDER BY e.seq DESC LIMIT ?",
                               [*params, int(limit)])
            items: dict[int, list[tuple[str, str | None]]] = {}
            for chunk in chunks([h[0] for h in heads]):
                for eid, mid, reason in self._rows(
                    "SELECT exposure, memory_id, reason FROM exposure_items WHERE exposure IN "
                    f"({','.join('?' * len(chunk))}) ORDER BY exposure, pos", list(chunk)):
                    items.setdefault(eid, []).append((mid, reason))
        return [
            Exposure(namespace=ns, query=q, mode=mode,
                     memory_ids=[m for m, r in items.get(eid, []) if r is None],
                     excluded=[(m, r) for m, r in items.get(eid, []) if r is not None],
                     detail=json.loads(detail), id=eid, time=t)
            for eid, t, ns, q, mode, detail in heads
        ]

    def erasures(self, namespace: str | None = None) -> list[Erasure]:
        """The purges recorded (time, namespace, how many memories), oldest first."""
        cond, params = ("WHERE namespace=?", [namespace]) if namespace is not None else ("", [])
        return [Erasure(*r) for r in self._rows(
            f"SELECT seq, time, namespace, count FROM erasures {cond} ORDER BY seq", params)]

    def _meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    def __enter__(self) -> SQLStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def audit_tables(serial: str) -> list[str]:
    """DDL both backends share (SQLite m004, PostgreSQL p002): a turn's atomic units, the
    exposure log (ids and reasons, never memory text), the erasure log, and the lookup of a
    turn's neighbours. ``serial`` is the backend's auto-increment primary key."""
    return [
        """CREATE TABLE units (
            namespace TEXT NOT NULL, seq BIGINT NOT NULL, n INTEGER NOT NULL, text TEXT NOT NULL,
            PRIMARY KEY (namespace, seq, n))""",
        f"""CREATE TABLE exposures (
            seq {serial}, time TEXT NOT NULL, namespace TEXT NOT NULL, query TEXT NOT NULL,
            mode TEXT NOT NULL, detail TEXT NOT NULL)""",
        "CREATE INDEX exposures_namespace ON exposures (namespace, seq)",
        """CREATE TABLE exposure_items (
            exposure BIGINT NOT NULL, pos INTEGER NOT NULL, namespace TEXT NOT NULL,
            memory_id TEXT NOT NULL, reason TEXT, PRIMARY KEY (exposure, pos))""",
        "CREATE INDEX exposure_items_memory ON exposure_items (namespace, memory_id)",
        f"""CREATE TABLE erasures (
            seq {serial}, time TEXT NOT NULL, namespace TEXT NOT NULL, count INTEGER NOT NULL)""",
        "CREATE INDEX memories_session ON memories (namespace, session_id, turn_index)",
    ]


def edge_tables() -> list[str]:
    """DDL both backends share (SQLite m005, PostgreSQL p003): the validity layer's
    write-time candidate edges, by seq (a purge or a rewrite drops them with the memory)."""
    return [
        """CREATE TABLE validity_edges (
            namespace TEXT NOT NULL, target BIGINT NOT NULL, source BIGINT NOT NULL,
            score REAL NOT NULL, PRIMARY KEY (namespace, target, source))""",
        "CREATE INDEX validity_edges_source ON validity_edges (namespace, source)",
    ]


def unit_rows(rows: Iterable[tuple[str, int, str]]) -> list[tuple[str, int, int, str]]:
    """(namespace, seq, n, unit) rows of the atomic units of (namespace, seq, text) rows."""
    from memsieve.assemble.units import split_units

    return [(ns, seq, n, u) for ns, seq, text in rows for n, u in enumerate(split_units(text))]


def refuse_foreign(where: str, tables: set[str]) -> None:
    """StoreError when a database holds tables but is not a memsieve store: never touch it."""
    if tables and "_migrations" not in tables:
        raise StoreError(
            f"{where} is not a memsieve database (it holds tables "
            f"{', '.join(sorted(tables)[:5])}); refusing to change it"
        )


def _reason(err: BaseException) -> str:
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if "malformed" in msg or "not a database" in msg:
        return f"{msg} (the file is damaged)"
    return msg


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


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
