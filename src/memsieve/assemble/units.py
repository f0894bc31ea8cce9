"""Atomic units: a turn split into compact sentence-level pieces at write time (no LLM).

A unit is one sentence, or a short run of sentences when a fragment alone would say nothing
("Yes!", "Wow."); each keeps its place ``n`` in its turn and is linked to it by (namespace,
seq). ``count_tokens`` is the budget's unit everywhere in context assembly.
"""

from __future__ import annotations

import re

# a sentence ends at . ! ? (or …) followed by space, or at a line break
_SPLIT = re.compile(r"(?<=[.!?…])\s+|\s*\n+\s*")
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
MIN_WORDS = 4  # a shorter fragment joins its neighbour
_ABBREVIATION = re.compile(
    r"\b(st|mr|mrs|ms|dr|prof|sr|jr|vs|etc|mt|no|approx|e\.g|i\.e|a\.m|p\.m)\.$", re.I)


def count_tokens(text: str) -> int:
    """Tokens as a budget counts them: words and punctuation marks (close to what subword
    tokenizers give for English chat, within ~20%; deterministic and model-free)."""
    return len(_TOKEN.findall(text))


def split_units(text: str) -> list[str]:
    """The turn's sentences, short fragments merged into the next one (the last into the
    previous); a turn of one sentence is one unit, its own text."""
    parts: list[str] = []
    for piece in (p.strip() for p in _SPLIT.split(text) if p and p.strip()):
        if parts and _ABBREVIATION.search(parts[-1]):  # "St. Mary's" is one sentence
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    units: list[str] = []
    pending = ""
    for part in parts:
        piece = f"{pending} {part}".strip() if pending else part
        if len(piece.split()) < MIN_WORDS:
            pending = piece
            continue
        units.append(piece)
        pending = ""
    if pending:
        if units:
            units[-1] = f"{units[-1]} {pending}"
        else:
            units.append(pending)
    return units or [text.strip()]
