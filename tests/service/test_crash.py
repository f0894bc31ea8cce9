"""kill -9 the server during a stream of batch adds; restart: every acknowledged batch is
there whole, no batch is there in part, and the store opens cleanly. Both backends."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter

from memsieve.embed import HashingEncoder
from memsieve.ingest import add_memories
from memsieve.store import open_store
from memsieve.types import Memory

from .conftest import KEY

BATCH = 25


def test_kill_9_during_batch_adds_loses_no_acknowledged_batch(store_target, serve):
    import httpx

    with open_store(store_target) as store:  # fixes the store's model: the hash encoder
        add_memories(store, [Memory(id="seed", namespace="crash", text="seed")],
                     HashingEncoder())
    server = serve(store_target, ["crash"], "--validity", "off", "--rerank", "off")
    acked: list[int] = []
    stop = threading.Event()

    def stream() -> None:
        with httpx.Client(base_url=server.url, timeout=30,
                          headers={"Authorization": f"Bearer {KEY}"}) as http:
            for b in range(10_000):
                if stop.is_set():
                    return
                batch = [{"namespace": "crash", "id": f"b{b}-{i}",
                          "text": f"batch {b} memory {i} about the garden"} for i in range(BATCH)]
                try:
                    r = http.post("/v1/memories", json={"memories": batch})
                except httpx.HTTPError:
                    return  # the server is gone mid-request: this batch was not acknowledged
                if r.status_code == 200:
                    acked.append(b)

    writer = threading.Thread(target=stream)
    writer.start()
    for _ in range(600):  # wait (bounded) until a few batches are acknowledged
        if len(acked) >= 6:
            break
        threading.Event().wait(0.05)
    server.kill()
    stop.set()
    writer.join(timeout=60)
    assert len(acked) >= 6

    server.start()  # the same store, reopened after the crash
    with httpx.Client(base_url=server.url, timeout=30,
                      headers={"Authorization": f"Bearer {KEY}"}) as http:
        ids, cursor = [], None
        while True:
            params = {"namespace": "crash", "limit": 1000} | ({"cursor": cursor} if cursor else {})
            page = http.get("/v1/memories", params=params).json()
            ids += [m["id"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        hits = http.post("/v1/search", json={"query": "garden", "namespace": "crash"})
        assert hits.status_code == 200 and hits.json()["results"]
    server.stop()
    per_batch = Counter(i.split("-")[0] for i in ids if i != "seed")
    assert all(per_batch[f"b{b}"] == BATCH for b in acked)  # every acknowledged batch, whole
    assert set(per_batch.values()) <= {BATCH}  # no partial batch, acknowledged or not
    if "://" not in store_target:
        with sqlite3.connect(store_target) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with open_store(store_target) as store:
        assert store.count("crash") == len(ids)
