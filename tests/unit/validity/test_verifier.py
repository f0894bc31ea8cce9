"""The verifier: the §6.4 input form, scoring, the checkpoint format, threshold selection."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from memsieve.errors import ConfigError, MissingDependency
from memsieve.pairmodel import trained_prefixes
from memsieve.validity import verifier as vmod
from memsieve.validity.generator import generate
from memsieve.validity.train import binary_metrics, choose_thresholds
from memsieve.validity.verifier import (
    DEFAULT_CHECKPOINT,
    PairScorer,
    Verifier,
    format_pair,
)

TRIPLES = [
    ("Where does Sam work?", "Sam: I quit St. Mary's, I teach at Oakwood High now.",
     "Sam: I just started as a nurse at St. Mary's."),
    ("Where does Sam work?", "Sam: The weather has been awful all week.",
     "Sam: I just started as a nurse at St. Mary's."),
    ("Where does Sam live?", "Alex: I moved to Berlin.", "Sam: I live in Leeds."),
]


def test_input_form_is_exactly_the_deployed_calibrators():
    first, second = format_pair("Q?", "Sam: S.", "Sam: T.")
    assert first == ("USER_QUERY: Q? SOURCE_EVIDENCE: Sam: S. TASK: Decide whether the target "
                     "memory should be demoted for this user query.")
    assert second == "TARGET_MEMORY: Sam: T."


def test_pair_scorer_protocol_accepts_any_object_with_score():
    class Fake:
        def score(self, triples):
            return np.full(len(triples), 0.5)

    assert isinstance(Fake(), PairScorer)
    assert not isinstance(object(), PairScorer)


def test_trained_part_is_the_top_layers_and_the_head():
    assert trained_prefixes(2) == ("bert.encoder.layer.4.", "bert.encoder.layer.5.", "head.")
    assert trained_prefixes(0) == ("head.",)
    with pytest.raises(ConfigError, match="n_trainable_layers"):
        trained_prefixes(7)


@pytest.fixture(scope="module")
def tiny_trained() -> Verifier:
    """One top layer + head, two optimiser steps on eight generator examples, length 32."""
    torch.manual_seed(0)
    v = Verifier.from_base(n_trainable_layers=1, max_length=32)
    for name, p in v.model.named_parameters():
        p.requires_grad = name.startswith(trained_prefixes(1))
    opt = torch.optim.AdamW([p for p in v.model.parameters() if p.requires_grad], lr=1e-3)
    ex = generate(8, seed=0)
    labels = torch.tensor([e.label for e in ex])
    v.model.train()
    enc = v.encode([(e.query, e.source, e.target) for e in ex])
    for _ in range(2):
        logits = v.model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    v.model.eval()
    v.load_trained_state(v.trained_state())  # what a checkpoint holds: fp16-rounded
    return v


def test_cached_bottom_then_top_equals_the_full_forward(tiny_trained):
    enc = tiny_trained.encode(TRIPLES)
    args = (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    with torch.no_grad():
        full = tiny_trained.model(*args)
        h = tiny_trained.model.bottom(*args, 5)
        split = tiny_trained.model.top(h, *args[1:], 5)[0]
    torch.testing.assert_close(split, full)


def test_score_shape_range_order_and_batching(tiny_trained):
    s = tiny_trained.score(TRIPLES)
    assert s.shape == (3,) and s.dtype == np.float64
    assert np.all((s >= 0) & (s <= 1))
    np.testing.assert_allclose(tiny_trained.score(TRIPLES, batch_size=1), s, atol=1e-5)
    np.testing.assert_allclose(tiny_trained.score(TRIPLES[::-1])[::-1], s, atol=1e-5)
    assert tiny_trained.score([]).shape == (0,)


def test_bad_input_is_a_config_error(tiny_trained):
    with pytest.raises(ConfigError, match="triple 0"):
        tiny_trained.score([("only", "two")])
    with pytest.raises(ConfigError, match="batch_size"):
        tiny_trained.score(TRIPLES, batch_size=0)


def test_save_load_roundtrip(tiny_trained, tmp_path):
    path = tiny_trained.save(tmp_path / "v.pt", config={
        "thresholds": {"context_threshold": 0.4, "demote_threshold": 0.8}})
    blob = torch.load(path, weights_only=True)
    assert set(blob["state_dict"]) == {k for k in tiny_trained.model.state_dict()
                                       if k.startswith(trained_prefixes(1))}
    assert all(t.dtype == torch.float16 for t in blob["state_dict"].values())
    loaded = Verifier.load(path)
    assert loaded.thresholds == {"context_threshold": 0.4, "demote_threshold": 0.8}
    assert loaded.n_trainable_layers == 1 and loaded.max_length == 32
    np.testing.assert_allclose(loaded.score(TRIPLES), tiny_trained.score(TRIPLES), atol=1e-6)


def test_load_errors(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="not found"):
        Verifier.load(tmp_path / "absent.pt")
    bad = tmp_path / "bad.pt"
    torch.save({"config": {"format": "other"}, "state_dict": {}}, bad)
    with pytest.raises(ConfigError, match="is not a"):
        Verifier.load(bad)
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ConfigError, match="not a readable checkpoint"):
        Verifier.load(bad)
    monkeypatch.setattr(vmod, "DEFAULT_CHECKPOINT", tmp_path / "missing.pt")
    with pytest.raises(MissingDependency, match="memsieve train validity"):
        Verifier.load()


@pytest.mark.skipif(not DEFAULT_CHECKPOINT.is_file(), reason="released checkpoint absent")
def test_released_checkpoint_scores_sensibly():
    v = Verifier.load()
    th = v.thresholds
    assert 0 < th["context_threshold"] <= th["demote_threshold"] <= 1
    assert 0 < th["min_similarity"] < 1 and v.config["similarity_model"] == "minilm"
    assert "min_similarity" not in v.stage_thresholds("hash")
    assert DEFAULT_CHECKPOINT.stat().st_size < 12 * 2**20
    s = v.score(TRIPLES)
    assert s.shape == (3,) and np.all((s >= 0) & (s <= 1))
    assert s[0] >= th["context_threshold"] > max(s[1], s[2])  # overturn vs chit-chat, other person


# ------------------------------------------------------------------------------ thresholds
# (memsieve.validity.train's pure functions: the rule the checkpoint's thresholds follow)


def test_thresholds_max_f1_and_precision_floor():
    scores = np.array([0.1, 0.4, 0.6, 0.9])
    labels = np.array([0, 1, 0, 1])
    # t=0.4: P 2/3, R 1, F1 0.8 (best); t=0.9: P 1, R 0.5, F1 0.667; t=0.6: P .5 R .5
    th = choose_thresholds(scores, labels, context_precision=None)
    assert th == {"context_threshold": 0.4, "demote_threshold": 0.9}
    # the flag at a precision floor: t=0.9 is the only threshold with precision >= 0.9
    assert choose_thresholds(scores, labels)["context_threshold"] == 0.9
    m = binary_metrics(scores, labels, 0.4)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == 1.0
    assert m["f1"] == pytest.approx(0.8) and m["accuracy"] == 0.75


def test_thresholds_ties_and_unreachable_precision():
    # tied scores enter together: at t=0.5 both 0.5s are predicted positive
    th = choose_thresholds(np.array([0.5, 0.5, 0.2]), np.array([1, 0, 0]))
    assert th["context_threshold"] == 0.5  # precision 0.9 unreachable: max F1
    assert th["demote_threshold"] == 1.0  # precision 0.5 < 0.95 everywhere: never demote
    with pytest.raises(ConfigError):
        choose_thresholds(np.array([0.1]), np.array([0]))
