"""The Store contract, run against every backend (SQLite file, PostgreSQL server)."""

from __future__ import annotations

import numpy as np
import pytest

from memsieve.errors import ConfigError, NotFound
from memsieve.types import Memory, State


def mem(i: int, ns: str = "u1", text: str | None = None, **kw) -> Memory:
    return Memory(id=f"m{i}", namespace=ns, text=text or f"memory number {i}", **kw)


def vecs(n: int, d: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_add_get_roundtrip(any_store):
    m = mem(
        1,
        speaker="Sam",
        session_id="s1",
        turn_index=0,
        policy_tags=("health",),
        metadata={"k": [1, 2]},
        timestamp="2025-01-02T03:04:05",
    )
    assert any_store.add([m], vectors=vecs(1), model="x") == 1
    assert any_store.get("u1", "m1") == m


def test_upsert_same_id_twice_is_one_memory(any_store):
    any_store.add([mem(1, text="old")], vectors=vecs(1), model="x")
    any_store.add([mem(1, text="new")], vectors=vecs(1, seed=1), model="x")
    assert any_store.count() == 1
    assert any_store.get("u1", "m1").text == "new"
    ids, mat = any_store.vectors("u1")
    assert ids == ["m1"] and np.allclose(mat[0], vecs(1, seed=1)[0])


def test_repeated_id_in_one_batch_last_wins(any_store):
    assert any_store.add([mem(1, text="a"), mem(1, text="b")]) == 1
    assert any_store.get("u1", "m1").text == "b"


def test_list_by_namespace_in_store_order(any_store):
    any_store.add([mem(3), mem(1, ns="u2"), mem(2)])
    assert [m.id for m in any_store.list("u1")] == ["m3", "m2"]
    assert [m.id for m in any_store.list("u2")] == ["m1"]
    assert any_store.list("nobody") == []
    assert any_store.namespaces() == ["u1", "u2"]


def test_upsert_keeps_store_order(any_store):
    any_store.add([mem(1), mem(2)])
    any_store.add([mem(1, text="edited")])
    assert [m.id for m in any_store.list("u1")] == ["m1", "m2"]


def test_same_id_in_two_namespaces_is_two_memories(any_store):
    any_store.add([mem(1, ns="u1", text="alice's note")], vectors=vecs(1), model="x")
    any_store.add([mem(1, ns="u2", text="bob's note")], vectors=vecs(1, seed=1), model="x")
    assert any_store.get("u1", "m1").text == "alice's note"
    assert any_store.get("u2", "m1").text == "bob's note"
    assert np.allclose(any_store.vectors("u1")[1], vecs(1)) and any_store.count() == 2
    any_store.purge("u2", ["m1"])
    assert any_store.get("u1", "m1").text == "alice's note"
    with pytest.raises(NotFound) as err:
        any_store.get("u2", "m1")
    assert "u1" not in str(err.value)  # an error never names another tenant


def test_failed_batch_writes_nothing(any_store):
    any_store.add([mem(1)], vectors=vecs(1), model="x")
    with pytest.raises(ConfigError, match="holds vectors of 'x:4'"):
        any_store.add([mem(2), mem(3)], vectors=vecs(2, d=8), model="x")
    with pytest.raises(ConfigError, match="one row per memory"):
        any_store.add([mem(2), mem(3)], vectors=vecs(1), model="x")
    assert any_store.count() == 1


def test_failed_batch_rolls_back_partial_insert(any_store):
    any_store.add([mem(1, ns="u1")], vectors=vecs(1), model="x")
    # u2's memory is fine, u3's has vectors of another model: neither may be written.
    with pytest.raises(ConfigError):
        any_store.add([mem(2, ns="u2"), mem(3, ns="u3")], vectors=vecs(2, d=8), model="y")
    assert any_store.count() == 1 and any_store.revision("u2") == 0


def test_set_state_and_forget(any_store):
    any_store.add([mem(1), mem(2)])
    any_store.set_state("u1", "m1", "superseded")
    any_store.forget("u1", "m2")
    assert any_store.get("u1", "m1").state is State.superseded
    assert any_store.get("u1", "m2").state is State.forgotten
    with pytest.raises(ConfigError, match="unknown state"):
        any_store.set_state("u1", "m1", "bogus")
    with pytest.raises(NotFound, match="no memory 'zz' in namespace 'u1'"):
        any_store.forget("u1", "zz")
    with pytest.raises(NotFound):
        any_store.forget("u2", "m1")  # m1 is u1's: another namespace cannot touch it


def test_revision_moves_on_every_change(any_store):
    assert any_store.revision("u1") == 0
    any_store.add([mem(1)])
    r1 = any_store.revision("u1")
    any_store.set_state("u1", "m1", "stale")
    r2 = any_store.revision("u1")
    any_store.purge("u1", ["m1"])
    assert r1 < r2 < any_store.revision("u1")


# -- atomic units, neighbours, the exposure and erasure logs ----------------------------------


def test_units_follow_their_memory(any_store):
    any_store.add([mem(1, text="First sentence is here. Second sentence is here too.")])
    assert any_store.units("u1", ["m1"]) == {
        "m1": ["First sentence is here.", "Second sentence is here too."]}
    any_store.add([mem(1, text="Now only one sentence remains here.")])  # an update
    assert any_store.units("u1", ["m1"]) == {"m1": ["Now only one sentence remains here."]}
    any_store.purge("u1", ["m1"])
    assert any_store.units("u1", ["m1"]) == {}


def test_neighbours_are_the_searchable_turns_around_it_in_its_session(any_store):
    any_store.add([mem(i, session_id="s1" if i < 5 else "s2", turn_index=i % 5)
                   for i in range(8)] + [mem(99)])
    assert [m.id for m in any_store.neighbours("u1", ["m2"])["m2"]] == ["m1", "m2", "m3"]
    assert [m.id for m in any_store.neighbours("u1", ["m5"], window=2)["m5"]] == [
        "m5", "m6", "m7"]
    any_store.forget("u1", "m3")
    assert [m.id for m in any_store.neighbours("u1", ["m2"])["m2"]] == ["m1", "m2"]
    assert [m.id for m in any_store.neighbours("u1", ["m99"])["m99"]] == ["m99"]
    assert any_store.neighbours("u2", ["m2"]) == {}  # another namespace sees nothing


def test_exposures_are_queried_by_namespace_and_memory(any_store):
    from memsieve.store.base import Exposure

    first = any_store.record_exposure(Exposure("u1", "q1", "lookup", ["m1", "m2"],
                                               [("m3", "inadmissible: x")], {"budget": 300}))
    any_store.record_exposure(Exposure("u2", "q2", "replay", ["m1"], []))
    assert first.id is not None and first.time
    assert [e.query for e in any_store.exposures()] == ["q2", "q1"]  # newest first
    assert [e.query for e in any_store.exposures("u1")] == ["q1"]
    assert [e.query for e in any_store.exposures(memory_id="m1")] == ["q2", "q1"]
    assert [e.query for e in any_store.exposures("u1", "m3")] == ["q1"]
    assert any_store.exposures("u2", "m3") == []
    (e,) = any_store.exposures("u1")
    assert (e.memory_ids, e.excluded, e.detail) == (["m1", "m2"], [("m3", "inadmissible: x")],
                                                    {"budget": 300})


def test_purge_tombstones_the_audit_and_records_the_erasure(any_store):
    from memsieve.store.base import PURGED, Exposure

    any_store.add([mem(1), mem(2), mem(1, ns="u2")])
    any_store.record_exposure(Exposure("u1", "q", "lookup", ["m1", "m2"], []))
    any_store.record_exposure(Exposure("u2", "q", "lookup", ["m1"], []))
    assert any_store.purge("u1", ["m1", "missing"]) == 1
    assert any_store.exposures("u1")[0].memory_ids == [PURGED, "m2"]
    assert any_store.exposures("u2")[0].memory_ids == ["m1"]  # another tenant's m1 stays
    assert any_store.exposures("u1", "m1") == []
    (erasure,) = any_store.erasures()
    assert (erasure.namespace, erasure.count) == ("u1", 1) and erasure.time
    assert any_store.erasures("u2") == []


def test_set_states_is_all_or_nothing(any_store):
    any_store.add([mem(1), mem(2)])
    with pytest.raises(NotFound, match="'m9'"):
        any_store.set_states("u1", ["m1", "m9"], "forgotten")
    assert any_store.get("u1", "m1").state is State.current  # nothing changed
    any_store.set_states("u1", ["m1", "m2"], State.forgotten)
    assert {m.state for m in any_store.list("u1")} == {State.forgotten}
    assert any_store.changes("u1", 0).ids == []
