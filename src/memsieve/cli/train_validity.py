"""``memsieve train validity --seed S``: train the validity verifier on generator data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli.train import train_app, writable


@train_app.command("validity")
def train_validity(
    seed: Annotated[int, typer.Option(help="Seed of the data, the head and the order.")] = 7,
    n_examples: Annotated[
        int | None, typer.Option(help="Training examples (default: the released recipe's).")
    ] = None,
    epochs: Annotated[int | None, typer.Option(help="Passes over the examples.", min=1)] = None,
    n_val: Annotated[int | None, typer.Option(help="Validation examples (thresholds).")] = None,
    n_test: Annotated[int | None, typer.Option(help="Held-out test examples.")] = None,
    threads: Annotated[int | None, typer.Option(help="torch threads for the run.", min=1)] = None,
    out: Annotated[
        Path | None, typer.Option(help="Checkpoint to write (default: the packaged one).")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write the full report as JSON.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    memora: Annotated[int | None, typer.Option(
        help="Also train on this many natural examples from Memora's labelled sessions "
        "(half updates and deletes, half list items; 0: generator only).", min=0)] = None,
    memora_dir: Annotated[Path | None, typer.Option(
        help="The Memora data folder (with monthly/ and quarterly/), for --memora.")] = None,
    memora_edges: Annotated[int | None, typer.Option(
        help="With --memora: also this many hard negatives mined from the write-time edges "
        "over the same personas (an edge whose later session leaves the earlier item "
        "standing).", min=0)] = None,
    calibrate_edges: Annotated[bool, typer.Option(
        "--calibrate-edges", help="Do not train: add the write-time edge threshold (chosen on "
        "the checkpoint's own validation data) to an already trained checkpoint.")] = False,
) -> None:
    """Train the validity verifier (synthetic pairs only) and choose its thresholds."""
    from memsieve.validity.train import TrainConfig, train_verifier
    from memsieve.validity.verifier import DEFAULT_CHECKPOINT

    writable(out, report)
    if calibrate_edges:
        from memsieve.validity.train import calibrate_edges as calibrate

        path = out or DEFAULT_CHECKPOINT
        typer.echo(f"edge threshold {calibrate(path):.4f} written into {path}")
        return

    defaults = TrainConfig()
    extra = {k: v for k, v in (("n_val", n_val), ("n_test", n_test), ("threads", threads),
                               ("memora", memora), ("memora_edges", memora_edges),
                               ("memora_dir", str(memora_dir) if memora_dir else None))
             if v is not None}
    result = train_verifier(
        seed,
        n_examples=n_examples if n_examples is not None else defaults.n_examples,
        epochs=epochs if epochs is not None else defaults.epochs,
        out=out or DEFAULT_CHECKPOINT,
        progress=progress,
        **extra,
    )
    if report:
        report.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    th = result["thresholds"]
    for split in ("validation", "test"):
        r = result[split]["context"]
        o, g = r["overall"], r["per_group"]
        typer.echo(
            f"{split}: acc {o['accuracy']:.3f}  P {o['precision']:.3f}  R {o['recall']:.3f}  "
            f"F1 {o['f1']:.3f}  hard-neg spec {g['hard']['accuracy']:.3f}  "
            f"easy-neg spec {g['easy']['accuracy']:.3f}"
        )
    ck = result["checkpoint"]
    typer.echo(
        f"thresholds: context {th['context_threshold']:.4f}, demote {th['demote_threshold']:.4f}"
        f"; trained in {result['wall_s']:.0f} s; wrote {ck['path']} "
        f"({ck['bytes'] / 2**20:.1f} MiB)"
    )


@train_app.command("statement-gate")
def train_statement_gate(
    seed: Annotated[int, typer.Option(help="Seed of the generated turns.")] = 7,
    out: Annotated[
        Path | None, typer.Option(help="Checkpoint to write (default: the packaged one).")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write the report as JSON.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Train the validity layer's target gate: does a memory state something a later one could
    overturn, or is it small talk? (generated turns only; under a minute on 2 cores)"""
    from memsieve.validity.statement import DEFAULT_CHECKPOINT, train_gate

    writable(out, report)
    result = train_gate(seed, out=out or DEFAULT_CHECKPOINT, progress=progress)
    if report:
        report.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    typer.echo(
        f"validation AUC {result['validation_auc']:.4f}; threshold {result['threshold']:.4f} "
        f"keeps {result['validation_statements_kept']:.1%} of statements and rejects "
        f"{result['validation_small_talk_rejected']:.1%} of small talk; trained in "
        f"{result['wall_s']:.0f} s; wrote {out or DEFAULT_CHECKPOINT}"
    )
