"""Generic JSONL adapter: one Memory object per line, validated strictly.

Required: ``namespace``, ``text``. Optional: ``id``, ``speaker``, ``session_id``,
``conversation_id``, ``turn_index``, ``timestamp`` (ISO 8601), ``state``, ``policy_tags``,
``metadata``. Unknown fields are an error. Without an ``id`` the id is derived from the
namespace and text, so re-ingesting the same file upserts instead of duplicating.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memsieve.ingest._common import existing_file, expect, iter_jsonl
from memsieve.types import Memory, parse

_PLACEHOLDER_ID = "-"


def content_id(namespace: str, text: str) -> str:
    """The deterministic id of a memory given without one: sha256(namespace NUL text)[:16]."""
    return hashlib.sha256(f"{namespace}\x00{text}".encode()).hexdigest()[:16]


def to_memory(obj: Mapping[str, Any], where: str = "") -> Memory:
    """A validated Memory from one JSON object (a JSONL line, an API item); without an ``id``
    it gets the content id."""
    expect(obj, dict, where.rstrip(": ") or "memory")
    if "id" in obj:
        return parse(Memory, obj, where=where)
    # validate with a stand-in id so the error names the real problem, then derive the id
    mem = parse(Memory, {**obj, "id": _PLACEHOLDER_ID}, where=where)
    return mem.model_copy(update={"id": content_id(mem.namespace, mem.text)})


def read_jsonl(path: Path) -> Iterator[Memory]:
    """Yield one validated Memory per non-blank line; raise ConfigError at the first bad line."""
    path = existing_file(path)
    for lineno, obj in iter_jsonl(path):
        yield to_memory(obj, f"{path}:{lineno}: ")
