"""Memora adapter: ``<period>/<persona>/sessions.jsonl``, one memory per turn.

The namespace is ``"{period}/{persona}"`` (e.g. ``"weekly/academic_researcher"``): the same
persona in another period is a different history. Session labels (``operation``,
``session_type``, ``share_memory``) are evaluation labels and are deliberately not stored.
The JSONL is streamed line by line because the quarterly files are large.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from memsieve.errors import ConfigError
from memsieve.ingest._common import existing, expect, get, iter_jsonl, memory
from memsieve.types import Memory

SESSIONS_FILE = "sessions.jsonl"
_SPEAKERS = {"user_agent": "user", "ai_agent": "assistant"}


def _session_files(path: Path) -> list[Path]:
    """The sessions.jsonl files under ``path``: the file, a persona, a period or the Memora root."""
    if path.is_file():
        return [path]
    for depth in ("", "*/", "*/*/"):
        found = sorted(path.glob(f"{depth}{SESSIONS_FILE}"))
        if found:
            return found
    raise ConfigError(
        f"{path}: no {SESSIONS_FILE} found (expected a persona folder, a period folder "
        f"such as memora/weekly, or a {SESSIONS_FILE} file)"
    )


def read_memora(path: Path) -> Iterator[Memory]:
    """Yield one Memory per Memora turn; personas in name order, sessions in file order."""
    for file in _session_files(existing(path)):
        yield from _read_file(file)


def _read_file(file: Path) -> Iterator[Memory]:
    persona_dir = file.parent
    namespace = "/".join(p for p in (persona_dir.parent.name, persona_dir.name) if p)
    for lineno, session in iter_jsonl(file):
        where = f"{file}:{lineno}"
        expect(session, dict, where)
        session_id = get(session, "session_id", (int, str), where)
        raw_date = get(session, "date", str, where)
        try:
            timestamp = datetime.strptime(raw_date, "%Y-%m-%d")
        except ValueError:
            raise ConfigError(f"{where}: 'date': expected YYYY-MM-DD, got {raw_date!r}") from None
        for index, turn in enumerate(get(session, "conversation", list, where)):
            turn_where = f"{where}: conversation[{index}]"
            expect(turn, dict, turn_where)
            number = get(turn, "turn", int, turn_where)
            raw_speaker = get(turn, "speaker", str, turn_where)
            speaker = _SPEAKERS.get(raw_speaker)
            if speaker is None:
                raise ConfigError(
                    f"{turn_where}: 'speaker': expected one of {', '.join(_SPEAKERS)}, "
                    f"got {raw_speaker!r}"
                )
            message = get(turn, "message", str, turn_where)
            yield memory(
                turn_where,
                id=f"{namespace}:{session_id}:{number}",
                namespace=namespace,
                text=f"{speaker}: {message}",
                conversation_id=namespace,
                session_id=f"{namespace}:{session_id}",
                turn_index=number,
                speaker=speaker,
                timestamp=timestamp,
                metadata={"session": session_id, "turn": number},
            )
