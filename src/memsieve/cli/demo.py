"""``memsieve demo``: ingest the bundled sample conversation into a temp store and ask it."""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.embed import get_encoder
from memsieve.ingest import add_memories, read_memories
from memsieve.pipeline import Pipeline
from memsieve.store import open_store
from memsieve.types import Query

QUESTIONS = [
    "Where does Sam work?",
    "Which city does Sam live in?",
    "What instrument is Sam learning?",
    "What is Sam's cat called?",
    "What food does Sam like?",
]


@app.command()
def demo(
    model: Annotated[str, typer.Option(help="Embedding model: minilm or hash.")] = "minilm",
    k: Annotated[int, typer.Option(help="Results per question.", min=1)] = 6,
) -> None:
    """Ingest a small bundled conversation (a job change, a move) and answer questions,
    flagging answers a later turn has overturned; then assemble a prompt-ready context that
    keeps a health memory out, and show the exposure log."""
    sample = resources.files("memsieve") / "data" / "sample_conversation.jsonl"
    with resources.as_file(sample) as path, tempfile.TemporaryDirectory() as tmp:
        memories = list(read_memories("jsonl", path))
        encoder = get_encoder(model)
        with open_store(Path(tmp) / "demo.db") as store:
            report = add_memories(store, memories, encoder)
            typer.echo(report.summary())
            pipeline = Pipeline.default(store, encoder=encoder, k=k, validity="context")
            for question in QUESTIONS:
                response = pipeline.run(Query(text=question, namespace="sam"))
                typer.echo(f"\nQ: {question}")
                for r in response.results:
                    typer.echo(f"  {r.rank}. [{r.memory_id}] {r.text}")
                    v = r.annotations.get("validity")
                    if v is not None and v.status == "possibly_outdated":
                        typer.echo(f"     ! {v.context_note} Later: [{v.superseded_by}]")
                    a = r.annotations.get("admissibility")
                    if a is not None and a.status != "admissible":
                        typer.echo(f"     ? {a.status}: {a.reason}")
                typer.echo(f"  exposed: {', '.join(response.trace.exposed)}")
            _context(store, encoder)


def _context(store, encoder) -> None:
    """The agent-facing end: a context under a budget, policy enforced, exposure recorded."""
    from memsieve.assemble import Assembler

    pipeline = Pipeline.default(store, encoder=encoder, validity="context",
                                admissibility="enforce")
    query = Query(text="How is Sam's cello practice going?", namespace="sam",
                  intent="current", policy={"deny": ["health"]})
    ctx = Assembler(pipeline)(query, mode="auto", budget=150)
    typer.echo(f"\nContext for {query.text!r} (intent current, tag 'health' denied; "
               f"mode {ctx.mode}, {ctx.tokens}/{ctx.budget} tokens):")
    for line in ctx.text.splitlines():
        typer.echo(f"  | {line}")
    for memory_id, reason in ctx.excluded:
        typer.echo(f"  kept out: [{memory_id}] {reason}")
    for e in store.exposures("sam"):
        typer.echo(f"  audit: exposure {e.id} at {e.time}: {', '.join(e.memory_ids)}")
