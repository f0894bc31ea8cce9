"""``memsieve migrate --db DB``: bring a store written by an older memsieve up to date."""

from __future__ import annotations

import typer

from memsieve.cli import app
from memsieve.cli.options import DbOption
from memsieve.store import open_store


@app.command()
def migrate(db: DbOption) -> None:
    """Upgrade the database's schema in one transaction (read commands never do it)."""
    with open_store(db, create=False) as store:
        typer.echo(f"{db}: up to date ({store.count()} memories)", err=True)
