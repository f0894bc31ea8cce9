"""Options and helpers shared by several commands, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

DbOption = Annotated[
    str,
    typer.Option("--db", envvar="MEMSIEVE_DB",
                 help="SQLite database file or postgresql:// URL (env MEMSIEVE_DB)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object per line on stdout.")]


def printable(text: str) -> str:
    """``text`` with control characters and lone surrogates escaped, safe for a terminal: a
    newline in a memory cannot forge an output row, an escape code cannot reach the screen."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
