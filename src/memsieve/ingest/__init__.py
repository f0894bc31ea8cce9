"""Ingest: dataset adapters that turn conversations into Memory records.

``ADAPTERS`` maps a format name to a generator over memories (one per turn, in conversation
order, one namespace per conversation or persona); ``read_memories`` looks one up by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from memsieve.errors import ConfigError, NotFound
from memsieve.ingest.core import IngestReport, add_memories, encode_memories
from memsieve.ingest.jsonl import read_jsonl
from memsieve.ingest.locomo import read_locomo
from memsieve.ingest.longmemeval import read_longmemeval
from memsieve.ingest.memora import read_memora
from memsieve.ingest.rhelm import read_rhelm
from memsieve.types import Memory

ADAPTERS: dict[str, Callable[[Path], Iterator[Memory]]] = {
    "locomo": read_locomo,
    "memora": read_memora,
    "rhelm": read_rhelm,
    "longmemeval": read_longmemeval,
    "jsonl": read_jsonl,
}


def read_memories(fmt: str, path: str | Path) -> Iterator[Memory]:
    """Memories from ``path`` read as format ``fmt``.

    The format name and the path are checked now (ConfigError / NotFound), before iteration;
    problems inside the file surface while iterating, at the record that has them.
    """
    adapter = ADAPTERS.get(fmt)
    if adapter is None:
        raise ConfigError(f"unknown format {fmt!r}; valid formats: {', '.join(ADAPTERS)}")
    p = Path(path)
    if not p.exists():
        raise NotFound(f"{p}: no such file or directory")
    return adapter(p)


__all__ = ["ADAPTERS", "IngestReport", "add_memories", "encode_memories", "read_memories"]
