"""memsieve: long-term memory for conversational agents — relevant, still true, allowed here."""

from memsieve.embed import get_encoder
from memsieve.errors import ConfigError, MemsieveError, NotFound, StoreError
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline, Response
from memsieve.store import open_store
from memsieve.types import Candidate, Intent, Memory, Query, Result, State

__version__ = "0.1.0"

__all__ = [
    "Candidate",
    "ConfigError",
    "Intent",
    "Memory",
    "MemsieveError",
    "NotFound",
    "Pipeline",
    "Query",
    "Response",
    "Result",
    "State",
    "StoreError",
    "add_memories",
    "get_encoder",
    "open_store",
]
