"""``memsieve train v1 --seed S [--all]``: train the v1 reranker on LoCoMo, write a checkpoint."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from memsieve.cli import app
from memsieve.errors import ConfigError

train_app = typer.Typer(
    help="Train the project's small models (reproducible from a seed).", no_args_is_help=True
)
app.add_typer(train_app, name="train")

# the options every reranker training command takes
SeedOption = Annotated[int, typer.Option(help="Split seed: trains on that split's train half.")]
DataOption = Annotated[Path | None, typer.Option(help="LoCoMo file (locomo10.json).")]
OutOption = Annotated[Path | None, typer.Option(help="Checkpoint path to write.")]
AllOption = Annotated[
    bool, typer.Option("--all", help="Train on every conversation (the default checkpoint).")
]


@train_app.command("v1")
def train_v1(
    seed: SeedOption = 7,
    data: DataOption = None,
    out: OutOption = None,
    all_: AllOption = False,
    ablate: Annotated[
        str | None,
        typer.Option(help="Feature groups to drop, comma-separated: lexical, window, context, ..."),
    ] = None,
    embed: Annotated[
        str, typer.Option(help="Vector branch: none (default), interactions or full.")
    ] = "none",
    epochs: Annotated[int | None, typer.Option(help="Maximum epochs.", min=1)] = None,
    model: Annotated[str, typer.Option(help="Embedding model.")] = "minilm",
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Train the v1 reranker (listwise loss over the fusion pool) on LoCoMo."""
    from memsieve.embed import get_encoder
    from memsieve.eval.datasets import load_task, split
    from memsieve.eval.harness import Context
    from memsieve.rerank.learned import save_checkpoint, weights_dir
    from memsieve.rerank.train import TrainConfig
    from memsieve.rerank.train import train_v1 as run_training

    groups = tuple(g.strip() for g in (ablate or "").split(",") if g.strip())
    if groups and out is None:
        raise ConfigError("an ablation needs --out (keep ablation checkpoints out of the package)")
    kwargs = {"epochs": epochs} if epochs is not None else {}
    config = TrainConfig(seed=seed, ablate=groups, embed=embed, **kwargs)
    t0 = time.perf_counter()
    task = load_task("locomo", data)
    ctx = Context(task, get_encoder(model), progress=progress)
    try:
        train_groups = task.groups if all_ else split(task.groups, seed)[0]
        net, meta = run_training(ctx, train_groups, config, progress=progress)
    finally:
        ctx.close()
    name = "v1-default.pt" if all_ else f"v1-seed{seed}.pt"
    path = save_checkpoint(out or weights_dir() / name, net, meta)
    val = meta["val"]
    typer.echo(
        f"trained v1 (seed {seed}) on {len(meta['train_groups'])} conversations, "
        f"{meta['n_train_queries']} queries, {meta['best_epoch']} epochs "
        f"(chosen on {meta['val_group']}: val MRR {val.get('mrr', 0):.3f}, "
        f"R@10 {val.get('recall@10', 0):.3f}) in {meta['wall_s']:.1f} s "
        f"(total {time.perf_counter() - t0:.1f} s)"
    )
    typer.echo(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


@train_app.command("v2")
def train_v2(
    seed: SeedOption = 7,
    data: DataOption = None,
    out: OutOption = None,
    all_: AllOption = False,
    epochs: Annotated[int, typer.Option(help="Epochs (the best on validation is kept).", min=1)]
    = 3,
    threads: Annotated[int | None, typer.Option(help="torch threads.", min=1)] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Train the v2 cross-encoder (top-10 reorder) on the lists of a v1 trained alongside."""
    import torch

    from memsieve.embed import get_encoder
    from memsieve.eval.datasets import load_task, split
    from memsieve.eval.harness import Context
    from memsieve.rerank.learned import weights_dir
    from memsieve.rerank.train_v2 import TrainConfig
    from memsieve.rerank.train_v2 import train_v2 as run_training

    if threads is not None:
        torch.set_num_threads(threads)
    name = "default" if all_ else f"seed{seed}"
    t0 = time.perf_counter()
    task = load_task("locomo", data)
    ctx = Context(task, get_encoder("minilm"), progress=progress)
    try:
        train_groups = task.groups if all_ else split(task.groups, seed)[0]
        cross, meta = run_training(ctx, train_groups, TrainConfig(seed=seed, epochs=epochs),
                                   progress=progress)
    finally:
        ctx.close()
    path = cross.save(out or weights_dir() / f"v2-{name}.pt")
    typer.echo(
        f"trained v2 (seed {seed}) on {len(meta['train_groups'])} conversations, "
        f"{meta['n_train_lists']} lists; epoch {meta['best_epoch']}, v1 weight "
        f"{meta['v1_weight']} chosen on {meta['val_group']}: top-10 MRR "
        f"{meta['val_mrr_top10']:.3f} (v1 alone {meta['val_mrr_top10_v1']:.3f}) "
        f"in {meta['wall_s']:.1f} s (total {time.perf_counter() - t0:.1f} s)"
    )
    typer.echo(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")
