"""RHELM adapter: ``conversations/<persona>/conversation_YYYY_MM_DD.json``, one memory per turn.

A RHELM turn is a user message and the assistant's reply, kept together in one memory. The id
``{persona}:{date}:{turn}`` matches the QA evidence form ``"YYYY-MM-DD:turn"`` within a persona.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memsieve.errors import ConfigError
from memsieve.ingest._common import existing, expect, get, load_json, memory
from memsieve.types import Memory

_PATTERN = "conversation_*.json"


def _persona_dirs(path: Path) -> list[Path]:
    """Persona folders for ``path``: the RHELM data dir, its conversations/, or one persona."""
    if (path / "conversations").is_dir():
        path = path / "conversations"
    if any(path.glob(_PATTERN)):
        return [path]
    personas = sorted(p for p in path.iterdir() if p.is_dir() and any(p.glob(_PATTERN)))
    if not personas:
        raise ConfigError(
            f"{path}: no {_PATTERN} files found (expected the RHELM data folder, its "
            "conversations/ folder, or one persona folder under it)"
        )
    return personas


def read_rhelm(path: Path) -> Iterator[Memory]:
    """Yield one Memory per RHELM turn; personas by name, conversations by date."""
    path = existing(path)
    if path.is_file():
        yield from _conversation(path.parent.name, path, load_json(path))
        return
    for persona_dir in _persona_dirs(path):
        loaded = [(f, load_json(f)) for f in sorted(persona_dir.glob(_PATTERN))]
        # order by the file's own date field (file names carry it too; this is the authority)
        loaded.sort(key=lambda fd: (_date_of(fd[0], fd[1]), fd[0].name))
        for file, data in loaded:
            yield from _conversation(persona_dir.name, file, data)


def _date_of(file: Path, data: Any) -> str:
    expect(data, dict, f"{file}: top level")
    raw = get(data, "date", str, str(file))
    try:
        datetime.strptime(raw, "%Y-%m-%d")
    except ValueError:
        raise ConfigError(f"{file}: 'date': expected YYYY-MM-DD, got {raw!r}") from None
    return raw


def _conversation(persona: str, file: Path, data: Any) -> Iterator[Memory]:
    date = _date_of(file, data)
    day = datetime.strptime(date, "%Y-%m-%d")
    for index, turn in enumerate(get(data, "conversation", list, str(file))):
        where = f"{file}: conversation[{index}]"
        expect(turn, dict, where)
        number = get(turn, "turn", int, where)
        user = get(turn, "user", str, where)
        assistant = expect(turn.get("assistant") or "", str, f"{where}: 'assistant'")
        text = f"user: {user}\nassistant: {assistant}" if assistant else f"user: {user}"
        timestamp = day
        if turn.get("timestamp"):
            raw = expect(turn["timestamp"], str, f"{where}: 'timestamp'")
            try:
                timestamp = datetime.fromisoformat(raw)
            except ValueError:
                raise ConfigError(f"{where}: 'timestamp': expected ISO 8601, got {raw!r}") from None
        metadata: dict[str, Any] = {"date": date, "turn": number}
        if turn.get("message_type") is not None:
            metadata["message_type"] = expect(turn["message_type"], str, f"{where}: 'message_type'")
        yield memory(
            where,
            id=f"{persona}:{date}:{number}",
            namespace=persona,
            text=text,
            conversation_id=persona,
            session_id=f"{persona}:{date}",
            turn_index=number,
            speaker="user",
            timestamp=timestamp,
            metadata=metadata,
        )
