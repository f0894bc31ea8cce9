"""``memsieve context QUERY --namespace NS --db DB [--mode] [--budget] [--intent] [--json]``."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import (
    DbOption,
    DenyOption,
    IntentOption,
    JsonOption,
    PurposeOption,
    UnresolvedOption,
    one_query,
    printable,
)
from memsieve.store import open_store


@app.command()
def context(
    query: Annotated[str, typer.Argument(help="The question the agent is about to answer.")],
    db: DbOption,
    namespace: Annotated[str | None, typer.Option(help="The principal's namespace.")] = None,
    mode: Annotated[
        str,
        typer.Option(help="auto (chosen per query; the default), lookup (compact units), "
                     "compose (across sessions), replay (turns with neighbours) or topk."),
    ] = "auto",
    budget: Annotated[int, typer.Option(help="Token budget of the context.", min=1)] = 600,
    intent: IntentOption = "unknown",
    purpose: PurposeOption = None,
    deny: DenyOption = None,
    admissibility: Annotated[
        str,
        typer.Option(help="enforce (inadmissible memories stay out of the prompt; the "
                     "default), annotate or off."),
    ] = "enforce",
    unresolved: UnresolvedOption = "surface",
    validity: Annotated[
        str, typer.Option(help="context (notes on possibly outdated memories), demote or off.")
    ] = "context",
    rerank: Annotated[str | None, typer.Option(help="off, v1 or v2 (as for search).")] = None,
    record: Annotated[
        bool, typer.Option(help="Record the exposure in the store's audit log.")
    ] = True,
    as_json: JsonOption = False,
) -> None:
    """Assemble the prompt-ready context for a query and record what it exposed."""
    from memsieve.assemble import Assembler
    from memsieve.assemble.context import _budget, _mode
    from memsieve.pipeline import Pipeline

    q = one_query(query, namespace, intent, purpose, deny)
    _mode(mode), _budget(budget)  # user mistakes before the store is opened
    with open_store(db, create=False, readonly=not record) as store:
        pipeline = Pipeline.default(store, rerank=rerank, validity=validity,
                                    admissibility=admissibility, unresolved=unresolved)
        ctx = Assembler(pipeline)(q, mode=mode, budget=budget, record=record)
    if as_json:
        typer.echo(json.dumps(ctx.to_dict(), ensure_ascii=False))
        return
    for line in ctx.text.splitlines() or ["(no memories fit the budget)"]:
        typer.echo(printable(line))
    for memory_id, reason in ctx.excluded:
        typer.echo(f"# excluded {printable(memory_id)}: {printable(reason)}", err=True)
    typer.echo(f"# mode {ctx.mode}, {ctx.tokens}/{ctx.budget} tokens"
               + (f", exposure {ctx.exposure_id}" if ctx.exposure_id is not None else ""),
               err=True)
