"""``memsieve serve`` (REST + inspector) and ``memsieve mcp`` (an MCP server)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import DbOption
from memsieve.errors import ConfigError, MissingDependency

RerankOption = Annotated[str | None, typer.Option(help="off, v1 or v2 (as for search).")]
ValidityOption = Annotated[
    str, typer.Option(help="The validity layer's default: context, demote or off (off cannot "
                      "be turned on per request).")]


def _service(db: str, rerank: str | None, validity: str):
    from memsieve.service.core import MemoryService
    from memsieve.store import open_store

    store = open_store(db)
    try:
        return MemoryService(store, rerank=rerank, validity=validity)
    except BaseException:
        store.close()
        raise


def _need(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingDependency(f"this command needs `pip install 'memsieve[service]'` "
                                f"({module} is missing)")


@app.command()
def serve(
    db: DbOption,
    keys: Annotated[Path, typer.Option(help="JSON file: {API key: [namespaces it may use]}.")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=0, max=65535)] = 8080,
    rerank: RerankOption = None,
    validity: ValidityOption = "context",
    max_body: Annotated[int, typer.Option(help="Largest request body in bytes.", min=1)] = 8
    * 1024 * 1024,
) -> None:
    """Serve the REST API, its OpenAPI docs (/docs) and the inspector page (/inspect)."""
    _need("fastapi")
    from memsieve.service.app import create_app
    from memsieve.service.keys import Keys

    grants = Keys.load(keys)
    service = _service(db, rerank, validity)
    import uvicorn

    typer.echo(f"memsieve serving {db if '://' not in db else service.store.where} on "
               f"http://{host}:{port} (docs /docs, inspector /inspect)", err=True)
    try:
        uvicorn.run(create_app(service, grants, max_body=max_body), host=host, port=port,
                    log_level="warning")
    finally:
        service.store.close()


@app.command()
def mcp(
    db: DbOption,
    namespace: Annotated[str, typer.Option(help="The one namespace this server serves "
                                           "(trusted; never taken from a tool's arguments).")],
    transport: Annotated[str, typer.Option(help="stdio or http (streamable HTTP).")] = "stdio",
    host: Annotated[str, typer.Option(help="http: address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="http: port.", min=0, max=65535)] = 8081,
    rerank: RerankOption = None,
    validity: ValidityOption = "context",
) -> None:
    """Run an MCP server with memory tools over one namespace."""
    if transport not in ("stdio", "http"):
        raise ConfigError(f"--transport must be stdio or http, got {transport!r}")
    if not namespace:
        raise ConfigError("--namespace must not be empty")
    _need("mcp")
    from memsieve.service.mcp import build_server

    service = _service(db, rerank, validity)
    try:
        server = build_server(service, namespace)
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        service.store.close()
