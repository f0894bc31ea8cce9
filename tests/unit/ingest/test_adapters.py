"""Ingest adapters: ids, namespaces, text, timestamps, order, and one-line errors.

Each adapter is tested on a tiny fixture written in the dataset's real shape, plus one cheap
count check against the real shared file (skipped when the data folder is absent).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memsieve.errors import ConfigError, NotFound
from memsieve.ingest import ADAPTERS, read_memories
from memsieve.ingest.locomo import parse_locomo_datetime
from memsieve.ingest.longmemeval import parse_longmemeval_date
from memsieve.types import Memory, State


def _write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _error(exc_type: type[Exception], fmt: str, path: Path) -> str:
    """Read ``path`` fully, expecting ``exc_type``; return its (one-line) message."""
    with pytest.raises(exc_type) as info:
        list(read_memories(fmt, path))
    message = str(info.value)
    assert "\n" not in message
    return message


def _real(data_dir: Path, sub: str) -> Path:
    path = data_dir / sub
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


# ---------------------------------------------------------------- registry


def test_adapter_names() -> None:
    assert set(ADAPTERS) == {"locomo", "memora", "rhelm", "longmemeval", "jsonl"}


def test_unknown_format_lists_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        read_memories("csv", tmp_path)
    message = str(info.value)
    assert "'csv'" in message
    for name in ADAPTERS:
        assert name in message


@pytest.mark.parametrize("fmt", sorted(ADAPTERS))
def test_missing_path_is_not_found(tmp_path: Path, fmt: str) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(NotFound, match="nope.json"):
        read_memories(fmt, missing)  # checked before iteration
    with pytest.raises(NotFound, match="nope.json"):
        list(ADAPTERS[fmt](missing))  # and by the adapter itself


# ---------------------------------------------------------------- locomo


def _locomo_sample(sample_id: str = "conv-1") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            # key order deliberately not session order; 10 must sort after 2
            "session_10": [{"speaker": "Ann", "dia_id": "D10:1", "text": "Last one."}],
            "session_10_date_time": "9:00 am on 1 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "Look!"},
                {
                    "speaker": "Ann",
                    "dia_id": "D2:2",
                    "text": "Nice.",
                    "img_url": ["http://example.invalid/x.jpg"],
                    "blip_caption": "a photo of a dog",
                    "query": "dog",
                },
            ],
            "session_2_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Hi Ann."},
            ],
            "session_1_date_time": "10:05 am on 1 May, 2023",
            "session_20_date_time": "2:00 pm on 1 July, 2023",  # orphan: no session_20
        },
        "qa": [{"question": "q?", "answer": "a", "evidence": ["D2:2"], "category": 4}],
        "event_summary": {},
        "observation": {},
        "session_summary": {},
    }


def test_locomo_turns(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "locomo10.json", [_locomo_sample("conv-1"), _locomo_sample("b")])
    memories = list(read_memories("locomo", path))
    assert all(isinstance(m, Memory) for m in memories)
    assert len(memories) == 10
    first = [m for m in memories if m.namespace == "conv-1"]
    assert [m.id for m in first] == [
        "conv-1:D1:1", "conv-1:D1:2", "conv-1:D2:1", "conv-1:D2:2", "conv-1:D10:1",
    ]  # fmt: skip
    assert [m.turn_index for m in first] == [0, 1, 0, 1, 0]
    assert [m.session_id for m in first] == ["conv-1:session_1"] * 2 + ["conv-1:session_2"] * 2 + [
        "conv-1:session_10"
    ]
    assert {m.conversation_id for m in first} == {"conv-1"}
    photo = first[3]
    assert photo.speaker == "Ann"
    assert photo.text == "Ann: Nice. [shares a photo: a photo of a dog]"
    assert photo.metadata == {"dia_id": "D2:2", "session": 2}
    assert photo.timestamp == datetime(2023, 5, 8, 13, 56)
    assert first[0].text == "Ann: Hi Bob."
    assert first[0].timestamp == datetime(2023, 5, 1, 10, 5)
    assert first[4].timestamp == datetime(2023, 6, 1, 9, 0)
    assert [m.namespace for m in memories] == ["conv-1"] * 5 + ["b"] * 5


@pytest.mark.parametrize(
    "raw",
    ["1:56 pm on 8 May, 2023", "1:56 PM on 8 May, 2023", "1:56pm on 8 May 2023",
     "  1:56  pm on  8 May ,2023 ", "1:56 p.m. on May 8, 2023"],
)  # fmt: skip
def test_locomo_datetime_forms(raw: str) -> None:
    assert parse_locomo_datetime(raw) == datetime(2023, 5, 8, 13, 56)


def test_locomo_bad_date_names_key(tmp_path: Path) -> None:
    sample = _locomo_sample()
    sample["conversation"]["session_2_date_time"] = "sometime in May"
    path = _write_json(tmp_path / "l.json", [sample])
    message = _error(ConfigError, "locomo", path)
    assert "session_2_date_time" in message and "l.json" in message


def test_locomo_missing_key_names_file_and_key(tmp_path: Path) -> None:
    sample = _locomo_sample()
    del sample["conversation"]["session_1"][1]["text"]
    path = _write_json(tmp_path / "l.json", [sample])
    message = _error(ConfigError, "locomo", path)
    assert "l.json" in message and "'text'" in message and "session_1" in message


def test_locomo_wrong_shape(tmp_path: Path) -> None:
    assert "list" in _error(ConfigError, "locomo", _write_json(tmp_path / "l.json", {"a": 1}))
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": ', encoding="utf-8")
    assert "invalid JSON" in _error(ConfigError, "locomo", bad)


def test_locomo_real(data_dir: Path) -> None:
    memories = list(read_memories("locomo", _real(data_dir, "locomo/locomo10.json")))
    assert len(memories) == 5882
    assert len({m.namespace for m in memories}) == 10
    assert len({m.id for m in memories}) == 5882
    assert all(m.timestamp is not None for m in memories)


# ---------------------------------------------------------------- memora


def _memora_session(session_id: int, date: str, operation: str | None) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "session_type": "preference" if operation else "no_memory",
        "operation": operation,
        "operation_details": {"memory": "likes tea"} if operation else {},
        "date": date,
        "persona": "researcher",
        "conversation": [
            {"turn": 1, "speaker": "ai_agent", "message": "Hello!", "share_memory": False},
            {"turn": 2, "speaker": "user_agent", "message": "I like tea.", "share_memory": True},
        ],
    }


def _memora_tree(root: Path) -> Path:
    period = root / "weekly"
    for persona in ("researcher", "another"):
        sessions = [_memora_session(1, "2025-06-01", None), _memora_session(2, "2025-06-02", "add")]
        _write_lines(period / persona / "sessions.jsonl", [json.dumps(s) for s in sessions])
    return period


def test_memora_turns(tmp_path: Path) -> None:
    period = _memora_tree(tmp_path)
    memories = list(read_memories("memora", period / "researcher"))
    assert [m.id for m in memories] == [
        "weekly/researcher:1:1", "weekly/researcher:1:2",
        "weekly/researcher:2:1", "weekly/researcher:2:2",
    ]  # fmt: skip
    assert {m.namespace for m in memories} == {"weekly/researcher"}
    assert [m.speaker for m in memories] == ["assistant", "user"] * 2
    assert memories[1].text == "user: I like tea."
    assert memories[0].text == "assistant: Hello!"
    assert memories[2].session_id == "weekly/researcher:2"
    assert [m.turn_index for m in memories] == [1, 2, 1, 2]
    assert memories[2].timestamp == datetime(2025, 6, 2)
    for m in memories:  # evaluation labels stay out of stored memories
        assert set(m.metadata) == {"session", "turn"}
        assert "add" not in m.metadata.values() and "preference" not in str(m.metadata)
    assert memories[3].metadata == {"session": 2, "turn": 2}


def test_memora_path_forms_agree(tmp_path: Path) -> None:
    period = _memora_tree(tmp_path)
    by_period = list(read_memories("memora", period))
    assert [m.namespace for m in by_period] == ["weekly/another"] * 4 + ["weekly/researcher"] * 4
    by_file = list(read_memories("memora", period / "researcher" / "sessions.jsonl"))
    by_dir = list(read_memories("memora", period / "researcher"))
    assert by_file == by_dir == by_period[4:]


def test_memora_malformed_line_names_line(tmp_path: Path) -> None:
    path = _write_lines(
        tmp_path / "weekly" / "p" / "sessions.jsonl",
        [json.dumps(_memora_session(1, "2025-06-01", None)), "", '{"session_id": 2,'],
    )
    message = _error(ConfigError, "memora", path)
    assert f"{path}:3:" in message and "invalid JSON" in message


def test_memora_bad_values(tmp_path: Path) -> None:
    session = _memora_session(1, "2025-06-01", None)
    session["conversation"][0]["speaker"] = "narrator"
    path = _write_lines(tmp_path / "weekly" / "p" / "sessions.jsonl", [json.dumps(session)])
    assert "narrator" in _error(ConfigError, "memora", path)
    session = _memora_session(1, "June 1st", None)
    path = _write_lines(tmp_path / "weekly" / "p" / "sessions.jsonl", [json.dumps(session)])
    assert "'date'" in _error(ConfigError, "memora", path)
    (tmp_path / "empty").mkdir()
    assert "sessions.jsonl" in _error(ConfigError, "memora", tmp_path / "empty")


def test_memora_real(data_dir: Path) -> None:
    persona = _real(data_dir, "memora/weekly/academic_researcher")
    expected = 0
    with (persona / "sessions.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                expected += len(json.loads(line)["conversation"])
    memories = list(read_memories("memora", persona))
    assert len(memories) == expected > 0
    assert {m.namespace for m in memories} == {"weekly/academic_researcher"}
    assert len({m.id for m in memories}) == expected


# ---------------------------------------------------------------- rhelm


def _rhelm_file(persona: str, date: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "character": persona,
        "date": date,
        "profile_file": "p.json",
        "event_file": "e.json",
        "conversation": turns,
        "conversation_summary": None,
        "statistics": {},
        "metadata": {"total_turns": len(turns)},
    }


def _rhelm_tree(root: Path) -> Path:
    persona_dir = root / "rhelm" / "conversations" / "Ann_B."
    later = [
        {"turn": 1, "timestamp": "2024-01-05T09:30:00", "message_type": "scheduling",
         "user": "Book the dentist.", "assistant": "Done."},
        {"turn": 2, "message_type": "status_update", "user": "Thanks.", "assistant": ""},
    ]  # fmt: skip
    earlier = [
        {"turn": 1, "timestamp": "2024-01-01T07:49:00", "message_type": "information_sharing",
         "user": "I moved to Nashville.", "assistant": "Welcome!"},
    ]  # fmt: skip
    _write_json(
        persona_dir / "conversation_2024_01_05.json", _rhelm_file("Ann_B.", "2024-01-05", later)
    )
    _write_json(
        persona_dir / "conversation_2024_01_01.json", _rhelm_file("Ann_B.", "2024-01-01", earlier)
    )
    return root / "rhelm"


def test_rhelm_turns(tmp_path: Path) -> None:
    memories = list(read_memories("rhelm", _rhelm_tree(tmp_path)))
    assert [m.id for m in memories] == [
        "Ann_B.:2024-01-01:1",
        "Ann_B.:2024-01-05:1",
        "Ann_B.:2024-01-05:2",
    ]
    assert {m.namespace for m in memories} == {"Ann_B."}
    assert [m.session_id for m in memories] == ["Ann_B.:2024-01-01"] + ["Ann_B.:2024-01-05"] * 2
    assert [m.turn_index for m in memories] == [1, 1, 2]
    assert {m.speaker for m in memories} == {"user"}
    assert memories[0].text == "user: I moved to Nashville.\nassistant: Welcome!"
    assert memories[2].text == "user: Thanks."  # empty assistant: user part only
    assert memories[1].timestamp == datetime(2024, 1, 5, 9, 30)
    assert memories[2].timestamp == datetime(2024, 1, 5)  # no timestamp: falls back to date
    assert memories[1].metadata == {"date": "2024-01-05", "turn": 1, "message_type": "scheduling"}


def test_rhelm_path_forms_agree(tmp_path: Path) -> None:
    root = _rhelm_tree(tmp_path)
    whole = list(read_memories("rhelm", root))
    assert list(read_memories("rhelm", root / "conversations")) == whole
    assert list(read_memories("rhelm", root / "conversations" / "Ann_B.")) == whole


def test_rhelm_errors(tmp_path: Path) -> None:
    root = _rhelm_tree(tmp_path)
    bad = root / "conversations" / "Ann_B." / "conversation_2024_01_05.json"
    data = json.loads(bad.read_text(encoding="utf-8"))
    del data["conversation"][0]["user"]
    _write_json(bad, data)
    message = _error(ConfigError, "rhelm", root)
    assert "conversation_2024_01_05.json" in message and "'user'" in message
    (tmp_path / "nothing").mkdir()
    assert "conversation_*.json" in _error(ConfigError, "rhelm", tmp_path / "nothing")


def test_rhelm_real(data_dir: Path) -> None:
    conversations = _real(data_dir, "rhelm/conversations")
    persona = sorted(p for p in conversations.iterdir() if p.is_dir())[0]
    expected = sum(
        len(json.loads(f.read_text(encoding="utf-8"))["conversation"])
        for f in persona.glob("conversation_*.json")
    )
    memories = list(read_memories("rhelm", persona))
    assert len(memories) == expected > 0
    assert {m.namespace for m in memories} == {persona.name}
    assert len({m.id for m in memories}) == expected
    dates = [m.metadata["date"] for m in memories]
    assert dates == sorted(dates)


# ---------------------------------------------------------------- longmemeval


def _lme_record(question_id: str) -> dict[str, Any]:
    return {
        "question_id": question_id,
        "question_type": "knowledge-update",
        "question": "Where do I live now?",
        "answer": "Lisbon",
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_dates": ["2023/04/11 (Tue) 07:47", "2023/05/02 (Tue) 18:05"],
        "haystack_session_ids": ["answer_a_1", "answer_a_2"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I live in Porto.", "has_answer": True},
                {"role": "assistant", "content": "Porto is lovely.", "has_answer": False},
            ],
            [{"role": "user", "content": "I moved to Lisbon.", "has_answer": True}],
        ],
        "answer_session_ids": ["answer_a_1", "answer_a_2"],
    }


def test_longmemeval_turns(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "lme.json", [_lme_record("q1"), _lme_record("q2_abs")])
    memories = list(read_memories("longmemeval", path))
    assert [m.namespace for m in memories] == ["q1"] * 3 + ["q2_abs"] * 3
    q1 = memories[:3]
    assert [m.id for m in q1] == ["q1:answer_a_1:0", "q1:answer_a_1:1", "q1:answer_a_2:0"]
    assert [m.session_id for m in q1] == ["q1:answer_a_1"] * 2 + ["q1:answer_a_2"]
    assert [m.turn_index for m in q1] == [0, 1, 0]
    assert [m.speaker for m in q1] == ["user", "assistant", "user"]
    assert q1[1].text == "assistant: Porto is lovely."
    assert q1[0].timestamp == datetime(2023, 4, 11, 7, 47)
    assert q1[2].timestamp == datetime(2023, 5, 2, 18, 5)
    assert q1[0].conversation_id == "q1"
    for m in memories:  # has_answer and the gold answer are evaluation labels
        assert set(m.metadata) == {"session", "turn"}
        assert "has_answer" not in str(m.model_dump())
    assert q1[2].metadata == {"session": "answer_a_2", "turn": 0}


def test_longmemeval_errors(tmp_path: Path) -> None:
    record = _lme_record("q1")
    record["haystack_dates"].pop()
    message = _error(ConfigError, "longmemeval", _write_json(tmp_path / "a.json", [record]))
    assert "length" in message and "'q1'" in message
    record = _lme_record("q1")
    record["haystack_dates"][1] = "yesterday"
    assert "haystack_dates[1]" in _error(
        ConfigError, "longmemeval", _write_json(tmp_path / "b.json", [record])
    )
    record = _lme_record("q1")
    del record["haystack_sessions"]
    assert "'haystack_sessions'" in _error(
        ConfigError, "longmemeval", _write_json(tmp_path / "c.json", [record])
    )


def test_longmemeval_date_forms() -> None:
    assert parse_longmemeval_date("2023/04/11 (Tue) 07:47") == datetime(2023, 4, 11, 7, 47)
    assert parse_longmemeval_date("2023/04/11 07:47") == datetime(2023, 4, 11, 7, 47)
    assert parse_longmemeval_date("11 April") is None


def test_longmemeval_real(data_dir: Path) -> None:
    path = _real(data_dir, "longmemeval/longmemeval_oracle_sample_seed42_97.json")
    memories = list(read_memories("longmemeval", path))
    assert len(memories) == 2176
    assert len({m.namespace for m in memories}) == 97
    assert len({m.id for m in memories}) == 2176


# ---------------------------------------------------------------- jsonl


def test_jsonl_records(tmp_path: Path) -> None:
    full = {
        "id": "m1",
        "namespace": "alice",
        "text": "I moved to Lisbon.",
        "speaker": "user",
        "session_id": "s1",
        "conversation_id": "c1",
        "turn_index": 3,
        "timestamp": "2024-02-01T10:00:00+00:00",
        "state": "stale",
        "policy_tags": ["personal"],
        "metadata": {"source": "chat"},
    }
    minimal = {"namespace": "alice", "text": "I like tea."}
    path = _write_lines(tmp_path / "m.jsonl", [json.dumps(full), "", "   ", json.dumps(minimal)])
    first, second = list(read_memories("jsonl", path))
    assert first.id == "m1" and first.state is State.stale and first.policy_tags == ("personal",)
    assert first.timestamp == datetime.fromisoformat("2024-02-01T10:00:00+00:00")
    assert first.turn_index == 3 and first.metadata == {"source": "chat"}
    expected_id = hashlib.sha256(b"alice\x00I like tea.").hexdigest()[:16]
    assert second.id == expected_id
    assert second.namespace == "alice" and second.timestamp is None
    # deterministic: reading again gives the same id
    assert [m.id for m in read_memories("jsonl", path)] == ["m1", expected_id]


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"namespace": "a", "text": "x",', "invalid JSON"),
        ('{"namespace": "a", "text": "x", "colour": "red"}', "colour: unknown field"),
        ('{"text": "x"}', "namespace"),
        ('{"namespace": "a", "text": "   "}', "text is empty"),
        ('{"namespace": "a", "text": "x", "timestamp": "soon"}', "timestamp"),
        ('["namespace", "text"]', "expected an object"),
    ],
)
def test_jsonl_bad_line_names_line(tmp_path: Path, line: str, needle: str) -> None:
    good = json.dumps({"namespace": "a", "text": "fine"})
    path = _write_lines(tmp_path / "m.jsonl", [good, "", line, good])
    message = _error(ConfigError, "jsonl", path)
    assert f"{path}:3" in message and needle in message


def test_jsonl_raises_at_the_bad_line(tmp_path: Path) -> None:
    good = json.dumps({"namespace": "a", "text": "fine"})
    path = _write_lines(tmp_path / "m.jsonl", [good, "{oops"])
    memories = read_memories("jsonl", path)
    assert next(memories).text == "fine"
    with pytest.raises(ConfigError, match=r"m\.jsonl:2: invalid JSON"):
        next(memories)


def test_jsonl_directory_is_config_error(tmp_path: Path) -> None:
    assert "directory" in _error(ConfigError, "jsonl", tmp_path)
