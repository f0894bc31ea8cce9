"""The synthetic generator: deterministic, stratified as documented, labels by construction."""

from __future__ import annotations

import builtins
import dataclasses

import pytest

from memsieve.errors import ConfigError
from memsieve.validity import generator as g
from memsieve.validity import lists as g_lists
from memsieve.validity.chains import make_chains
from memsieve.validity.generator import (
    BASE_WEIGHTS,
    HARD_FOCUS_MULTIPLIER,
    POS_MULTIPLIER,
    RARE_POSITIVES,
    allocate,
    generate,
    label_of,
    training_weights,
)


@pytest.fixture(scope="module")
def sample() -> list[g.Example]:
    return generate(1500, seed=11)


def test_same_seed_same_data_other_seed_other_data():
    a, b, c = generate(300, seed=5), generate(300, seed=5), generate(300, seed=6)
    assert a == b
    assert [e.source for e in a] != [e.source for e in c]


def test_weights_are_a_distribution_over_the_documented_strata():
    assert sum(BASE_WEIGHTS.values()) == pytest.approx(1.0)
    assert sum(training_weights().values()) == pytest.approx(1.0)
    assert RARE_POSITIVES <= set(BASE_WEIGHTS)
    for stratum in BASE_WEIGHTS:  # every stratum is documented in the module docstring
        assert stratum in g.__doc__


def test_training_mix_oversamples_hard_negatives_x4_and_rare_positives_x3():
    base, train = BASE_WEIGHTS, training_weights()
    ref = train["pos_explicit"] / base["pos_explicit"]  # a common positive: multiplier 1
    for s in base:
        mult = HARD_FOCUS_MULTIPLIER if s.startswith("hard_") else \
            POS_MULTIPLIER if s in RARE_POSITIVES else 1
        assert train[s] / base[s] == pytest.approx(ref * mult), s


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 1234])
def test_allocation_is_exact_and_sums_to_n(n):
    counts = allocate(n, BASE_WEIGHTS)
    assert sum(counts.values()) == n
    for s, w in BASE_WEIGHTS.items():
        assert abs(counts[s] - n * w) < 1.0, s  # floor(n·w) or one more


def test_strata_proportions_match_the_weights(sample):
    counts = {s: 0 for s in BASE_WEIGHTS}
    for e in sample:
        counts[e.stratum] += 1
    assert counts == allocate(1500, BASE_WEIGHTS)
    train = generate(1000, seed=3, weights=training_weights())
    pos = sum(e.label for e in train) / len(train)
    assert 0.25 < pos < 0.35  # documented: about 30% positives in the training mix


def test_labels_come_from_the_stratum_only(sample):
    for e in sample:
        assert e.label == label_of(e.stratum) == int(e.stratum.startswith("pos_"))
    with pytest.raises(ConfigError, match="unknown stratum"):
        label_of("gold")


def test_every_target_precedes_its_source(sample):
    assert all(0 <= e.target_turn < e.source_turn for e in sample)


def test_turns_are_conversation_turns_and_the_query_names_the_target_speaker(sample):
    speakers = set(g.NAMES) | {"user", "assistant"}
    for e in sample:
        speaker, _, text = e.target.partition(": ")
        assert speaker in speakers and text and text[0].isupper(), e.target
        if speaker == "user":  # agent transcript: "the user" or the user's own "my"
            q = f" {e.query.lower()} "
            first_person = ("the user", " my ", " i ", " i'd ", " i'm ", " me ", " me?")
            assert any(w in q for w in first_person), e.query
        else:
            assert speaker in e.query, (e.query, e.target)
        src_speaker = e.source.partition(": ")[0]
        assert src_speaker in speakers
        if e.stratum in ("hard_other_person", "pos_reported"):
            assert src_speaker != speaker
        elif e.stratum not in ("easy_chitchat", "hard_reaction"):
            assert src_speaker == speaker
        assert "{" not in e.query + e.source + e.target  # no unfilled template field


def test_strata_have_their_shape(sample):
    for e in sample:
        if e.stratum in ("pos_compound", "hard_query_scope"):
            assert any(j in e.target for j in g._COMPOUND_JOINERS)
        if e.stratum == "pos_reported":
            assert e.target.partition(": ")[0] in e.source.partition(": ")[2]
        if e.stratum == "easy_chitchat":
            assert e.source.partition(": ")[2].rstrip() != ""


def test_a_share_of_agent_transcripts(sample):
    share = sum(e.target.startswith("user: ") for e in sample) / len(sample)
    lists = sum(g.BASE_WEIGHTS[s] for s in g_lists.LIST_STRATA)  # always the user's own
    expected = g.USER_SHARE * (1 - g.BASE_WEIGHTS["pos_reported"] - lists) + lists
    assert abs(share - expected) < 0.05


def test_surface_variety(sample):
    assert len({e.target for e in sample}) > 0.85 * len(sample)  # twins share their target
    assert len({(e.query, e.source, e.target) for e in sample}) > 0.97 * len(sample)
    list_keys = {"todo_list"} | {f"likes_{k}" for k in g_lists.LIKE_ITEMS}
    assert {e.attribute for e in sample} == {a.key for a in g.ATTRIBUTES} | list_keys


def test_the_generator_reads_no_file(monkeypatch):
    def no_open(*args, **kwargs):
        raise AssertionError(f"the generator opened a file: {args[:1]}")

    monkeypatch.setattr(builtins, "open", no_open)
    generate(200, seed=1)
    make_chains(12, seed=1)


def test_examples_are_frozen(sample):
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample[0].label = 1  # type: ignore[misc]


# ------------------------------------------------------------------------------ chains


@pytest.fixture(scope="module")
def chains() -> list[g.Chain]:
    return make_chains(120, seed=4)


def test_chains_are_deterministic(chains):
    assert make_chains(120, seed=4) == chains
    assert make_chains(120, seed=5) != chains


def test_chain_lengths_edges_and_time_order(chains):
    assert {c.length for c in chains} == {2, 3, 4}
    for c in chains:
        ids = [m.id for m in c.memories]
        assert len(ids) == c.length
        assert c.edges == tuple((ids[j], ids[j - 1]) for j in range(1, c.length))
        assert c.parents == {ids[j]: [ids[j - 1]] for j in range(1, c.length)}
        times = [m.timestamp for m in c.store_memories]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert {m.namespace for m in c.store_memories} == {c.chain_id}
        assert set(c.queries) == set(ids)


def test_chain_gold_sets(chains):
    kinds = {c.kind for c in chains}
    assert kinds == {"root_update", "mid_update", "control_unrelated", "control_repeat"}
    for c in chains:
        ids = [m.id for m in c.memories]
        if c.kind == "root_update":
            assert c.gold_invalid == frozenset(ids) and c.direct_invalid == {ids[0]}
        elif c.kind == "mid_update":
            (k,) = [ids.index(i) for i in c.direct_invalid]
            assert 0 < k < c.length - 1
            assert c.gold_invalid == frozenset(ids[k:])  # the node and its descendants only
        else:
            assert c.gold_invalid == frozenset() and c.direct_invalid == frozenset()
        assert c.update.id not in c.gold_invalid


def test_chain_memories_are_turns_of_one_speaker(chains):
    for c in chains:
        speakers = {m.speaker for m in c.store_memories}
        assert len(speakers) == 1
        (name,) = speakers
        assert all(m.text.startswith(f"{name}: ") for m in c.store_memories)


def test_compound_strata_come_as_query_twins(sample):
    twins = [(a, b) for a, b in zip(sample, sample[1:], strict=False)
             if a.target == b.target and a.source == b.source and a.query != b.query]
    assert twins
    assert {frozenset((a.stratum, b.stratum)) for a, b in twins} == \
        {frozenset(("pos_compound", "hard_query_scope"))}
    n_compound = sum(e.stratum == "pos_compound" for e in sample)
    assert len(twins) == n_compound  # every compound positive has its negative twin
    for a, b in twins:
        assert a.label != b.label and a.attribute != b.attribute



def test_list_strata_are_target_conditioned(sample):
    """A list positive drops the target's own item; the hard list negatives never do."""
    for e in sample:
        if e.stratum not in g_lists.LIST_STRATA:
            continue
        assert e.target.startswith("user: ") and e.source.startswith("user: ")
        target, source = e.target.lower(), e.source.lower()
        items = [t.lower() for t in g_lists.TASKS
                 if t.lower() in target or g_lists._ing(t).lower() in target]
        items += [x.lower() for k in g_lists.LIKE_ITEMS for x in g_lists.LIKE_ITEMS[k]
                  if x.lower() in target]
        assert items, e.target
        if e.stratum == "pos_list_drop":
            assert any(i in source or g_lists._ing(i).lower() in source for i in items), e


def test_ing_forms():
    assert g_lists._ing("plan the product launch") == "planning the product launch"
    assert g_lists._ing("write the newsletter draft") == "writing the newsletter draft"
    assert g_lists._ing("call the insurance company") == "calling the insurance company"
