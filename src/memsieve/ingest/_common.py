"""Helpers the ingest adapters share: reading JSON / JSONL and checking shapes.

Every problem the user can cause (a missing file, malformed JSON, a missing key, a wrong type)
becomes a one-line ConfigError or NotFound that names the file and the line or key, so an
adapter never leaks a bare KeyError / TypeError / JSONDecodeError.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from memsieve.errors import ConfigError, NotFound
from memsieve.types import Memory, parse

_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer"}
Kind = type | tuple[type, ...]


def existing(path: str | Path) -> Path:
    """Return ``path`` as a Path; raise NotFound if nothing is there."""
    p = Path(path)
    if not p.exists():
        raise NotFound(f"{p}: no such file or directory")
    return p


def existing_file(path: str | Path) -> Path:
    """Return ``path`` as a Path to a regular file; NotFound if absent, ConfigError if a folder."""
    p = existing(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, expected a file")
    return p


def load_json(path: Path) -> Any:
    """Parse a whole JSON file; errors name the file (and the line for malformed JSON)."""
    try:
        with path.open("rb") as fh:
            raw = fh.read()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path}:{err.lineno}: invalid JSON: {err.msg} (column {err.colno})"
        ) from None
    except RecursionError:
        raise ConfigError(f"{path}: JSON nested too deeply") from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line, reading one line at a time.

    Lines are decoded one by one (not through a buffered text reader) so that an encoding or
    JSON error reports the exact 1-based line number.
    """
    try:
        fh = path.open("rb")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"{path}:{lineno}: not valid UTF-8") from None
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as err:
                raise ConfigError(
                    f"{path}:{lineno}: invalid JSON: {err.msg} (column {err.colno})"
                ) from None
            except RecursionError:
                raise ConfigError(f"{path}:{lineno}: JSON nested too deeply") from None


def expect(value: Any, kind: Kind, where: str) -> Any:
    """Return ``value`` if it is a ``kind``; otherwise raise ConfigError naming ``where``."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        want = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
        got = "null" if value is None else type(value).__name__
        raise ConfigError(f"{where}: expected {want}, got {got}")
    return value


def get(obj: Mapping[str, Any], key: str, kind: Kind, where: str) -> Any:
    """``obj[key]`` checked to be a ``kind``; a missing key or a wrong type is a ConfigError."""
    if key not in obj:
        raise ConfigError(f"{where}: missing key {key!r}")
    return expect(obj[key], kind, f"{where}: {key!r}")


def memory(where: str, **fields: Any) -> Memory:
    """Build a Memory through ``types.parse`` so a bad value is a one-line ConfigError."""
    return parse(Memory, fields, where=f"{where}: ")


def strptime_any(text: str, formats: Iterable[str]) -> datetime | None:
    """The first of ``formats`` that parses ``text``, or None if none does."""
    for fmt in formats:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None
