"""An MCP server (the official ``mcp`` SDK) over one namespace fixed at start-up.

The namespace is the trusted principal: it comes from the command line of whoever starts the
server, never from a tool's arguments, so a model cannot reach another tenant's memories.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from memsieve.errors import MemsieveError
from memsieve.service.core import MemoryService


def _user_errors(fn: Callable) -> Callable:
    """A user mistake (no such memory, a bad argument) reaches the model as the tool's error
    text, which the SDK only passes on for a ToolError."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemsieveError as err:
            raise ToolError(str(err)) from None

    return wrapper


def build_server(service: MemoryService, namespace: str) -> Any:
    """An ``MCPServer`` with add_memory, search_memory, get_context, forget_memory and
    list_memories, each annotated read-only / destructive as it is."""
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("memsieve", instructions=(
        "Long-term memory of one user. search_memory finds what answers a question and says "
        "whether a later memory overturned it; get_context returns a prompt-ready block under a "
        "token budget; add_memory stores a turn; forget_memory hides (or purges) one."))
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                             idempotent_hint=True, open_world_hint=False))
    @_user_errors
    def add_memory(text: str, id: str | None = None, speaker: str | None = None,
                   session_id: str | None = None, timestamp: str | None = None,
                   policy_tags: list[str] | None = None) -> dict:
        """Store one memory (a conversation turn or a fact) in this user's memory."""
        item: dict[str, Any] = {"namespace": namespace, "text": text}
        for name, value in (("id", id), ("speaker", speaker), ("session_id", session_id),
                            ("timestamp", timestamp), ("policy_tags", policy_tags)):
            if value is not None:
                item[name] = value
        return service.add([item])

    @server.tool(annotations=read_only)
    @_user_errors
    def search_memory(query: str, k: int = 10, intent: str = "unknown") -> dict:
        """The memories that answer a question, ranked, with validity and admissibility."""
        return service.search({"query": query, "namespace": namespace, "k": k,
                               "intent": intent})

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                             open_world_hint=False))
    @_user_errors
    def get_context(query: str, budget: int = 600, mode: str = "auto",
                    intent: str = "unknown") -> dict:
        """A prompt-ready block of memories for a question, under a token budget (recorded in
        the exposure log)."""
        return service.context({"query": query, "namespace": namespace, "budget": budget,
                                "mode": mode, "intent": intent})

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                             idempotent_hint=True, open_world_hint=False))
    @_user_errors
    def forget_memory(memory_id: str, purge: bool = False) -> dict:
        """Forget a memory (never returned again, kept for the audit); purge deletes it."""
        return service.forget(namespace, memory_id, purge=purge)

    @server.tool(annotations=read_only)
    @_user_errors
    def list_memories(limit: int = 50, cursor: str | None = None) -> dict:
        """This user's memories in the order they were stored, a page at a time."""
        return service.page(namespace, cursor=cursor, limit=limit)

    return server
