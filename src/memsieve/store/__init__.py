"""Storage backends. SQLite (one file) is the embedded default."""

from memsieve.store.base import Delta, Store
from memsieve.store.sqlite import SQLiteStore, open_store, remove_if_empty

__all__ = ["Delta", "SQLiteStore", "Store", "open_store", "remove_if_empty"]
