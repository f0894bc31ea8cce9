"""Store contract tests against a real SQLite file."""

from __future__ import annotations

import sqlite3
import threading

import numpy as np
import pytest

from memsieve.errors import ConfigError, NotFound, StoreError
from memsieve.store import open_store
from memsieve.types import Memory, State


def mem(i: int, ns: str = "u1", text: str | None = None, **kw) -> Memory:
    return Memory(id=f"m{i}", namespace=ns, text=text or f"memory number {i}", **kw)


def vecs(n: int, d: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_add_get_roundtrip(fresh_store):
    m = mem(
        1,
        speaker="Sam",
        session_id="s1",
        turn_index=0,
        policy_tags=("health",),
        metadata={"k": [1, 2]},
        timestamp="2025-01-02T03:04:05",
    )
    assert fresh_store.add([m], vectors=vecs(1), model="x") == 1
    assert fresh_store.get("u1", "m1") == m


def test_upsert_same_id_twice_is_one_memory(fresh_store):
    fresh_store.add([mem(1, text="old")], vectors=vecs(1), model="x")
    fresh_store.add([mem(1, text="new")], vectors=vecs(1, seed=1), model="x")
    assert fresh_store.count() == 1
    assert fresh_store.get("u1", "m1").text == "new"
    ids, mat = fresh_store.vectors("u1")
    assert ids == ["m1"] and np.allclose(mat[0], vecs(1, seed=1)[0])


def test_repeated_id_in_one_batch_last_wins(fresh_store):
    assert fresh_store.add([mem(1, text="a"), mem(1, text="b")]) == 1
    assert fresh_store.get("u1", "m1").text == "b"


def test_list_by_namespace_in_store_order(fresh_store):
    fresh_store.add([mem(3), mem(1, ns="u2"), mem(2)])
    assert [m.id for m in fresh_store.list("u1")] == ["m3", "m2"]
    assert [m.id for m in fresh_store.list("u2")] == ["m1"]
    assert fresh_store.list("nobody") == []
    assert fresh_store.namespaces() == ["u1", "u2"]


def test_upsert_keeps_store_order(fresh_store):
    fresh_store.add([mem(1), mem(2)])
    fresh_store.add([mem(1, text="edited")])
    assert [m.id for m in fresh_store.list("u1")] == ["m1", "m2"]


def test_same_id_in_two_namespaces_is_two_memories(fresh_store):
    fresh_store.add([mem(1, ns="u1", text="alice's note")], vectors=vecs(1), model="x")
    fresh_store.add([mem(1, ns="u2", text="bob's note")], vectors=vecs(1, seed=1), model="x")
    assert fresh_store.get("u1", "m1").text == "alice's note"
    assert fresh_store.get("u2", "m1").text == "bob's note"
    assert np.allclose(fresh_store.vectors("u1")[1], vecs(1)) and fresh_store.count() == 2
    fresh_store.purge("u2", ["m1"])
    assert fresh_store.get("u1", "m1").text == "alice's note"
    with pytest.raises(NotFound) as err:
        fresh_store.get("u2", "m1")
    assert "u1" not in str(err.value)  # an error never names another tenant


def test_failed_batch_writes_nothing(fresh_store):
    fresh_store.add([mem(1)], vectors=vecs(1), model="x")
    with pytest.raises(ConfigError, match="holds vectors of 'x:4'"):
        fresh_store.add([mem(2), mem(3)], vectors=vecs(2, d=8), model="x")
    with pytest.raises(ConfigError, match="one row per memory"):
        fresh_store.add([mem(2), mem(3)], vectors=vecs(1), model="x")
    assert fresh_store.count() == 1


def test_failed_batch_rolls_back_partial_insert(fresh_store):
    fresh_store.add([mem(1, ns="u1")], vectors=vecs(1), model="x")
    # u2's memory is fine, u3's has vectors of another model: neither may be written.
    with pytest.raises(ConfigError):
        fresh_store.add([mem(2, ns="u2"), mem(3, ns="u3")], vectors=vecs(2, d=8), model="y")
    assert fresh_store.count() == 1 and fresh_store.revision("u2") == 0


def test_set_state_and_forget(fresh_store):
    fresh_store.add([mem(1), mem(2)])
    fresh_store.set_state("u1", "m1", "superseded")
    fresh_store.forget("u1", "m2")
    assert fresh_store.get("u1", "m1").state is State.superseded
    assert fresh_store.get("u1", "m2").state is State.forgotten
    with pytest.raises(ConfigError, match="unknown state"):
        fresh_store.set_state("u1", "m1", "bogus")
    with pytest.raises(NotFound, match="no memory 'zz' in namespace 'u1'"):
        fresh_store.forget("u1", "zz")
    with pytest.raises(NotFound):
        fresh_store.forget("u2", "m1")  # m1 is u1's: another namespace cannot touch it


def test_revision_moves_on_every_change(fresh_store):
    assert fresh_store.revision("u1") == 0
    fresh_store.add([mem(1)])
    r1 = fresh_store.revision("u1")
    fresh_store.set_state("u1", "m1", "stale")
    r2 = fresh_store.revision("u1")
    fresh_store.purge("u1", ["m1"])
    assert r1 < r2 < fresh_store.revision("u1")


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
