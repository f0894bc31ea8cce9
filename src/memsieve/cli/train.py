"""``memsieve train v1|v2 --seed S [--all]``: train the rerankers, write a checkpoint."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from memsieve.cli import app
from memsieve.errors import ConfigError

train_app = typer.Typer(
    help="Train the project's small models (reproducible from a seed).", no_args_is_help=True
)
app.add_typer(train_app, name="train")

# the options every reranker training command takes
SeedOption = Annotated[int, typer.Option(help="Split seed: trains on that split's train half.")]
OutOption = Annotated[Path | None, typer.Option(help="Checkpoint path to write.")]


DATASETS = ("locomo", "rhelm", "longmemeval", "memora")
ALL_DATASETS = ",".join(DATASETS)
# the packaged v2 checkpoints' training data: on split seed 7 a v2 trained on all four datasets
# ranked LoCoMo, RHELM and LongMemEval lower than this one (benchmarks/RESULTS.md)
V2_DATASETS = "locomo"
DatasetsOption = Annotated[
    str, typer.Option(help="Datasets whose train halves it learns from, comma-separated.")
]
ExcludeOption = Annotated[
    str | None,
    typer.Option(help="Datasets to leave out (leave-one-dataset-out), comma-separated."),
]
AllOption = Annotated[
    bool, typer.Option("--all", help="Train on every group of every dataset (the default "
                       "checkpoint).")
]


def writable(*paths: Path | None) -> None:
    """Fail before minutes of training, not after, when an output path cannot be written (its
    folder cannot be made, or it is a folder): a ConfigError naming it."""
    for path in paths:
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"cannot write {path}: {err.strerror or err}") from None
        if path.is_dir() or not os.access(path.parent, os.W_OK):
            raise ConfigError(f"cannot write {path}: it is a folder, or its folder is "
                              "read-only")


def _datasets(spec: str, exclude: str | None) -> list[str]:
    """The datasets named in ``spec`` (comma-separated) minus ``exclude``; ConfigError on a
    name that is not a dataset, or when none is left."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    dropped = [n.strip() for n in (exclude or "").split(",") if n.strip()]
    unknown = sorted(set(names + dropped) - set(DATASETS))
    if unknown:
        raise ConfigError(f"unknown dataset(s) {unknown}; choose from {list(DATASETS)}")
    kept = [n for n in names if n not in dropped]
    if not kept:
        raise ConfigError("no dataset left to train on")
    return kept


@contextlib.contextmanager
def _parts(names: list[str], seed: int, all_: bool, model: str,
           progress: bool) -> Iterator[list[Any]]:
    """One training ``Part`` per dataset: its eval context (read from its default path under
    ../shared/data) and the train half of split ``seed`` (every group with ``all_``);
    the contexts are closed on the way out."""
    from memsieve.embed import get_encoder
    from memsieve.eval.datasets import load_task, split
    from memsieve.eval.harness import Context
    from memsieve.rerank.train import Part

    encoder = get_encoder(model)
    contexts = [Context(load_task(n), encoder, progress=progress) for n in names]
    try:
        yield [Part(c, tuple(c.task.groups if all_ else split(c.task.groups, seed)[0]))
               for c in contexts]
    finally:
        for c in contexts:
            c.close()


@train_app.command("v1")
def train_v1(
    seed: SeedOption = 7,
    datasets: DatasetsOption = ALL_DATASETS,
    exclude: ExcludeOption = None,
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
    """Train the v1 reranker (listwise loss over the fusion pool) on the train halves of split
    SEED of several datasets (read from their default paths under ../shared/data)."""
    from memsieve.rerank.learned import save_checkpoint, weights_dir
    from memsieve.rerank.train import TrainConfig
    from memsieve.rerank.train import train_v1 as run_training

    writable(out)
    names = _datasets(datasets, exclude)
    groups = tuple(g.strip() for g in (ablate or "").split(",") if g.strip())
    if (groups or exclude or set(names) != set(DATASETS)) and out is None:
        raise ConfigError("an ablation or a subset of the datasets needs --out (keep those "
                          "checkpoints out of the package)")
    kwargs = {"epochs": epochs} if epochs is not None else {}
    config = TrainConfig(seed=seed, ablate=groups, embed=embed, **kwargs)
    t0 = time.perf_counter()
    with _parts(names, seed, all_, model, progress) as parts:
        net, meta = run_training(parts, config, progress=progress)
    name = "v1-default.pt" if all_ else f"v1-seed{seed}.pt"
    path = save_checkpoint(out or weights_dir() / name, net, meta)
    val = meta["val"]
    counts = ", ".join(f"{n} {k}" for n, k in meta["n_train_queries"].items())
    typer.echo(
        f"trained v1 (seed {seed}) on {counts} queries; {meta['best_epoch']} epochs "
        f"(chosen on held-out groups: val MRR "
        f"{val.get('mrr', 0):.3f}, R@10 {val.get('recall@10', 0):.3f}) in {meta['wall_s']:.1f} s "
        f"(total {time.perf_counter() - t0:.1f} s)"
    )
    typer.echo(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


@train_app.command("v2")
def train_v2(
    seed: SeedOption = 7,
    datasets: DatasetsOption = V2_DATASETS,
    exclude: ExcludeOption = None,
    out: OutOption = None,
    all_: AllOption = False,
    epochs: Annotated[int, typer.Option(help="Epochs (the best on validation is kept).", min=1)]
    = 3,
    threads: Annotated[int | None, typer.Option(help="torch threads.", min=1)] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Train the v2 cross-encoder (top-10 reorder) on the lists of a v1 trained alongside, over
    the train halves of split SEED of the named datasets (LoCoMo alone by default, as the
    packaged checkpoints were)."""
    import torch

    from memsieve.rerank.learned import weights_dir
    from memsieve.rerank.train_v2 import TrainConfig
    from memsieve.rerank.train_v2 import train_v2 as run_training

    writable(out)
    names = _datasets(datasets, exclude)
    if set(names) != set(_datasets(V2_DATASETS, None)) and out is None:
        raise ConfigError(f"datasets other than the packaged checkpoints' ({V2_DATASETS}) need "
                          "--out (keep those checkpoints out of the package)")
    if threads is not None:
        torch.set_num_threads(threads)
    t0 = time.perf_counter()
    with _parts(names, seed, all_, "minilm", progress) as parts:
        cross, meta = run_training(parts, TrainConfig(seed=seed, epochs=epochs),
                                   progress=progress)
    name = "default" if all_ else f"seed{seed}"
    path = cross.save(out or weights_dir() / f"v2-{name}.pt")
    counts = ", ".join(f"{n} {k}" for n, k in meta["n_train_lists"].items())
    typer.echo(
        f"trained v2 (seed {seed}) on {counts} lists; epoch {meta['best_epoch']}, v1 weight "
        f"{meta['v1_weight']} chosen on the held-out groups: mean top-10 MRR "
        f"{meta['val_mrr_top10']:.3f} (v1 alone {meta['val_mrr_top10_v1']:.3f}) "
        f"in {meta['wall_s']:.1f} s (total {time.perf_counter() - t0:.1f} s)"
    )
    typer.echo(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")
