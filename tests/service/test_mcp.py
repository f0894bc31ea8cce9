"""The MCP server driven by the official SDK's client over stdio, as an agent host runs it."""

from __future__ import annotations

import json
import sys

import pytest

from memsieve.embed import HashingEncoder
from memsieve.ingest import add_memories
from memsieve.store import open_store
from memsieve.types import Memory

pytest.importorskip("mcp")


def test_mcp_tools_over_stdio(tmp_path):
    import anyio
    from mcp import Client, StdioServerParameters

    db = tmp_path / "m.db"
    with open_store(db) as store:
        add_memories(store, [Memory(id="x", namespace="other", text="my cat is Tom")],
                     HashingEncoder())
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "memsieve", "mcp", "--db", str(db), "--namespace", "sam", "--validity", "off"])

    async def session() -> None:
        async with Client(params) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"add_memory", "search_memory", "get_context",
                                  "forget_memory", "list_memories"}
            for tool in tools.values():  # the namespace is the server's, never an argument
                assert "namespace" not in tool.input_schema.get("properties", {})
            assert tools["search_memory"].annotations.read_only_hint is True
            assert tools["list_memories"].annotations.read_only_hint is True
            assert tools["forget_memory"].annotations.destructive_hint is True
            assert tools["add_memory"].annotations.destructive_hint is False

            async def call(name: str, **args) -> dict:
                result = await client.call_tool(name, args)
                assert not result.is_error, result.content
                if result.structured_content is not None:
                    return result.structured_content
                return json.loads(result.content[0].text)

            added = await call("add_memory", text="My cat is called Pepper.", id="p1")
            assert added["ids"] == ["p1"]
            await call("add_memory", text="I work as a nurse in Leeds.")
            found = await call("search_memory", query="what is my cat called", k=3)
            assert [r["memory_id"] for r in found["results"]][0] == "p1"
            assert all(r["namespace"] == "sam" for r in found["results"])  # never Tom
            ctx = await call("get_context", query="cat", budget=40, mode="lookup")
            assert "Pepper" in ctx["text"] and "Tom" not in ctx["text"]
            listed = await call("list_memories", limit=10)
            assert [m["id"] for m in listed["memories"]][0] == "p1"
            await call("forget_memory", memory_id="p1")
            found = await call("search_memory", query="what is my cat called")
            assert "p1" not in [r["memory_id"] for r in found["results"]]
            bad = await client.call_tool("forget_memory", {"memory_id": "x"})  # other's id
            assert bad.is_error and "no memory 'x' in namespace 'sam'" in bad.content[0].text

    anyio.run(session)
    with open_store(db) as store:
        assert store.get("other", "x").state.value == "current"
        assert [e.mode for e in store.exposures("sam")] == ["lookup"]
