"""LongMemEval adapter: a list of question records, each its own haystack and namespace.

Every question record carries its own haystack sessions, so each becomes a namespace
(``question_id``); one memory per turn. ``has_answer`` is an evaluation label and is not stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memsieve.errors import ConfigError
from memsieve.ingest._common import existing_file, expect, get, load_json, memory, strptime_any
from memsieve.types import Memory

_WEEKDAY = re.compile(r"\(\s*[A-Za-z]+\s*\)")


def parse_longmemeval_date(value: str) -> datetime | None:
    """Parse ``"2023/04/11 (Tue) 07:47"`` (weekday optional); None if it does not fit."""
    text = " ".join(_WEEKDAY.sub(" ", value).split())
    return strptime_any(text, ("%Y/%m/%d %H:%M", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d"))


def read_longmemeval(path: Path) -> Iterator[Memory]:
    """Yield one Memory per haystack turn, question records and sessions in file order."""
    path = existing_file(path)
    records = expect(load_json(path), list, f"{path}: top level (a list of question records)")
    for i, record in enumerate(records):
        where = f"{path}: record {i}"
        expect(record, dict, where)
        question_id = get(record, "question_id", str, where)
        yield from _record(record, question_id, f"{path}: question {question_id!r}")


def _record(record: dict[str, Any], question_id: str, where: str) -> Iterator[Memory]:
    session_ids = get(record, "haystack_session_ids", list, where)
    dates = get(record, "haystack_dates", list, where)
    sessions = get(record, "haystack_sessions", list, where)
    if not len(session_ids) == len(dates) == len(sessions):
        raise ConfigError(
            f"{where}: haystack_session_ids, haystack_dates and haystack_sessions differ in "
            f"length ({len(session_ids)}, {len(dates)}, {len(sessions)})"
        )
    for i, (raw_id, raw_date, turns) in enumerate(zip(session_ids, dates, sessions, strict=True)):
        session_id = expect(raw_id, str, f"{where}: haystack_session_ids[{i}]")
        date = expect(raw_date, str, f"{where}: haystack_dates[{i}]")
        timestamp = parse_longmemeval_date(date)
        if timestamp is None:
            raise ConfigError(
                f"{where}: haystack_dates[{i}]: cannot parse {date!r} "
                "(expected like '2023/04/11 (Tue) 07:47')"
            )
        expect(turns, list, f"{where}: haystack_sessions[{i}]")
        for j, turn in enumerate(turns):
            turn_where = f"{where}: session {session_id!r} turn {j}"
            expect(turn, dict, turn_where)
            role = get(turn, "role", str, turn_where)
            content = get(turn, "content", str, turn_where)
            yield memory(
                turn_where,
                id=f"{question_id}:{session_id}:{j}",
                namespace=question_id,
                text=f"{role}: {content}",
                conversation_id=question_id,
                session_id=f"{question_id}:{session_id}",
                turn_index=j,
                speaker=role,
                timestamp=timestamp,
                metadata={"session": session_id, "turn": j},
            )
