"""``memsieve audit --db DB [--namespace NS] [--memory ID] [--json]``: the exposure log."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import DbOption, JsonOption, printable
from memsieve.store import open_store


@app.command()
def audit(
    db: DbOption,
    namespace: Annotated[str | None, typer.Option(help="Only this namespace.")] = None,
    memory: Annotated[
        str | None, typer.Option(help="Only the prompts this memory id reached or was kept out of.")
    ] = None,
    limit: Annotated[int, typer.Option(help="Newest exposures to show.", min=1)] = 100,
    as_json: JsonOption = False,
) -> None:
    """Which prompts a memory reached, and what reached a given prompt."""
    with open_store(db, readonly=True) as store:
        exposures = store.exposures(namespace, memory, limit=limit)
        erasures = store.erasures(namespace)
    if as_json:
        typer.echo(json.dumps({
            "exposures": [e.to_dict() for e in exposures],
            "erasures": [dataclasses.asdict(e) for e in erasures],
        }, ensure_ascii=False))
        return
    if not exposures:
        typer.echo("(no exposures recorded)")
    for e in exposures:
        typer.echo(f"{e.id}  {e.time}  {printable(e.namespace)}  {e.mode}  "
                   f"{printable(e.query)!r}")
        typer.echo(f"    in prompt: {printable(', '.join(e.memory_ids)) or '-'}")
        for mid, reason in e.excluded:
            typer.echo(f"    excluded {printable(mid)}: {printable(reason)}")
    for r in erasures:
        typer.echo(f"erasure {r.id}  {r.time}  {printable(r.namespace)}  {r.count} memories")
