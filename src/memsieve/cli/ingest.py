"""``memsieve ingest FORMAT PATH --db DB``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import DbOption
from memsieve.embed import get_encoder
from memsieve.ingest import encode_memories, read_memories
from memsieve.store import is_url, open_store, remove_if_empty


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
    memories = read_memories(fmt, path)
    # validate and encode everything before the database is opened: a bad line or Ctrl-C
    # during encoding leaves no file behind
    encoded = encode_memories(memories, get_encoder(model), progress=progress)
    new = not is_url(db) and not Path(db).exists()
    try:
        with open_store(db) as store:
            report = encoded.write(store)
    except BaseException:
        if new:
            remove_if_empty(db)
        raise
    typer.echo(report.summary(), err=True)
