"""LoCoMo adapter: a locomo10.json-shaped file, one memory per turn, one namespace per sample.

Ids are ``{sample_id}:{dia_id}`` so that QA evidence (``"D3:7"``) maps straight to a memory id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from memsieve.errors import ConfigError
from memsieve.ingest._common import existing_file, expect, get, load_json, memory, strptime_any
from memsieve.types import Memory

_SESSION_KEY = re.compile(r"session_(\d+)")
_AMPM = re.compile(r"(\d)\s*([ap])\.?\s*m\.?(?=\s|$)", re.IGNORECASE)
_DATE_FORMATS = (
    "%I:%M %p on %d %B %Y",  # 1:56 pm on 8 May, 2023 (the upstream form, comma removed)
    "%I:%M %p on %d %b %Y",  # 1:56 pm on 8 Sep, 2023
    "%I:%M %p on %B %d %Y",  # 1:56 pm on May 8, 2023
    "%I:%M %p on %b %d %Y",
)


def parse_locomo_datetime(value: str) -> datetime | None:
    """Parse a LoCoMo session time such as ``"1:56 pm on 8 May, 2023"``; None if it does not fit.

    Tolerates extra or missing spaces, ``pm`` / ``PM`` / ``p.m.`` and a missing comma.
    """
    text = _AMPM.sub(lambda m: f"{m.group(1)} {m.group(2).upper()}M", value.replace(",", " "))
    text = " ".join(text.split())
    return strptime_any(text, _DATE_FORMATS)


def read_locomo(path: Path) -> Iterator[Memory]:
    """Yield one Memory per LoCoMo turn, samples in file order, sessions by number."""
    path = existing_file(path)
    samples = expect(load_json(path), list, f"{path}: top level (a list of LoCoMo samples)")
    for i, sample in enumerate(samples):
        where = f"{path}: sample {i}"
        expect(sample, dict, where)
        sample_id = get(sample, "sample_id", str, where)
        where = f"{path}: sample {sample_id!r}"
        conversation = get(sample, "conversation", dict, where)
        sessions = sorted(
            (int(m.group(1)), key) for key in conversation if (m := _SESSION_KEY.fullmatch(key))
        )
        for number, key in sessions:
            yield from _session(conversation, sample_id, number, key, where)


def _session(
    conversation: dict, sample_id: str, number: int, key: str, where: str
) -> Iterator[Memory]:
    turns = expect(conversation[key], list, f"{where}: {key!r}")
    timestamp = None
    date_key = f"{key}_date_time"
    if date_key in conversation:
        raw = expect(conversation[date_key], str, f"{where}: {date_key!r}")
        timestamp = parse_locomo_datetime(raw)
        if timestamp is None:
            raise ConfigError(
                f"{where}: {date_key!r}: cannot parse {raw!r} "
                "(expected like '1:56 pm on 8 May, 2023')"
            )
    for index, turn in enumerate(turns):
        turn_where = f"{where}: {key} turn {index}"
        expect(turn, dict, turn_where)
        dia_id = get(turn, "dia_id", str, turn_where)
        speaker = get(turn, "speaker", str, turn_where)
        text = f"{speaker}: {get(turn, 'text', str, turn_where)}"
        caption = turn.get("blip_caption")
        if caption:
            text += f" [shares a photo: {expect(caption, str, f'{turn_where}: blip_caption')}]"
        yield memory(
            turn_where,
            id=f"{sample_id}:{dia_id}",
            namespace=sample_id,
            text=text,
            conversation_id=sample_id,
            session_id=f"{sample_id}:session_{number}",
            turn_index=index,
            speaker=speaker,
            timestamp=timestamp,
            metadata={"dia_id": dia_id, "session": number},
        )
