"""``memsieve migrate --db DB``: bring a store written by an older memsieve up to date."""

from __future__ import annotations

from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import DbOption
from memsieve.store import open_store


@app.command()
def migrate(
    db: DbOption,
    edges: Annotated[bool, typer.Option(
        help="Rebuild the validity layer's write-time edges of every namespace (a store "
             "written before they existed has none).")] = True,
) -> None:
    """Upgrade the database's schema in one transaction (read commands never do it)."""
    from memsieve.validity.edges import default_judge, rebuild

    with open_store(db, create=False) as store:
        n_edges = 0
        if edges:
            judge = default_judge(store.embedding_model())
            n_edges = sum(rebuild(store, ns, judge) for ns in store.namespaces())
        extra = f", {n_edges} validity edges" if edges else ""
        typer.echo(f"{db}: up to date ({store.count()} memories{extra})", err=True)
