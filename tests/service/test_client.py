"""``memsieve.Client`` against a real ``memsieve serve`` process: same types, same errors."""

from __future__ import annotations

import pytest

from memsieve.admissibility import Admissibility
from memsieve.assemble import Context
from memsieve.embed import HashingEncoder
from memsieve.errors import AccessDenied, ConfigError, NotFound, Unauthorized
from memsieve.ingest import add_memories
from memsieve.store import open_store
from memsieve.types import Memory, Query

from .conftest import KEY


@pytest.fixture
def server(tmp_path, serve):
    db = tmp_path / "c.db"
    with open_store(db) as store:
        add_memories(store, [Memory(id="seed", namespace="other", text="not yours")],
                     HashingEncoder())
    return serve(str(db), ["sam"], "--validity", "off")


def test_the_client_speaks_the_library_types(server):
    from memsieve import Client

    with Client(server.url, KEY) as client:
        ids = client.add([Memory(id="m1", namespace="sam", text="I work as a nurse in Leeds."),
                          {"namespace": "sam", "text": "My cat is called Pepper.",
                           "policy_tags": ["pets"]}])
        assert ids[0] == "m1" and len(ids) == 2
        response = client.search("what is the cat called", "sam", k=2)
        assert response.results[0].text == "My cat is called Pepper."
        assert isinstance(response.results[0].annotations["admissibility"], Admissibility)
        assert response.trace.exposed == [r.memory_id for r in response.results]
        denied = client.search(Query(text="cat", namespace="sam", intent="current",
                                     policy={"deny": ["pets"]}), admissibility="enforce")
        assert [e for e in denied.trace.excluded] == [ids[1]]
        ctx = client.context("where does Sam work", "sam", mode="lookup", budget=50)
        assert isinstance(ctx, Context) and ctx.memory_ids[0] == "m1"
        (exposure,) = client.audit("sam")
        assert exposure.id == ctx.exposure_id and exposure.memory_ids == ctx.memory_ids
        assert [m.id for m in client.list("sam", page_size=1)] == ids
        assert client.get("sam", "m1").text.startswith("I work")
        client.forget("sam", "m1")
        assert client.get("sam", "m1").state.value == "forgotten"
        client.forget("sam", "m1", purge=True)
        with pytest.raises(NotFound):
            client.get("sam", "m1")
        with pytest.raises(AccessDenied):
            client.get("other", "seed")
        with pytest.raises(ConfigError, match="k"):
            client.search("cat", "sam", k=0)
    with Client(server.url, "wrong-key-000000000") as stranger, pytest.raises(Unauthorized):
        stranger.search("cat", "sam")
