"""Storage backends behind one ``Store`` protocol: SQLite (one file) is the embedded default,
PostgreSQL with pgvector the server backend (``--db postgresql://...``)."""

from __future__ import annotations

from pathlib import Path

from memsieve.store.base import Delta, Store
from memsieve.store.postgres import PostgresStore, is_url
from memsieve.store.sqlite import SQLiteStore
from memsieve.store.sqlite import remove_if_empty as _remove_sqlite_if_empty


def open_store(target: str | Path, *, create: bool = True, readonly: bool = False) -> Store:
    """Open the store at ``target``: a SQLite path (created unless ``create=False``;
    ``":memory:"`` gives a throwaway store) or a ``postgresql://`` URL. ``readonly`` opens an
    existing store for reading only and never creates or changes anything."""
    if is_url(target):
        return PostgresStore(str(target), readonly=readonly)
    return SQLiteStore(target, create=create and not readonly, readonly=readonly)


def remove_if_empty(target: str | Path) -> None:
    """Remove what a failed first ingest left: an empty SQLite file (a server database is
    never dropped)."""
    if not is_url(target):
        _remove_sqlite_if_empty(target)


__all__ = ["Delta", "PostgresStore", "SQLiteStore", "Store", "is_url", "open_store",
           "remove_if_empty"]
