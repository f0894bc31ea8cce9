"""A LoCoMo slice gives the same top-10 on SQLite and PostgreSQL (same write path, same
postings, same delta-fed dense index), including after interleaved writes and forgets."""

from __future__ import annotations

import pytest

from memsieve.embed import HashingEncoder
from memsieve.eval.datasets import load_task
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline
from memsieve.store import open_store
from memsieve.types import Query

pytestmark = pytest.mark.postgres


def top10(store, queries) -> list[list[tuple[str, float]]]:
    p = Pipeline.default(store, encoder=HashingEncoder(), rerank="off", validity="off", k=10)
    return [[(r.memory_id, round(r.score, 4)) for r in p.run(Query(text=q.text,
                                                                  namespace=q.namespace)).results]
            for q in queries]


def test_locomo_slice_same_top10_on_both_backends(data_dir, pg_server, tmp_path):
    task = load_task("locomo", data_dir / "locomo" / "locomo10.json")
    groups = set(task.groups[:2])
    memories = [m for m in task.memories if m.namespace in groups]
    queries = [q for q in task.queries if q.namespace in groups][:60]
    lite = open_store(tmp_path / "l.db")
    pg = open_store(pg_server)
    try:
        for store in (lite, pg):
            add_memories(store, memories[: len(memories) // 2], HashingEncoder())
            top10(store, queries[:5])  # the index is live before the rest arrives
            add_memories(store, memories[len(memories) // 2 :], HashingEncoder())
            store.forget(memories[3].namespace, memories[3].id)
        a, b = top10(lite, queries), top10(pg, queries)
        assert [[i for i, _ in r] for r in a] == [[i for i, _ in r] for r in b]
        assert a == b
    finally:
        lite.close()
        pg.close()
