"""Training of the v2 cross-encoder: listwise softmax cross-entropy over v1's top lists.

Data: the queries of the train groups of several datasets (one ``Part`` per dataset, as v1's
training takes them: the train halves of a split seed of LoCoMo, RHELM, LongMemEval and
Memora, or every group for the default). Each query's list is v1's top ``list_size`` (the hard
negatives v2 meets at inference, from every dataset) plus any gold turn v1 left out, so every
query teaches. The target spreads its mass evenly over the gold turns (as v1's loss does,
``listwise_loss``); each dataset's lists weigh ``1 / sqrt(n)`` (normalised), as in v1.

Model: ``CrossEncoder.from_base``: the packaged MiniLM, top ``n_trainable_layers`` layers and
the head trained. The frozen layers' output is computed once per pair (fp16 cache), so an epoch
runs only the trained layer: a few minutes per seed on 2 CPU cores.

Selection: the train groups v1's training holds out (``VAL_SHARE`` of each dataset's, drawn
with ``random.Random(seed)``) are held out here too. The lists come from a v1 trained here on
the other train groups only (v1's own recipe with ``refit=False``), so the held-out lists are
as good as v1's lists on unseen groups; a v1 that had seen them would look better there than
at test and bias ``w`` toward v1. After each epoch the model scores the held-out queries'
top-10; for each v1 weight ``w`` in ``WEIGHTS`` the reordered lists give an MRR per dataset;
the epoch and ``w`` with the best mean over datasets are kept (each dataset counting the same;
no refit on the held-out groups).

Deterministic given the seed: ``torch.manual_seed`` for the head, seeded batch order and
dropout, deterministic torch algorithms (restored afterwards).
"""

from __future__ import annotations

import dataclasses
import logging
import random
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memsieve import pairmodel
from memsieve.errors import ConfigError
from memsieve.rerank.cross import PROTECTED, CrossEncoder, combine

log = logging.getLogger(__name__)

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one v2 training run (saved in the checkpoint)."""

    seed: int = 7
    epochs: int = 3
    list_size: int = 10
    queries_per_batch: int = 4
    lr: float = 1e-4
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.06
    n_trainable_layers: int = 1
    max_length: int = 64


@dataclasses.dataclass
class ListQuery:
    """One query's list: memory texts, gold flags, v1 scores (for the weight choice), and its
    weight in the loss."""

    text: str
    texts: list[str]
    gold: list[bool]
    v1: np.ndarray
    weight: float = 1.0


def build_lists(ctx: Any, v1: Any, queries: Sequence[Any], size: int) -> list[ListQuery]:
    """v1's top ``size`` per query plus the gold turns outside it (gold-free queries dropped)."""
    out = []
    for q in queries:
        ranking, scores = v1.rank_scored(ctx, q)
        texts = v1.namespace_texts(ctx, q.namespace)
        ids = list(ranking.ids[:size])
        v1s = list(scores[:size])
        ids += [g for g in sorted(q.gold) if g not in ids and g in texts]
        v1s += [float(scores.min())] * (len(ids) - len(v1s))
        gold = [i in q.gold for i in ids]
        if any(gold):
            out.append(ListQuery(q.text, [texts[i] for i in ids], gold, np.array(v1s)))
    return out


def protected_mrr(lists: Sequence[ListQuery], logits: Sequence[np.ndarray],
                  weight: float | None) -> float:
    """MRR over the protected top-10 reordered by ``combine`` (``weight=None``: v1 order).

    A query with no gold in its top-10 counts 0 for every weight, so it is left out."""
    total, n = 0.0, 0
    for lq, lg in zip(lists, logits, strict=True):
        k = min(PROTECTED, len(lq.texts))
        gold = np.array(lq.gold[:k])
        if not gold.any():
            continue
        if weight is None:
            order = np.arange(k)
        else:
            order = np.argsort(-combine(lg[:k], lq.v1[:k], weight), kind="stable")
        total += 1.0 / (1 + int(np.flatnonzero(gold[order])[0]))
        n += 1
    return total / max(n, 1)


def train_v2(
    parts: Sequence[Any],
    config: TrainConfig,
    *,
    progress: bool = False,
) -> tuple[CrossEncoder, dict[str, Any]]:
    """Train v2 on the queries of each part's groups (``rerank.train.Part``, one per dataset);
    returns the model (with its chosen ``v1_weight`` in its config) and the checkpoint
    metadata (train groups per dataset, so the eval refuses it for a test half it saw)."""

    from memsieve.rerank.eval_pipeline import V1Pipeline
    from memsieve.rerank.learned import save_checkpoint
    from memsieve.rerank.train import TrainConfig as V1Config
    from memsieve.rerank.train import dataset_weights, train_v1

    t0 = time.perf_counter()
    inner, inner_meta = train_v1(parts, V1Config(seed=config.seed, refit=False),
                                 progress=progress)
    train: dict[str, list[ListQuery]] = {}
    val: dict[str, list[ListQuery]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = save_checkpoint(Path(tmp) / "v1-inner.pt", inner, inner_meta)
        for part in parts:
            ctx, name = part.ctx, part.name
            groups, headline = set(part.groups), set(ctx.task.headline)
            held = set(inner_meta["val_groups"][name])
            queries = [q for q in ctx.task.queries if q.namespace in groups]
            v1 = V1Pipeline(checkpoint=ckpt)
            v1.fit(ctx, [q for q in queries if not headline or q.category in headline],
                   config.seed)
            train[name] = build_lists(ctx, v1, [q for q in queries if q.namespace not in held],
                                      config.list_size)
            val[name] = build_lists(ctx, v1, [q for q in queries if q.namespace in held
                                              and (not headline or q.category in headline)],
                                    PROTECTED)
    weight = dataset_weights({n: len(v) for n, v in train.items()})
    lists = []
    for name, ls in train.items():
        for lq in ls:
            lq.weight = weight[name]
        lists += ls
    log.info("v2 seed %d: %s train / %s val lists", config.seed,
             {n: len(v) for n, v in train.items()}, {n: len(v) for n, v in val.items()})
    cross, history = fit_lists(lists, {n: v for n, v in val.items() if v}, config,
                               progress=progress)
    meta = {
        "datasets": [p.name for p in parts],
        "train_groups": {p.name: sorted(set(p.groups)) for p in parts},
        "val_groups": inner_meta["val_groups"],
        "seed": config.seed,
        "v1_lists": "v1 trained on the train groups but the held-out ones (refit=False)",
        "v1_weight": history["v1_weight"],
        "loss_weight": {n: round(w, 4) for n, w in weight.items()},
        "n_train_lists": {n: len(v) for n, v in train.items()},
        "n_val_lists": {n: len(v) for n, v in val.items()},
        "best_epoch": history["best_epoch"],
        "val_mrr_top10": history["best_mrr"],
        "val_mrr_top10_v1": history["v1_mrr"],
        "history": history["epochs"],
        "train": dataclasses.asdict(config),
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    cross.config.update(meta)
    return cross, meta


def fit_lists(
    train: list[ListQuery], val: list[ListQuery] | Mapping[str, list[ListQuery]],
    config: TrainConfig, *, progress: bool = False
) -> tuple[CrossEncoder, dict[str, Any]]:
    """A fresh ``CrossEncoder`` trained on ``train`` lists, epoch and v1 weight chosen on
    ``val`` (one set, or one per dataset: their mean MRR); deterministic given
    ``config.seed`` (torch's global RNG is seeded here)."""
    import torch

    sets = dict(val) if isinstance(val, Mapping) else {"val": list(val)}
    if not train or not sets or not all(sets.values()):
        raise ConfigError("v2 training needs train and validation lists with gold")
    prev_det, prev_threads = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    try:
        torch.use_deterministic_algorithms(True)
        torch.manual_seed(config.seed)
        cross = CrossEncoder.from_base(n_trainable_layers=config.n_trainable_layers,
                                       max_length=config.max_length)
        history = _fit(cross, train, sets, config, progress=progress)
    finally:
        torch.use_deterministic_algorithms(prev_det)
        torch.set_num_threads(prev_threads)
    return cross, history


def _fit(cross: CrossEncoder, train: list[ListQuery], sets: dict[str, list[ListQuery]],
         cfg: TrainConfig, *, progress: bool) -> dict[str, Any]:
    import torch
    from tqdm.auto import tqdm

    from memsieve.rerank.train import listwise_loss

    model, k = cross.model, pairmodel.N_BASE_LAYERS - cfg.n_trainable_layers
    trained = pairmodel.trained_prefixes(cfg.n_trainable_layers)
    head, body = [], []
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith(trained)
        if p.requires_grad:
            (head if name.startswith("head.") else body).append(p)
    rng = random.Random(cfg.seed)
    names = list(sets)
    val = [lq for n in names for lq in sets[n]]
    bounds = np.cumsum([0] + [len(sets[n]) for n in names])

    def mean_mrr(logits: list[np.ndarray], weight: float | None) -> float:
        """Mean over the validation sets of their protected MRR."""
        return float(np.mean([protected_mrr(sets[n], logits[bounds[j] : bounds[j + 1]], weight)
                              for j, n in enumerate(names)]))

    def cache(lists: list[ListQuery], batches: list[list[int]], desc: str) -> list[tuple]:
        out = []
        model.eval()
        with torch.no_grad():  # not inference_mode: the cached tensors feed autograd later
            for b in tqdm(batches, desc=desc, unit="batch", disable=not progress):
                qs = [q for i in b for q in [lists[i].text] * len(lists[i].texts)]
                ts = [t for i in b for t in lists[i].texts]
                x = cross.tokenizer(qs, ts, truncation="longest_first",
                                    max_length=cfg.max_length, padding=True, return_tensors="pt")
                h = model.bottom(x["input_ids"], x["attention_mask"], x["token_type_ids"], k)
                out.append((h.half(), x["attention_mask"], x["token_type_ids"], b))
        return out

    qpb = cfg.queries_per_batch
    order = list(range(len(train)))
    rng.shuffle(order)
    train_cache = cache(train, [order[s : s + qpb] for s in range(0, len(order), qpb)],
                        f"cache frozen layers 0-{k - 1}")
    val_cache = cache(val, [list(range(s, min(s + 16, len(val))))
                            for s in range(0, len(val), 16)], "cache validation")

    def val_logits() -> list[np.ndarray]:
        model.eval()
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for h, mask, tt, b in val_cache:
                logits = model.top(h.float(), mask, tt, k)[0][:, 0].numpy()
                s = 0
                for i in b:
                    n = len(val[i].texts)
                    out.append(logits[s : s + n].astype(np.float64))
                    s += n
        return out

    total = cfg.epochs * len(train_cache)
    warm = max(1, int(cfg.warmup * total))
    opt = torch.optim.AdamW([{"params": body, "lr": cfg.lr}, {"params": head, "lr": cfg.head_lr}],
                            weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (total - step) / (total - warm + 1))))
    v1_mrr = mean_mrr([np.zeros(len(v.texts)) for v in val], None)
    best: dict[str, Any] = {"best_mrr": -1.0, "best_epoch": 0, "v1_weight": None, "state": None}
    epochs = []
    bar = tqdm(total=total, desc=f"train v2 (seed {cfg.seed})", unit="batch",
               disable=not progress)
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        batches = list(range(len(train_cache)))
        rng.shuffle(batches)
        run = 0.0
        for j, c in enumerate(batches, 1):
            h, mask, tt, b = train_cache[c]
            logits = model.top(h.float(), mask, tt, k)[0][:, 0]
            width = max(len(train[i].texts) for i in b)
            scores = torch.full((len(b), width), -1e4)
            gold = torch.zeros((len(b), width))
            weight = torch.tensor([train[i].weight for i in b], dtype=torch.float32)
            s = 0
            for row, i in enumerate(b):
                n = len(train[i].texts)
                scores[row, :n] = logits[s : s + n]
                gold[row, :n] = torch.tensor(train[i].gold, dtype=torch.float32)
                s += n
            # the mean of weight x loss (weights average 1 over all lists); a batch's own
            # normalisation would undo the weights with 4 lists a batch
            loss = listwise_loss(scores, gold, weight) * weight.mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            run += float(loss.detach())
            bar.update(1)
            bar.set_postfix(loss=f"{run / j:.4f}")
        lg = val_logits()
        by_w = {w: mean_mrr(lg, w) for w in WEIGHTS}
        w = max(WEIGHTS, key=lambda x: (by_w[x], -x))
        epochs.append({"epoch": epoch, "loss": round(run / max(len(batches), 1), 5),
                       "val_mrr_by_weight": {str(x): round(v, 4) for x, v in by_w.items()}})
        if by_w[w] > best["best_mrr"]:
            best = {"best_mrr": by_w[w], "best_epoch": epoch, "v1_weight": w,
                    "state": pairmodel.trained_state(model, cfg.n_trainable_layers)}
    bar.close()
    # keep the best epoch, rounded to fp16 exactly as saved
    pairmodel.load_trained_state(model, cfg.n_trainable_layers, best.pop("state"))
    model.eval()
    cross.config["v1_weight"] = best["v1_weight"]
    return {**best, "v1_mrr": v1_mrr, "epochs": epochs}


__all__ = [
    "WEIGHTS", "ListQuery", "TrainConfig", "build_lists", "fit_lists", "protected_mrr", "train_v2",
]
