"""Training of the v1 reranker: listwise softmax cross-entropy over each query's first-stage pool.

Why listwise: the eval metrics (MRR, Hit@1, Recall@10) depend on where the gold turns land in
the whole pool, and one softmax over the pool uses all of its ~500 hard negatives (the rest of
the fusion pool) in every step with no pair sampling to tune. The target spreads its mass evenly
over a query's gold turns, so every evidence turn is pulled up (recall), not just the easiest.

Vectors enter through scalar interactions (q.m, q.m of the neighbours, m.centroid of the pool
head) by default, not the learned vector branch of ``V1Model``: on the validation conversations
of split seeds 7, 11, 23 (train halves only) the branch overfit within 2-6 epochs and lost
0.03-0.04 MRR against the scalar features alone (``embed="interactions"`` at a tenth of the
learning rate: MRR .595 vs .635; ``full``: worse still). ``embed`` keeps it as an option.

Protocol: train on the train half of a split only. One train group (conversation), drawn with
``random.Random(seed)``, is held out to pick the number of epochs (early stopping on its
MRR + Recall@10, headline categories); the model is then refit from the same initialisation on
every train group for that many epochs. Deterministic given the seed: seeded init and dropout
(inside ``torch.random.fork_rng``, so the caller's RNG is untouched), a seeded data order,
deterministic torch algorithms, and no numpy randomness at all.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from memsieve.errors import ConfigError
from memsieve.rerank.features import (
    FEATURE_GROUPS,
    FEATURES,
    NamespaceFeatures,
    QueryTerms,
    pool_features,
)
from memsieve.rerank.learned import V1Model
from memsieve.retrieve.fusion import fuse
from memsieve.retrieve.retriever import select_pool

log = logging.getLogger(__name__)

ABLATIONS = tuple(FEATURE_GROUPS)
_VECTOR = {"prod", "diff", "proj"}  # the parameters of V1Model's vector branch


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run (saved in the checkpoint)."""

    seed: int = 7
    epochs: int = 30
    patience: int = 6
    batch_size: int = 16
    lr: float = 1e-3
    embed_lr_scale: float = 1.0  # the vector branch learns this much slower (it overfits first)
    weight_decay: float = 0.01
    embed: str = "none"  # see the module docstring: the vector branch overfits LoCoMo
    proj: int = 16
    hidden: int = 256
    dropout: float = 0.1
    pool: int = 500
    window: int = 3
    ablate: tuple[str, ...] = ()
    refit: bool = True

    def __post_init__(self) -> None:
        bad = sorted(set(self.ablate) - set(ABLATIONS))
        if bad:
            raise ConfigError(f"unknown ablation {bad}; choose from {list(ABLATIONS)}")

    def features(self) -> list[str]:
        dropped = {f for g in self.ablate if g in FEATURE_GROUPS for f in FEATURE_GROUPS[g]}
        return [f for f in FEATURES if f not in dropped]


@dataclasses.dataclass(frozen=True)
class TrainQuery:
    """One training query: its terms, raw first-stage scores over its namespace (store order),
    its gold rows, and whether its category counts in the headline."""

    namespace: str
    terms: QueryTerms
    dense: np.ndarray
    bm25: np.ndarray
    gold: frozenset[int]
    headline: bool = True


@dataclasses.dataclass
class Examples:
    """Padded pools of a set of queries, ready for batches."""

    q: torch.Tensor  # (Q, d)
    x: torch.Tensor  # (Q, K, F)
    rows: torch.Tensor  # (Q, K) rows of ``memories``
    memories: torch.Tensor  # (T, d) every memory vector of the namespaces involved
    gold: torch.Tensor  # (Q, K) 1.0 at gold candidates
    mask: torch.Tensor  # (Q, K) True at real (not padded) candidates
    n_gold: torch.Tensor  # (Q,) gold turns of the query, in the pool or not
    headline: torch.Tensor  # (Q,) bool

    def __len__(self) -> int:
        return len(self.q)


def make_examples(
    queries: Sequence[TrainQuery],
    namespaces: Mapping[str, NamespaceFeatures],
    *,
    alpha: float,
    pool: int,
    window: int,
) -> Examples:
    """Fuse, cut the pool (as the eval pipeline and the product do) and compute features."""
    offsets, blocks, total = {}, [], 0
    for name in sorted({q.namespace for q in queries}):
        offsets[name] = total
        blocks.append(namespaces[name].matrix)
        total += len(namespaces[name].matrix)
    dim = blocks[0].shape[1] if blocks else 0
    k_max = max([min(pool, len(q.dense)) for q in queries], default=0)
    n = len(queries)
    x = np.zeros((n, k_max, len(FEATURES)), dtype=np.float32)
    rows = np.zeros((n, k_max), dtype=np.int64)
    gold = np.zeros((n, k_max), dtype=np.float32)
    mask = np.zeros((n, k_max), dtype=bool)
    for i, tq in enumerate(queries):
        ns = namespaces[tq.namespace]
        fused = fuse(tq.dense, tq.bm25, alpha)
        top = select_pool(fused, pool)
        f = pool_features(tq.terms, ns, top, tq.dense[top], tq.bm25[top], fused[top],
                          window=window)
        k = len(top)
        x[i, :k] = f.x
        rows[i, :k] = top + offsets[tq.namespace]
        gold[i, :k] = [p in tq.gold for p in top]
        mask[i, :k] = True
    return Examples(
        q=torch.from_numpy(np.stack([q.terms.vector for q in queries]).astype(np.float32))
        if queries
        else torch.zeros((0, dim)),
        x=torch.from_numpy(x),
        rows=torch.from_numpy(rows),
        memories=torch.from_numpy(np.concatenate(blocks).astype(np.float32))
        if blocks
        else torch.zeros((0, dim)),
        gold=torch.from_numpy(gold),
        mask=torch.from_numpy(mask),
        n_gold=torch.tensor([len(q.gold) for q in queries], dtype=torch.float32),
        headline=torch.tensor([q.headline for q in queries], dtype=torch.bool),
    )


def _scores(model: V1Model, ex: Examples, idx: torch.Tensor) -> torch.Tensor:
    m = ex.memories[ex.rows[idx]] if model.embed != "none" else None  # (B, K, d) is costly
    s = model(ex.q[idx], m, ex.x[idx])
    return s.masked_fill(~ex.mask[idx], -1e4)


def listwise_loss(scores: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """Softmax cross-entropy of the pool against a target uniform over the gold candidates."""
    target = gold / gold.sum(dim=-1, keepdim=True).clamp_min(1.0)
    return -(target * torch.log_softmax(scores, dim=-1)).sum(dim=-1).mean()


@torch.inference_mode()
def evaluate_examples(model: V1Model, ex: Examples, *, batch: int = 64) -> dict[str, float]:
    """MRR, Hit@1 and Recall@10 over the headline queries (gold outside the pool is a miss)."""
    model.eval()
    mrr, hit1, rec10, count = 0.0, 0.0, 0.0, 0
    for start in range(0, len(ex), batch):
        idx = torch.arange(start, min(start + batch, len(ex)))
        s = _scores(model, ex, idx)
        order = torch.argsort(-s, dim=-1, stable=True)
        g = torch.gather(ex.gold[idx], 1, order)
        keep = ex.headline[idx]
        has = g.sum(-1) > 0
        first = torch.argmax((g > 0).to(torch.int8), dim=-1).float()
        rr = torch.where(has, 1.0 / (first + 1.0), torch.zeros_like(first))
        mrr += float(rr[keep].sum())
        hit1 += float(g[:, 0][keep].sum())
        rec10 += float((g[:, :10].sum(-1) / ex.n_gold[idx].clamp_min(1.0))[keep].sum())
        count += int(keep.sum())
    count = max(count, 1)
    return {"mrr": mrr / count, "hit@1": hit1 / count, "recall@10": rec10 / count}


def _criterion(metrics: Mapping[str, float]) -> float:
    return (metrics["mrr"] + metrics["recall@10"]) / 2.0


def fit(
    train: Examples,
    config: TrainConfig,
    *,
    val: Examples | None = None,
    epochs: int | None = None,
    progress: bool = False,
) -> tuple[V1Model, dict[str, Any]]:
    """Train a fresh model; with ``val``, keep the epoch with the best validation criterion
    and stop after ``patience`` epochs without gain. Returns (model, history)."""
    from tqdm.auto import tqdm

    epochs = epochs if epochs is not None else config.epochs
    keep = train.gold.sum(-1) > 0  # a query with no gold in its pool teaches nothing
    idx_all = torch.nonzero(keep).squeeze(-1)
    det = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            model = V1Model(
                dim=train.memories.shape[1],
                features=config.features(),
                embed=config.embed,
                proj=config.proj,
                hidden=config.hidden,
                dropout=config.dropout,
            )
            vector = [p for n, p in model.named_parameters() if n.split(".")[0] in _VECTOR]
            rest = [p for n, p in model.named_parameters() if n.split(".")[0] not in _VECTOR]
            opt = torch.optim.AdamW(
                [{"params": rest}, {"params": vector, "lr": config.lr * config.embed_lr_scale}],
                lr=config.lr,
                weight_decay=config.weight_decay,
            )
            order_rng = torch.Generator().manual_seed(config.seed)
            history: dict[str, Any] = {"loss": [], "val": []}
            best = (-1.0, 0, None)
            bar = tqdm(range(epochs), desc="train v1", unit="epoch", disable=not progress)
            for epoch in bar:
                model.train()
                perm = idx_all[torch.randperm(len(idx_all), generator=order_rng)]
                total = 0.0
                for s in range(0, len(perm), config.batch_size):
                    idx = perm[s : s + config.batch_size]
                    loss = listwise_loss(_scores(model, train, idx), train.gold[idx])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += loss.detach().item() * len(idx)
                history["loss"].append(total / max(len(perm), 1))
                post = {"loss": f"{history['loss'][-1]:.3f}"}
                if val is not None:
                    metrics = evaluate_examples(model, val)
                    history["val"].append(metrics)
                    post["val_mrr"] = f"{metrics['mrr']:.3f}"
                    crit = _criterion(metrics)
                    if crit > best[0]:
                        state = {k: v.clone() for k, v in model.state_dict().items()}
                        best = (crit, epoch + 1, state)
                    elif epoch + 1 - best[1] >= config.patience:
                        bar.set_postfix(post)
                        break
                bar.set_postfix(post)
            bar.close()
            if val is not None and best[2] is not None:
                model.load_state_dict(best[2])
                history["best_epoch"] = best[1]
            else:
                history["best_epoch"] = epochs
    finally:
        torch.use_deterministic_algorithms(det)
    model.eval()
    return model, history


# -- from an eval Context ------------------------------------------------------------------


def context_namespaces(
    ctx: Any, names: set[str], cache: dict[str, NamespaceFeatures] | None = None
) -> dict[str, NamespaceFeatures]:
    """NamespaceFeatures of the named namespaces of an eval ``Context`` (kept in ``cache``)."""
    cache = {} if cache is None else cache
    for name in sorted(names):
        if name not in cache:  # straight from the store: the retriever's cache holds only 8
            cache[name] = NamespaceFeatures.build(ctx.store.list(name), ctx.store.vectors(name)[1])
    return {name: cache[name] for name in names}


def context_queries(
    ctx: Any, queries: Sequence[Any], namespaces: Mapping[str, NamespaceFeatures]
) -> list[TrainQuery]:
    """TrainQuery objects from an eval ``Context`` (its scored queries and memo'd vectors)."""
    if not queries:
        return []
    headline = set(ctx.task.headline)
    vectors = ctx.encoder.encode([q.text for q in queries])
    out = []
    for q, vec in zip(queries, vectors, strict=True):
        s = ctx.scored[q.qid]
        ns = namespaces[q.namespace]
        out.append(
            TrainQuery(
                namespace=q.namespace,
                terms=ns.query(q.text, vec),
                dense=s.dense,
                bm25=s.bm25,
                gold=frozenset(ns.position[g] for g in q.gold if g in ns.position),
                headline=not headline or q.category in headline,
            )
        )
    return out


def train_v1(
    ctx: Any,
    train_groups: Sequence[str],
    config: TrainConfig,
    *,
    progress: bool = False,
) -> tuple[V1Model, dict[str, Any]]:
    """Train v1 on the queries of ``train_groups`` of an eval Context; returns the model and
    the checkpoint metadata (train groups, validation group, fusion alpha, history, wall time).

    The fusion weight is the one the fusion baseline fits on the same groups (headline
    categories), so the pool the model is trained on is the pool it reranks at eval time.
    """
    from memsieve.eval.harness import FirstStage

    t0 = time.perf_counter()
    groups = sorted(set(train_groups))
    if len(groups) < 2:
        raise ConfigError("v1 training needs at least two train groups (one is held out)")
    queries = [q for q in ctx.task.queries if q.namespace in set(groups)]
    headline = set(ctx.task.headline)
    first = FirstStage("fusion", "turn", config.pool)
    first.fit(ctx, [q for q in queries if not headline or q.category in headline], config.seed)
    alpha = float(first.alpha)
    val_group = random.Random(config.seed).choice(groups)
    namespaces = context_namespaces(ctx, set(groups))
    tq = context_queries(ctx, queries, namespaces)
    kw = {"alpha": alpha, "pool": config.pool, "window": config.window}
    inner = make_examples([t for t in tq if t.namespace != val_group], namespaces, **kw)
    val = make_examples([t for t in tq if t.namespace == val_group], namespaces, **kw)
    log.info("v1 seed %d: %d train / %d val queries, alpha %.2f, val group %s",
             config.seed, len(inner), len(val), alpha, val_group)
    model, history = fit(inner, config, val=val, progress=progress)
    val_metrics = history["val"][history["best_epoch"] - 1] if history["val"] else {}
    if config.refit:
        everything = make_examples(tq, namespaces, **kw)
        model, _ = fit(everything, config, epochs=history["best_epoch"], progress=progress)
    meta = {
        "dataset": ctx.task.name,
        "train_groups": groups,
        "val_group": val_group,
        "seed": config.seed,
        "alpha": alpha,
        "encoder": ctx.encoder.name,
        "pool": config.pool,
        "window": config.window,
        "n_train_queries": len(tq),
        "best_epoch": history["best_epoch"],
        "val": val_metrics,
        "history": {
            "loss": [round(x, 4) for x in history["loss"]],
            "val_mrr": [round(v["mrr"], 4) for v in history["val"]],
            "val_recall@10": [round(v["recall@10"], 4) for v in history["val"]],
        },
        "train": {k: list(v) if isinstance(v, tuple) else v
                  for k, v in dataclasses.asdict(config).items()},
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    return model, meta


__all__ = [
    "ABLATIONS",
    "Examples",
    "TrainConfig",
    "TrainQuery",
    "evaluate_examples",
    "fit",
    "listwise_loss",
    "make_examples",
    "train_v1",
]
