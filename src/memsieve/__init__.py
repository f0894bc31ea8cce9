"""memsieve: long-term memory for conversational agents — relevant, still true, allowed here."""

from memsieve.assemble import AccessMode, Assembler, Context
from memsieve.embed import get_encoder
from memsieve.errors import ConfigError, MemsieveError, NotFound, StoreError
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline, Response
from memsieve.store import open_store
from memsieve.types import Candidate, Intent, Memory, Policy, Query, Result, State

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``memsieve.Client`` is imported on first use: the HTTP client is an optional extra."""
    if name == "Client":
        from memsieve.client import Client

        return Client
    raise AttributeError(f"module 'memsieve' has no attribute {name!r}")


__all__ = [
    "AccessMode",
    "Assembler",
    "Candidate",
    "Client",
    "Context",
    "ConfigError",
    "Intent",
    "Memory",
    "MemsieveError",
    "NotFound",
    "Pipeline",
    "Policy",
    "Query",
    "Response",
    "Result",
    "State",
    "StoreError",
    "add_memories",
    "get_encoder",
    "open_store",
]
