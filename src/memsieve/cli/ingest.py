"""``memsieve ingest FORMAT PATH --db DB``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import DbOption
from memsieve.embed import get_encoder
from memsieve.ingest import add_memories, read_memories
from memsieve.store import open_store


@app.command()
def ingest(
    fmt: Annotated[
        str, typer.Argument(metavar="FORMAT", help="locomo, memora, rhelm, longmemeval or jsonl.")
    ],
    path: Annotated[Path, typer.Argument(help="File or folder to read.")],
    db: DbOption,
    model: Annotated[str, typer.Option(help="Embedding model: minilm (default) or hash.")] = (
        "minilm"
    ),
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Read conversations, embed every turn, and store them (all or nothing)."""
    memories = list(read_memories(fmt, path))  # validate everything before loading a model
    encoder = get_encoder(model)
    with open_store(db) as store:
        report = add_memories(store, memories, encoder, progress=progress)
    typer.echo(report.summary(), err=True)
