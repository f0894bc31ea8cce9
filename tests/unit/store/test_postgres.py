"""What only the PostgreSQL store does: the optional HNSW index and server-side nearest search,
and refusing a database that is not a memsieve store. The shared contract is in
test_store_contract.py."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from memsieve.errors import StoreError
from memsieve.store import PostgresStore, open_store
from memsieve.types import Memory

pytestmark = pytest.mark.postgres


def test_hnsw_nearest_finds_the_exact_neighbours(store_target):
    if not store_target.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(200, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with open_store(store_target) as store:
        store.add([Memory(id=f"m{i}", namespace="u", text=f"memory {i}") for i in range(200)],
                  vectors=vecs, model="x")
        store.add([Memory(id="other", namespace="v", text="another tenant")], vectors=vecs[:1],
                  model="x")
        store.forget("u", "m3")
    with PostgresStore(store_target, hnsw=True) as store:
        indexes = [r[0] for r in store._conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")]
        assert "memories_hnsw" in indexes
        q = vecs[3] + 0.01 * vecs[7]
        got = store.nearest("u", q, 5)
        exact = [f"m{i}" for i in np.argsort(-(vecs @ q)) if i != 3][:5]
        assert got == exact and "other" not in got and "m3" not in got


def test_a_database_with_other_tables_is_refused_untouched(store_target):
    if not store_target.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    with psycopg.connect(store_target, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (x int)")
    with pytest.raises(StoreError, match="not a memsieve database"):
        open_store(store_target)
    with psycopg.connect(store_target, autocommit=True) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert tables == {"invoices"}
