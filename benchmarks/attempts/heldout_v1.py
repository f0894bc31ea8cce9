"""Stop 37: v1 checkpoints for a clean in-kind side of ``bench_domains.py --part zone``.

The packaged ``v1-seed{S}.pt`` are refit on every train group after the epoch is chosen, and
their gate's bank holds every train pool, so the validation groups that ``--part zone`` scores
"in kind" were seen by both. This writes, per split seed, the model that chose the epoch
(trained without the validation groups, ``refit=False``) with a gate fitted on the same pools,
so neither saw them; the trust zone's grid is then re-scored with them:

    .venv/bin/python benchmarks/attempts/heldout_v1.py --seeds 11,23,31,47 --out /tmp/heldout
    .venv/bin/python benchmarks/bench_domains.py --part zone --seeds 11,23,31,47 \\
        --weights /tmp/heldout --lodo-dir /tmp/memsieve-lodo \\
        --json benchmarks/results/domains/zone_heldout.json

About 90 s per seed on 2 cores. The per-dataset loss weights count the train queries without
the validation groups, so these models are close to, not bit-identical with, the inner v1 that
``train_v2`` trains. Figures: benchmarks/RESULTS.md, "Stop 37".
"""

from __future__ import annotations

import argparse
from pathlib import Path

import memsieve.rerank.train as T
from memsieve.embed import get_encoder
from memsieve.eval.datasets import load_task, split
from memsieve.eval.harness import Context
from memsieve.rerank.learned import save_checkpoint

DATASETS = ("locomo", "rhelm", "longmemeval", "memora")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="11,23,31,47")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    plain = T._dataset_examples

    def held_out(part: T.Part, config: T.TrainConfig) -> dict:
        d = plain(part, config)
        d["queries"] = d["inner"]  # the gate's bank: no validation pool
        return d

    T._dataset_examples = held_out
    encoder = get_encoder("minilm")
    ctxs = [Context(load_task(n), encoder, progress=False) for n in DATASETS]
    try:
        for seed in (int(s) for s in args.seeds.split(",")):
            parts = [T.Part(c, tuple(split(c.task.groups, seed)[0])) for c in ctxs]
            model, meta = T.train_v1(parts, T.TrainConfig(seed=seed, refit=False))
            save_checkpoint(args.out / f"v1-seed{seed}.pt", model, meta)
            print(f"seed {seed}: epoch {meta['best_epoch']}, {meta['wall_s']} s", flush=True)
    finally:
        for c in ctxs:
            c.close()


if __name__ == "__main__":
    main()
