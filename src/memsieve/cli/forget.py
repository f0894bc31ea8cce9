"""``memsieve forget ID... --namespace NS --db DB [--purge]``."""

from __future__ import annotations

from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import DbOption, printable
from memsieve.store import open_store


@app.command()
def forget(
    ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Memory ids to forget.")],
    namespace: Annotated[str, typer.Option(help="The namespace the memories belong to.")],
    db: DbOption,
    purge: Annotated[
        bool, typer.Option(help="Delete for good: row, vector, postings, bytes in the file.")
    ] = False,
) -> None:
    """Forget memories (kept for the audit trail, never retrieved again) or purge them."""
    with open_store(db, create=False) as store:
        if purge:
            n = store.purge(namespace, ids)
            missing = len(set(ids)) - n
            note = f" ({missing} not found)" if missing else ""
            typer.echo(f"purged {n} memories from {printable(namespace)!r}{note}", err=True)
            return
        store.set_states(namespace, ids, "forgotten")  # all of them or, if one is missing, none
        typer.echo(f"forgot {len(set(ids))} memories in {printable(namespace)!r}", err=True)
