"""What only the SQLite file store does: WAL, reclaimed space, refusing files that are not
memsieve stores. The shared contract is in test_store_contract.py."""

from __future__ import annotations

import sqlite3
import threading

import numpy as np
import pytest

from memsieve.errors import NotFound, StoreError
from memsieve.store import open_store
from memsieve.types import Memory


def mem(i: int, ns: str = "u1", text: str | None = None, **kw) -> Memory:
    return Memory(id=f"m{i}", namespace=ns, text=text or f"memory number {i}", **kw)


def vecs(n: int, d: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_purge_removes_row_and_vector_and_reclaims_space(tmp_path):
    path = tmp_path / "p.db"
    store = open_store(path)
    big = "lorem ipsum " * 400
    store.add([mem(i, text=f"{big} {i}") for i in range(300)], vectors=vecs(300, d=384), model="x")
    store.checkpoint()  # so the file size is comparable
    before = path.stat().st_size
    assert store.purge("u1", [f"m{i}" for i in range(290)]) == 290
    after = path.stat().st_size
    assert store.count() == 10
    ids, mat = store.vectors("u1")
    assert len(ids) == 10 and mat.shape == (10, 384)
    with pytest.raises(NotFound):
        store.get("u1", "m0")
    assert after < before / 3, (before, after)
    store.close()


def test_wal_mode_and_concurrent_readers(tmp_path):
    path = tmp_path / "w.db"
    writer = open_store(path)
    mode = writer._conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    writer.add([mem(0)])
    errors: list[Exception] = []

    def read() -> None:
        try:
            reader = open_store(path, create=False)
            for _ in range(50):
                assert reader.count("u1") >= 1
            reader.close()
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(1, 51):
        writer.add([mem(i)])
    for t in threads:
        t.join(timeout=30)
    assert not errors and writer.count("u1") == 51
    writer.close()


def test_missing_db_without_create(tmp_path):
    with pytest.raises(NotFound, match="no database at"):
        open_store(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_unreadable_db(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a memsieve database"):
        open_store(bad)
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path)


def test_store_file_is_plain_sqlite(tmp_path):
    path = tmp_path / "s.db"
    with open_store(path) as store:
        store.add([mem(1)])
    rows = sqlite3.connect(path).execute("SELECT id, namespace FROM memories").fetchall()
    assert rows == [("m1", "u1")]
