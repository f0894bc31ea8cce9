"""The REST app in process (FastAPI's TestClient over the real app, store and models): every
401 / 403 / 413 / 422 case, key scoping, batch atomicity, pagination, context and exposures."""

from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from memsieve.service.app import create_app  # noqa: E402
from memsieve.service.core import MAX_BATCH, MemoryService  # noqa: E402
from memsieve.service.keys import Keys  # noqa: E402
from memsieve.store import open_store  # noqa: E402

ALICE, BOB, BOTH = "alice-key-0123456789", "bob-key-0123456789ab", "both-key-0123456789ab"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("svc") / "s.db")
    from memsieve.embed import HashingEncoder

    service = MemoryService(store, encoder=HashingEncoder(), validity="off")
    keys = Keys({ALICE: ["alice"], BOB: ["bob"], BOTH: ["alice", "bob"]})
    yield create_app(service, keys, max_body=64 * 1024)
    store.close()


@pytest.fixture(scope="module")
def http(app):
    with TestClient(app) as client:
        batch = [{"namespace": ns, "id": f"m{i}", "text": f"{ns} note {i} about tea and cats",
                  "session_id": "s1", "turn_index": i} for ns in ("alice", "bob")
                 for i in range(5)]
        r = client.post("/v1/memories", json={"memories": batch}, headers=auth(BOTH))
        assert r.status_code == 200, r.text
        yield client


def auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def test_health_needs_no_key(http):
    assert http.get("/v1/health").json()["status"] == "ok"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"},
                                     {"Authorization": f"Basic {ALICE}"},
                                     {"Authorization": ALICE}])
def test_no_or_unknown_key_is_401(http, headers):
    r = http.post("/v1/search", json={"query": "tea", "namespace": "alice"}, headers=headers)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("request_", [
    ("post", "/v1/search", {"json": {"query": "tea", "namespace": "{ns}"}}),
    ("post", "/v1/context", {"json": {"query": "tea", "namespace": "{ns}"}}),
    ("get", "/v1/memories?namespace={ns}", {}),
    ("get", "/v1/namespaces/{ns}/memories/m1", {}),
    ("delete", "/v1/namespaces/{ns}/memories/m1", {}),
    ("post", "/v1/namespaces/{ns}/memories/m1/forget", {}),
    ("get", "/v1/exposures?namespace={ns}", {}),
    ("post", "/v1/memories", {"json": {"memories": [{"namespace": "{ns}", "text": "x"}]}}),
])
def test_a_namespace_not_granted_is_403_whether_or_not_it_exists(http, request_):
    method, path, kw = request_
    answers = []
    for ns in ("bob", "nobody-has-this"):
        kw_ns = json.loads(json.dumps(kw).replace("{ns}", ns))
        r = getattr(http, method)(path.replace("{ns}", ns), headers=auth(ALICE), **kw_ns)
        answers.append((r.status_code, r.json()))
    assert answers[0] == answers[1] and answers[0][0] == 403
    assert http.get("/v1/namespaces/bob/memories/m1", headers=auth(BOB)).status_code == 200


@pytest.mark.parametrize("body, field", [
    ({"namespace": "alice"}, "query"),
    ({"query": "tea"}, "namespace"),
    ({"query": "tea", "namespace": "alice", "k": 0}, "k"),
    ({"query": "tea", "namespace": "alice", "intent": "future"}, "intent"),
    ({"query": "tea", "namespace": "alice", "bogus": 1}, "bogus"),
    ({"query": "tea", "namespace": "alice", "policy": {"allow": ["x"]}}, "allow"),
    ({"query": "   ", "namespace": "alice"}, "empty"),
])
def test_a_bad_search_body_is_422_naming_the_field(http, body, field):
    r = http.post("/v1/search", json=body, headers=auth(ALICE))
    assert r.status_code == 422 and field in json.dumps(r.json())


def test_a_batch_is_atomic_and_names_the_bad_field(http):
    before = http.get("/v1/memories?namespace=alice&limit=1000", headers=auth(ALICE)).json()
    bad = [{"namespace": "alice", "id": "new1", "text": "fine"},
           {"namespace": "alice", "id": "new2", "text": "x", "turn_index": "first"}]
    r = http.post("/v1/memories", json={"memories": bad}, headers=auth(ALICE))
    assert r.status_code == 422 and "memories[1]" in r.text and "turn_index" in r.text
    mixed = [{"namespace": "alice", "id": "new1", "text": "fine"},
             {"namespace": "bob", "id": "new2", "text": "fine"}]
    assert http.post("/v1/memories", json={"memories": mixed},
                     headers=auth(ALICE)).status_code == 403
    after = http.get("/v1/memories?namespace=alice&limit=1000", headers=auth(ALICE)).json()
    assert after == before


def test_a_chunked_body_is_411_and_a_bodyless_post_is_fine(http):
    def chunks():
        yield b'{"query": "tea", "namespace": "alice"}'

    r = http.post("/v1/search", content=chunks(), headers=auth(ALICE))
    assert r.status_code == 411
    r = http.post("/v1/namespaces/alice/memories/nope/forget", headers=auth(ALICE))
    assert r.status_code == 404  # reached the handler: no body needs no length


def test_oversize_is_413(http):
    big = {"memories": [{"namespace": "alice", "text": "x" * 70_000}]}
    assert http.post("/v1/memories", json=big, headers=auth(ALICE)).status_code == 413
    many = {"memories": [{"namespace": "alice", "text": "t"}] * (MAX_BATCH + 1)}
    r = http.post("/v1/memories", json=many, headers=auth(ALICE))
    assert r.status_code == 413 and str(MAX_BATCH) in r.json()["detail"]


def test_search_is_bound_to_the_namespace(http):
    r = http.post("/v1/search", json={"query": "note about tea", "namespace": "alice", "k": 3},
                  headers=auth(ALICE))
    assert r.status_code == 200
    out = r.json()
    assert len(out["results"]) == 3 and {x["namespace"] for x in out["results"]} == {"alice"}
    assert all("admissibility" in x for x in out["results"]) and out["excluded"] == []


def test_pages_with_a_cursor(http):
    seen, cursor = [], None
    while True:
        url = "/v1/memories?namespace=bob&limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = http.get(url, headers=auth(BOB)).json()
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"m{i}" for i in range(5)]
    bad = http.get("/v1/memories?namespace=bob&cursor=abc", headers=auth(BOB))
    assert bad.status_code == 422 and "cursor" in bad.text


def test_forget_purge_and_get(http):
    h = auth(BOB)
    assert http.post("/v1/namespaces/bob/memories/m4/forget", headers=h).status_code == 200
    r = http.post("/v1/search", json={"query": "bob note 4", "namespace": "bob"}, headers=h)
    assert "m4" not in [x["memory_id"] for x in r.json()["results"]]
    assert http.get("/v1/namespaces/bob/memories/m4", headers=h).json()["state"] == "forgotten"
    assert http.delete("/v1/namespaces/bob/memories/m4", headers=h).status_code == 200
    assert http.get("/v1/namespaces/bob/memories/m4", headers=h).status_code == 404
    assert http.delete("/v1/namespaces/bob/memories/m4", headers=h).status_code == 404
    assert http.get("/v1/namespaces/alice/memories/m4", headers=auth(ALICE)).status_code == 200


def test_context_is_recorded_in_the_exposure_log(http):
    h = auth(ALICE)
    ctx = http.post("/v1/context", json={"query": "tea", "namespace": "alice", "budget": 60,
                                         "mode": "lookup"}, headers=h).json()
    assert ctx["mode"] == "lookup" and ctx["tokens"] <= 60 and ctx["memories"]
    log = http.get("/v1/exposures?namespace=alice", headers=h).json()["exposures"]
    assert log[0]["id"] == ctx["exposure_id"]
    assert log[0]["memory_ids"] == list(dict.fromkeys(m["memory_id"] for m in ctx["memories"]))
    one = ctx["memories"][0]["memory_id"]
    by_memory = http.get(f"/v1/exposures?namespace=alice&memory_id={one}", headers=h).json()
    assert ctx["exposure_id"] in [e["id"] for e in by_memory["exposures"]]


def test_openapi_docs_are_served(http):
    assert http.get("/docs").status_code == 200
    paths = http.get("/openapi.json").json()["paths"]
    assert {"/v1/search", "/v1/context", "/v1/memories", "/v1/exposures"} <= set(paths)


def test_concurrent_requests_all_succeed(http):
    errors = []

    def worker(i: int) -> None:
        try:
            for j in range(5):
                if j % 2:
                    r = http.post("/v1/memories", headers=auth(ALICE), json={"memories": [
                        {"namespace": "alice", "id": f"c{i}-{j}", "text": f"thread {i} {j}"}]})
                else:
                    r = http.post("/v1/search", headers=auth(ALICE),
                                  json={"query": f"thread {i}", "namespace": "alice"})
                if r.status_code != 200:
                    errors.append(r.text)
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(err))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
