"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DbOption = Annotated[
    Path,
    typer.Option("--db", envvar="MEMSIEVE_DB", help="SQLite database file (env MEMSIEVE_DB)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object per line on stdout.")]
