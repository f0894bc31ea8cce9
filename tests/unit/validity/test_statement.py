"""The target gate of the validity layer: small talk states nothing a later memory could
overturn, so it costs no verifier pass and is never flagged; everything else is judged as
before."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest
import torch

from memsieve.embed import HashingEncoder
from memsieve.errors import ConfigError
from memsieve.ingest import add_memories
from memsieve.trace import Trace
from memsieve.types import Candidate, Memory, Query
from memsieve.validity.stage import ValidityStage
from memsieve.validity.statement import (
    DEFAULT_CHECKPOINT,
    StatementGate,
    gate_from_spec,
    packaged_gate,
    statement_examples,
)

T0 = datetime(2024, 1, 1)


def test_examples_are_deterministic_balanced_and_speaker_prefixed():
    texts, labels = statement_examples(400, seed=3)
    assert (texts, labels) == statement_examples(400, seed=3)
    assert len(texts) == 400 and 0.4 < np.mean(labels) < 0.6
    assert all(": " in t for t in texts)
    assert statement_examples(400, seed=4)[0] != texts


def test_fit_calibrate_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 8))
    y = (x[:, 0] > 0).astype(int)
    gate = StatementGate.fit(x, y, model="toy")
    assert ((gate.scores(x) >= 0.5) == y).mean() > 0.95
    t = gate.calibrate(x, y, keep=0.9)
    assert (gate.scores(x)[y == 1] >= t).mean() >= 0.9
    loaded = StatementGate.load(gate.save(tmp_path / "g.pt"))
    assert loaded.model == "toy" and loaded.threshold == pytest.approx(t)
    np.testing.assert_array_equal(loaded.scores(x), gate.scores(x))  # fp16 on both sides
    with pytest.raises(ConfigError, match="expects"):
        gate.scores(np.zeros((2, 3)))
    with pytest.raises(ConfigError, match="both classes"):
        StatementGate.fit(x, np.ones(2000, int), model="toy")


def test_load_refuses_a_missing_or_foreign_file(tmp_path):
    with pytest.raises(ConfigError, match="no statement gate"):
        StatementGate.load(tmp_path / "none.pt")
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ConfigError, match="not a statement gate"):
        StatementGate.load(tmp_path / "other.pt")
    assert gate_from_spec("off") is None


def test_the_packaged_gate_is_for_minilm_stores_only():
    assert DEFAULT_CHECKPOINT.is_file()
    gate = packaged_gate("minilm")
    assert gate is not None and gate.model == "minilm" and 0.0 < gate.threshold < 1.0
    assert packaged_gate("hash") is None  # another embedding space: every target is judged


# state changes told in chat register, after a reaction: each can go out of date, so the gate
# must let it through (a gate trained to drop one-off outings too lost two of these)
CHAT_STATES = [
    "Jo: Sorry to hear that! I'm starting a dance studio because I love dancing.",
    "Jo: Wow, congrats! Oh and I'm learning the piano now, it's so fun.",
    "Jo: Haha, yes! I moved to Denver last month, still unpacking.",
    "Jo: Aw thanks! I just adopted a puppy, she's adorable!",
    "Jo: Omg, same! I quit my job at the bank yesterday.",
    "Jo: Thanks Mel! We're expecting a baby in May!",
    "Jo: Hey! I got engaged last weekend, so happy!",
    "Jo: Sounds fun! I joined a climbing gym, going twice a week now.",
    "Jo: Guess what, I finally got my driving licence and bought a little Fiat!",
    "Jo: Ugh, rough week. Broke up with Sam on Sunday.",
    "user: Thanks! By the way my new number is 555 0199.",
    "user: Great chat. Oh, I switched to the night shift at the hospital.",
]


def test_the_packaged_gate_on_real_text():
    from memsieve.embed import MiniLMEncoder

    gate = packaged_gate("minilm")
    keep = gate.keeps(MiniLMEncoder().encode([
        "Sam: I just started as a nurse at Riverside Hospital.",
        "user: We moved to Leeds in March, the flat is tiny but cheap.",
        "Mel: Hey Caroline! Long time no see, how have you been?",
        "Jon: Wow, that sounds amazing! What was the best part?",
        *CHAT_STATES,
    ]))
    assert keep.tolist() == [True, True, False, False] + [True] * len(CHAT_STATES)


def _stage_setup(store):
    enc = HashingEncoder()
    mems = [Memory(id="hi", namespace="ns", text="Sam: hey hey, how are you doing?",
                   speaker="Sam", timestamp=T0),
            Memory(id="job", namespace="ns", text="Sam: I work at Acme as a baker",
                   speaker="Sam", timestamp=T0 + timedelta(days=1)),
            Memory(id="hi2", namespace="ns", text="Sam: hey hey, how are you doing today?",
                   speaker="Sam", timestamp=T0 + timedelta(days=2)),
            Memory(id="job2", namespace="ns", text="Sam: I work at Acme as a manager now",
                   speaker="Sam", timestamp=T0 + timedelta(days=3))]
    add_memories(store, mems, enc)
    small_talk = enc.encode([mems[0].text])[0]
    # reads a memory as small talk when its vector is close to the greeting's
    gate = StatementGate([(-10.0 * small_talk[:, None], np.array([5.0]))], 0.5, model=enc.name)
    return mems, gate


@pytest.mark.parametrize("policy", ["edges", "top1", "nearest"])
def test_a_gated_target_costs_no_verifier_pass_and_is_never_flagged(fresh_store, policy,
                                                                   counting):
    mems, gate = _stage_setup(fresh_store)
    query = Query(text="How is Sam?", namespace="ns")
    cands = [Candidate(m, score=1.0) for m in reversed(mems)]
    runs = {}
    for name, g in (("without", None), ("with", gate)):
        scorer = counting()
        stage = ValidityStage([scorer], store=fresh_store, source_policy=policy, target_gate=g,
                              n_sources=3)
        trace = Trace()
        out = stage(query, cands, trace=trace)
        runs[name] = ({c.memory.id: c.annotations["validity"].status for c in out},
                      scorer.pairs)
        if g is not None:  # the trace and the note say what the gate skipped, and why
            assert sorted(trace.notes["validity_target_gate"]["skipped"]) == ["hi", "hi2"]
            notes = {c.memory.id: c.annotations["validity"].context_note for c in out}
            assert "small talk" in notes["hi"] and "small talk" not in notes["job"]
    (without, pairs_without), (with_gate, pairs_with) = runs["without"], runs["with"]
    assert without["hi"] == "possibly_outdated"  # the fake scorer overturns any pair
    assert with_gate["hi"] == "current" and with_gate["job"] == without["job"]
    assert with_gate["job"] == "possibly_outdated"
    assert pairs_with < pairs_without


def test_small_talk_is_no_source_of_a_write_time_edge(fresh_store, counting):
    """With ``edges``, a later memory the gate reads as small talk ("how are you doing at
    Acme?") asserts no change: its edge to a stating memory costs no verifier pass."""
    job = Memory(id="job", namespace="ns", text="Sam: I work at Acme as a baker", speaker="Sam",
                 timestamp=T0)
    chat = Memory(id="chat", namespace="ns", text="Sam: hey hey, how are you doing at Acme "
                  "as a baker?", speaker="Sam", timestamp=T0 + timedelta(days=4))
    enc = HashingEncoder()
    greeting = enc.encode(["Sam: hey hey, how are you doing?"])[0]
    gate = StatementGate([(-10.0 * greeting[:, None], np.array([5.0]))], 0.5, model=enc.name)
    add_memories(fresh_store, [job, chat], enc)
    assert [e.source for e in fresh_store.edges("ns", ["job"])["job"]] == ["chat"]
    status = {}
    for name, g in (("without", None), ("with", gate)):
        scorer = counting()
        stage = ValidityStage([scorer], store=fresh_store, source_policy="edges", target_gate=g)
        out = stage(Query(text="Where does Sam work?", namespace="ns"),
                    [Candidate(job, score=1.0), Candidate(chat, score=0.5)], trace=Trace())
        status[name] = ({c.memory.id: c.annotations["validity"].status for c in out}["job"],
                        scorer.pairs)
    assert status["without"] == ("possibly_outdated", 1)  # the fake scorer overturns any pair
    assert status["with"] == ("current", 0)


def test_caller_given_sources_are_judged_even_for_a_gated_target(fresh_store, counting):
    mems, gate = _stage_setup(fresh_store)
    scorer = counting()
    stage = ValidityStage([scorer], store=fresh_store, target_gate=gate,
                          sources={"hi": ["hi2"]})
    out = stage(Query(text="How is Sam?", namespace="ns"),
                [Candidate(m, score=1.0) for m in mems], trace=Trace())
    assert {c.memory.id: c.annotations["validity"].status for c in out}["hi"] \
        == "possibly_outdated"


def test_a_target_gate_needs_the_store_for_its_vectors(counting):
    gate = StatementGate([(np.zeros((4, 1)), np.zeros(1))], 0.5, model="x")
    with pytest.raises(ConfigError, match="target_gate"):
        ValidityStage([counting()], target_gate=gate)

