"""Context assembly: atomic units, each access mode under a budget, auto, the exposure record."""

from __future__ import annotations

from datetime import datetime

import pytest

from memsieve.assemble import AccessMode, Assembler, AutoRule, count_tokens, split_units
from memsieve.assemble.context import query_features
from memsieve.errors import ConfigError
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline
from memsieve.types import Memory, Query


def test_split_units_merges_fragments_and_keeps_single_sentences_whole():
    assert split_units("Wow! I adopted a puppy named Biscuit today. He is a tiny beagle.") == [
        "Wow! I adopted a puppy named Biscuit today.", "He is a tiny beagle."]
    assert split_units("ok") == ["ok"]
    assert split_units("line one is long enough\nline two is long enough") == [
        "line one is long enough", "line two is long enough"]
    assert count_tokens("I'm fine, thanks!") == 7
    assert split_units("I started as a nurse at St. Mary's Hospital in Leeds. Dr. Lee hired me "
                       "on the spot.") == ["I started as a nurse at St. Mary's Hospital in Leeds.",
                                           "Dr. Lee hired me on the spot."]


TURNS = [
    ("s1", 0, "Hi there. How was your week at work? Tell me everything."),
    ("s1", 1, "I had a busy week at work. I adopted a puppy named Biscuit on Saturday. "
              "He chews my shoes."),
    ("s1", 2, "That sounds lovely. What breed is he? I love dogs."),
    ("s2", 0, "Biscuit is a beagle. He loves long walks in the park near my flat."),
    ("s2", 1, "My sister is visiting next month. We will go hiking together."),
    ("s3", 0, "I started a pottery class. Biscuit sleeps under the table while I work."),
]


@pytest.fixture
def assembler(fresh_store, hash_encoder):
    mems = [Memory(id=f"{s}:{t}", namespace="u", session_id=s, turn_index=t, text=text,
                   speaker="user", timestamp=datetime(2025, 1, int(s[1])))
            for s, t, text in TURNS]
    add_memories(fresh_store, mems + [Memory(id="s1:1", namespace="other", text="Biscuit")],
                 hash_encoder)
    pipeline = Pipeline.default(fresh_store, encoder=hash_encoder, rerank="off",
                                validity="off")
    return Assembler(pipeline, rule=AutoRule({}))


Q = Query(text="What is the name of the puppy I adopted?", namespace="u")


@pytest.mark.parametrize("mode", ["lookup", "compose", "replay", "topk", "auto"])
@pytest.mark.parametrize("budget", [40, 80, 400])
def test_every_mode_stays_inside_the_budget(assembler, mode, budget):
    ctx = assembler(Q, mode=mode, budget=budget, record=False)
    assert ctx.tokens == (count_tokens(ctx.text) if ctx.text else 0) <= budget
    assert all(m.startswith("s") for m in ctx.memory_ids)  # never the other namespace


def test_lookup_reads_the_unit_that_answers(assembler):
    ctx = assembler(Q, mode="lookup", budget=400, record=False)
    first = ctx.memories[0]
    assert first.memory_id == "s1:1" and first.role == "unit"
    assert first.text == "I adopted a puppy named Biscuit on Saturday."
    assert ctx.memories[0].text in ctx.text.splitlines()[1]


def test_replay_brings_the_neighbours_of_a_hit(assembler):
    ctx = assembler(Q, mode="replay", budget=400, record=False)
    assert ctx.memory_ids[:3] == ["s1:0", "s1:1", "s1:2"]
    assert [m.role for m in ctx.memories[:3]] == ["neighbour", "turn", "neighbour"]


def test_compose_reaches_more_sessions_than_lookup_in_a_small_budget(assembler):
    sessions = {}
    for mode in ("lookup", "compose"):
        ctx = assembler(Q, mode=mode, budget=45, record=False)
        sessions[mode] = {m.split(":")[0] for m in ctx.memory_ids}
    assert len(sessions["compose"]) >= len(sessions["lookup"])
    ctx = assembler(Q, mode="compose", budget=400, record=False)
    first = [m.split(":")[0] for m in ctx.memory_ids]
    assert first[0] != first[1]  # the best hit, then the best of another session
    assert len(set(first[:5])) == 3


def test_auto_follows_its_rule(assembler):
    rule = AutoRule({"300": {"default": "replay", "buckets": {}}})
    assembler.rule = rule
    assert assembler(Q, mode="auto", budget=300, record=False).mode == "auto:replay"
    rule = AutoRule({"300": {"default": "replay",
                             "buckets": {query_features(Q.text, []): "compose"}}})
    assert rule.choose(query_features(Q.text, []), 280) is AccessMode.compose


def test_auto_rule_fit_picks_the_best_mode_per_budget_and_bucket():
    rows = [("a", 300, {"lookup": 1.0, "compose": 0.0, "replay": 0.5})] * 20 + \
           [("b", 300, {"lookup": 0.0, "compose": 0.0, "replay": 1.0})] * 30 + \
           [("c", 300, {"lookup": 0.0, "compose": 1.0, "replay": 0.0})] * 3
    rule = AutoRule.fit(rows, min_support=15)
    assert rule.table["300"]["default"] == "replay"
    # only buckets that beat the default get their own mode; c has too few queries
    assert rule.table["300"]["buckets"] == {"a": "lookup"}
    assert AutoRule.load(rule.to_json()).choose("c", 300) is AccessMode.replay


def test_the_exposure_records_ids_in_prompt_order_and_never_text(assembler):
    ctx = assembler(Q, mode="lookup", budget=120)
    (exposure,) = assembler.store.exposures("u")
    assert exposure.id == ctx.exposure_id and exposure.memory_ids == ctx.memory_ids
    assert exposure.mode == "lookup" and exposure.detail["budget"] == 120
    dumped = str(exposure.to_dict())
    assert "Biscuit on Saturday" not in dumped and "adopted a puppy named" not in dumped


def test_enforced_exclusions_reach_the_context_and_the_audit(fresh_store, hash_encoder):
    add_memories(fresh_store, [
        Memory(id="old", namespace="u", text="I live in Rome.", state="stale"),
        Memory(id="new", namespace="u", text="I live in Paris now."),
        Memory(id="med", namespace="u", text="I live with asthma.", policy_tags=["health"]),
    ], hash_encoder)
    pipeline = Pipeline.default(fresh_store, encoder=hash_encoder, rerank="off",
                                validity="off", admissibility="enforce")
    q = Query(text="where do I live", namespace="u", intent="current",
              policy={"deny": ["health"]})
    ctx = Assembler(pipeline, rule=AutoRule({}))(q, mode="topk", budget=300)
    assert ctx.memory_ids == ["new"]
    assert {m for m, _ in ctx.excluded} == {"old", "med"}
    assert fresh_store.exposures("u")[0].excluded == ctx.excluded


def test_replay_never_brings_in_an_inadmissible_neighbour(fresh_store, hash_encoder):
    add_memories(fresh_store, [
        Memory(id="a", namespace="u", session_id="s", turn_index=0,
               text="My doctor changed my asthma medication.", policy_tags=["health"]),
        Memory(id="b", namespace="u", session_id="s", turn_index=1,
               text="I take the bus to the office in Leeds."),
        Memory(id="c", namespace="u", session_id="s", turn_index=2,
               text="I used to live on Baker Street.", state="stale"),
    ], hash_encoder)
    q = Query(text="how do I get to the office", namespace="u", intent="current",
              policy={"deny": ["health"]})
    for mode, want_in in (("enforce", ["b"]), ("annotate", ["a", "b", "c"])):
        pipeline = Pipeline.default(fresh_store, encoder=hash_encoder, rerank="off",
                                    validity="off", admissibility=mode, k=1)
        assembler = Assembler(pipeline, depth=1, rule=AutoRule({}))
        ctx = assembler(q, mode="replay", budget=400)
        assert ctx.memory_ids == want_in, mode
        if mode == "enforce":
            assert {m for m, _ in ctx.excluded} >= {"a", "c"}
            assert fresh_store.exposures("u")[0].excluded == ctx.excluded
            # neighbours that were never ranked candidates are judged on their own
            only_b = [c for c in pipeline.candidates(q) if c.memory.id == "b"]
            alone = assembler.assemble(q, only_b, mode="replay", budget=400)
            assert alone.memory_ids == ["b"] and {m for m, _ in alone.excluded} == {"a", "c"}
        else:
            roles = {i.memory_id: i.admissibility.status for i in ctx.memories}
            assert roles == {"a": "inadmissible", "b": "admissible", "c": "inadmissible"}


@pytest.mark.parametrize("kw, match", [({"mode": "deep"}, "mode must be"),
                                       ({"budget": 0}, "budget must be")])
def test_bad_mode_or_budget_is_a_config_error(assembler, kw, match):
    with pytest.raises(ConfigError, match=match):
        assembler(Q, record=False, **kw)


def test_the_packaged_auto_rule_loads():
    rule = AutoRule.load()
    assert rule.choose("fact|narrow", 600) in (AccessMode.lookup, AccessMode.compose,
                                               AccessMode.replay)
