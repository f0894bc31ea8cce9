"""Natural verifier examples from Memora's session labels (a tiny hand-made persona)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memsieve.errors import NotFound
from memsieve.validity.memora_examples import memora_examples, summary


def _session(sid: int, op: str | None, details: dict | None, text: str,
             kind: str = "preference") -> dict:
    return {"session_id": sid, "session_type": kind, "operation": op,
            "operation_details": details, "date": "2025-06-01",
            "conversation": [
                {"turn": 0, "speaker": "ai_agent", "message": "Hi!", "share_memory": False},
                {"turn": 1, "speaker": "user_agent", "message": text, "share_memory": True}]}


def _persona(root: Path) -> Path:
    pref = {"preference": "like", "subcategory": "decades"}
    sessions = [
        _session(1, "add", {**pref, "item": "1960s"}, "I love 1960s music."),
        _session(2, "add", {**pref, "item": "1980s"}, "80s synth pop is great too."),
        _session(3, "update", {**pref, "item": "1940s", "update_type": "value_update",
                               "old_item": "1960s"}, "Into 1940s big band now, not the 60s."),
        _session(4, "delete", {**pref, "item": "1980s"}, "I've grown out of 80s music."),
        _session(5, "add", {"item": "email_1", "content_data": {"to": ["A"]}}, "Add A.",
                 kind="activity"),
        _session(6, None, None, "Just chatting.", kind="no_memory"),
    ]
    folder = root / "monthly" / "academic_researcher"
    folder.mkdir(parents=True)
    (folder / "sessions.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in sessions), encoding="utf-8")
    return root


def test_changes_are_positives_other_items_of_the_list_are_negatives(tmp_path):
    root = _persona(tmp_path)
    ex = memora_examples(root, periods=("monthly",), personas=("academic_researcher",))
    assert summary(ex) == {"hard_memora_list": 1, "hard_memora_other_item": 2,
                           "pos_memora_delete": 1, "pos_memora_update": 1}
    by = {e.stratum: e for e in ex}
    assert by["pos_memora_update"].target == "user: I love 1960s music."
    assert by["pos_memora_update"].source.startswith("user: Into 1940s")
    assert by["pos_memora_delete"].target == "user: 80s synth pop is great too."
    neg = by["hard_memora_list"]
    assert (neg.target, neg.source, neg.label) == (
        "user: I love 1960s music.", "user: 80s synth pop is great too.", 0)
    others = {(e.source[:12], e.target) for e in ex if e.stratum == "hard_memora_other_item"}
    assert others == {("user: Into 1", "user: 80s synth pop is great too."),  # 80s still liked
                      ("user: I've g", "user: Into 1940s big band now, not the 60s.")}
    assert all(e.target_turn < e.source_turn for e in ex)
    assert all("email" not in e.source for e in ex)  # documents are left out


def test_same_seed_same_examples(tmp_path):
    root = _persona(tmp_path)
    kw = {"periods": ("monthly",), "personas": ("academic_researcher",), "seed": 3}
    assert memora_examples(root, **kw) == memora_examples(root, **kw)


def test_missing_persona_is_a_clear_error(tmp_path):
    with pytest.raises(NotFound, match="sessions.jsonl"):
        memora_examples(tmp_path, periods=("weekly",), personas=("nobody",))


def test_training_mix_needs_its_data(tmp_path):
    from memsieve.errors import ConfigError
    from memsieve.validity.train import TrainConfig, natural_examples

    assert natural_examples(TrainConfig()) == []  # the packaged recipe: generator only
    with pytest.raises(ConfigError, match="memora_dir"):
        natural_examples(TrainConfig(memora=4))
    root = _persona(tmp_path)
    (root / "quarterly").mkdir()
    (root / "monthly" / "academic_researcher").rename(root / "quarterly" / "academic_researcher")
    _persona(root)  # the same persona in both periods
    cfg = TrainConfig(memora=4, memora_dir=str(root))
    with pytest.raises(NotFound):  # the other training personas are missing here
        natural_examples(cfg)


def test_write_time_edges_that_change_nothing_are_negatives(tmp_path):
    """The edge finder's own pairs: an edge whose later session leaves the earlier item
    standing is a negative; the edge of a true change (3 -> 1 here) is left out."""
    from memsieve.embed import HashingEncoder
    from memsieve.validity.edges import FLOOR
    from memsieve.validity.memora_examples import memora_edge_examples

    pref = {"preference": "like", "subcategory": "decades"}
    sessions = [
        _session(1, "add", {**pref, "item": "1960s"}, "I really love listening to 1960s music"),
        _session(2, "add", {**pref, "item": "1980s"}, "I really love listening to 1980s music"),
        _session(3, "update", {**pref, "item": "1940s", "update_type": "value_update",
                               "old_item": "1960s"},
                 "I really love listening to 1940s music, not 1960s music"),
    ]
    folder = tmp_path / "monthly" / "academic_researcher"
    folder.mkdir(parents=True)
    (folder / "sessions.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in sessions), encoding="utf-8")
    kw = {"periods": ("monthly",), "personas": ("academic_researcher",)}
    v = HashingEncoder().encode([f"user: {sessions[i]['conversation'][1]['message']}"
                                 for i in (0, 2)])
    assert v[0] @ v[1] >= FLOOR  # the true change is linked, so leaving it out is tested
    ex = memora_edge_examples(tmp_path, HashingEncoder(), **kw)
    assert {(e.source_turn, e.target_turn) for e in ex} == {(2, 1), (3, 2)}
    assert all(e.label == 0 and e.stratum == "hard_memora_edge" for e in ex)
    assert ex == memora_edge_examples(tmp_path, HashingEncoder(), **kw)  # seeded


def test_mined_edges_need_the_memora_mix():
    from memsieve.errors import ConfigError
    from memsieve.validity.train import TrainConfig, natural_examples

    with pytest.raises(ConfigError, match="memora > 0"):
        natural_examples(TrainConfig(memora_edges=10))
