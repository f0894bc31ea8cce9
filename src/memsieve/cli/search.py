"""``memsieve search QUERY --namespace NS`` and the batch form ``--queries Q.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.cli.options import (
    AdmissibilityOption,
    DbOption,
    DenyOption,
    IntentOption,
    JsonOption,
    PurposeOption,
    UnresolvedOption,
    one_query,
    printable,
)
from memsieve.errors import ConfigError, NotFound
from memsieve.ingest._common import iter_jsonl
from memsieve.pipeline import Pipeline, Response
from memsieve.store import open_store
from memsieve.types import Query, parse


def read_queries(path: Path) -> list[tuple[Query, int | None]]:
    """Parse a queries JSONL file: one {"query", "namespace", "k"?, "intent"?, "policy"?} per
    line (``policy``: {"purposes": [...], "deny": [...]})."""
    if not path.is_file():
        raise NotFound(f"no queries file at {path}")
    out = []
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}: "
        if not isinstance(obj, dict):
            raise ConfigError(f"{where}expected a JSON object")
        k = obj.pop("k", None)
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ConfigError(f"{where}k must be a positive integer")
        if "query" in obj:
            obj["text"] = obj.pop("query")
        out.append((parse(Query, obj, where=where), k))
    return out


def _print(response: Response, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(response.to_dict(), ensure_ascii=False))
        return
    typer.echo(f"# {printable(response.query.text)}")
    if not response.results:
        typer.echo("  (no memories in this namespace)")
    for r in response.results:
        text = printable(r.text)
        text = text if len(text) <= 110 else text[:107] + "..."
        typer.echo(f"{r.rank:3d}  {r.score:.3f}  {printable(r.memory_id)}  {text}")
        v = r.annotations.get("validity")
        if v is not None and v.status == "possibly_outdated":
            typer.echo(f"       ! possibly outdated, see {printable(str(v.superseded_by))}: "
                       f"{printable(v.evidence)}")
        a = r.annotations.get("admissibility")
        if a is not None and a.status != "admissible":
            typer.echo(f"       {'?' if a.status == 'unresolved' else 'x'} {a.status}: "
                       f"{printable(a.reason)}")
    for memory_id, reason in response.trace.excluded.items():
        typer.echo(f"  excluded {printable(memory_id)}: {printable(reason)}")


@app.command()
def search(
    db: DbOption,
    query: Annotated[str | None, typer.Argument(help="The question to answer.")] = None,
    namespace: Annotated[str | None, typer.Option(help="The principal's namespace.")] = None,
    queries: Annotated[Path | None, typer.Option(help="JSONL file of queries (batch).")] = None,
    k: Annotated[int, typer.Option(help="Results per query.", min=1)] = 10,
    method: Annotated[str, typer.Option(help="bm25, dense, fusion or rrf.")] = "fusion",
    alpha: Annotated[float | None, typer.Option(help="Fusion weight of dense (0..1).")] = None,
    pool: Annotated[int, typer.Option(help="First-stage pool size.", min=1)] = 500,
    rerank: Annotated[
        str | None,
        typer.Option(
            help="off, v1 or v2 (v1 then the top-10 cross-encoder; the default when v1's "
            "checkpoint fits the store's model)."
        ),
    ] = None,
    validity: Annotated[
        str,
        typer.Option(help="off, context (flag possibly outdated results; the default) or "
                     "demote (also move them down)."),
    ] = "context",
    sources: Annotated[
        str,
        typer.Option(help="Validity sources: edges (the later memories found at write time "
                     "that may overturn each result; the default), top1 (the best-ranked later "
                     "memory) or nearest (the later memory of the pool closest to each result)."),
    ] = "edges",
    admissibility: AdmissibilityOption = "annotate",
    unresolved: UnresolvedOption = "surface",
    intent: IntentOption = "unknown",
    purpose: PurposeOption = None,
    deny: DenyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find the memories that answer a query, in one namespace."""
    if validity not in ("off", "context", "demote"):
        raise ConfigError(f"--validity must be off, context or demote, got {validity!r}")
    if sources not in ("edges", "top1", "nearest"):
        raise ConfigError(f"--sources must be edges, top1 or nearest, got {sources!r}")
    if (query is None) == (queries is None):
        raise ConfigError("give either a QUERY argument or --queries FILE, not both or neither")
    if queries is not None:
        batch = read_queries(queries)
    else:
        batch = [(one_query(query, namespace, intent, purpose, deny), None)]
    with open_store(db, readonly=True) as store:
        kwargs = {"alpha": alpha} if alpha is not None else {}
        pipeline = Pipeline.default(
            store, method=method, pool=pool, k=k, rerank=rerank, validity=validity,
            source_policy=sources, admissibility=admissibility, unresolved=unresolved, **kwargs
        )
        for q, qk in batch:
            _print(pipeline.run(q, k=qk if qk is not None else k), as_json)
