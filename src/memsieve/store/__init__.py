"""Storage backends. SQLite (one file) is the embedded default."""

from memsieve.store.base import Store
from memsieve.store.sqlite import SQLiteStore, open_store

__all__ = ["SQLiteStore", "Store", "open_store"]
