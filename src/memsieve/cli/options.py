"""Options and helpers shared by several commands, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

from memsieve.errors import ConfigError
from memsieve.types import Query, parse

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


AdmissibilityOption = Annotated[
    str,
    typer.Option(help="off, annotate (mark each result admissible / inadmissible / unresolved; "
                 "the default) or enforce (also remove inadmissible results)."),
]
UnresolvedOption = Annotated[
    str,
    typer.Option(help="surface (keep unresolved results, marked; the default) or exclude "
                 "(enforce removes them too)."),
]
IntentOption = Annotated[
    str,
    typer.Option(help="current (the present state), history (earlier states too) or unknown."),
]
PurposeOption = Annotated[
    list[str] | None,
    typer.Option("--purpose", help="A purpose this query serves (repeatable); memories tagged "
                 "purpose:X are usable only for purpose X."),
]
DenyOption = Annotated[
    list[str] | None,
    typer.Option("--deny", help="A memory tag this context must not see (repeatable)."),
]


def one_query(text: str, namespace: str | None, intent: str, purposes: list[str] | None,
              deny: list[str] | None) -> Query:
    """The Query of a command's QUERY argument and options (ConfigError naming the field)."""
    if namespace is None:
        raise ConfigError("--namespace is required with a QUERY")
    return parse(Query, {"text": text, "namespace": namespace, "intent": intent,
                         "policy": {"purposes": purposes or [], "deny": deny or []}})
