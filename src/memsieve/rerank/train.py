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

Several kinds of memory (issue 12): one ``Part`` per dataset (LoCoMo, RHELM, LongMemEval,
Memora), each with the train half of the split seed (or every group, for the released
default). A model trained on LoCoMo alone ranked every other dataset below the first stage;
trained on the four it ranks each one's test half above it. Each dataset's pools are cut with
its own fitted fusion weight, its queries weigh ``1 / sqrt(n)`` in the loss (normalised), and
the checkpoint records the groups of each dataset it saw, so the eval refuses it for any
dataset whose test half it saw.

Protocol: train on train halves only. ``VAL_SHARE`` of each dataset's train groups, drawn with
``random.Random(seed)``, are held out to pick the number of epochs (early stopping on the mean
over datasets of MRR + Recall@10, headline categories); the model is then refit from the same
initialisation on every train group for that many epochs, and the gate (``rerank/gate.py``) is
fitted on the pools of every train query. Deterministic given the seed: seeded init and dropout
(inside ``torch.random.fork_rng``, so the caller's RNG is untouched), a seeded data order,
deterministic torch algorithms, and the gate's bank subsample seeded.
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
    weight: torch.Tensor  # (Q,) the query's weight in the loss

    def __len__(self) -> int:
        return len(self.q)


def concat(parts: Sequence[Examples]) -> Examples:
    """One Examples of several (datasets): pools padded to the longest, rows re-based."""
    parts = [p for p in parts if len(p)]
    if not parts:
        raise ConfigError("no training queries")
    k = max(p.x.shape[1] for p in parts)

    def pad(t: torch.Tensor, value: float | bool = 0) -> torch.Tensor:
        extra = k - t.shape[1]
        if not extra:
            return t
        return torch.cat([t, torch.full((t.shape[0], extra, *t.shape[2:]), value,
                                        dtype=t.dtype)], dim=1)

    offsets = np.cumsum([0] + [len(p.memories) for p in parts[:-1]])
    return Examples(
        q=torch.cat([p.q for p in parts]),
        x=torch.cat([pad(p.x) for p in parts]),
        rows=torch.cat([pad(p.rows + int(o)) for p, o in zip(parts, offsets, strict=True)]),
        memories=torch.cat([p.memories for p in parts]),
        gold=torch.cat([pad(p.gold) for p in parts]),
        mask=torch.cat([pad(p.mask, False) for p in parts]),
        n_gold=torch.cat([p.n_gold for p in parts]),
        headline=torch.cat([p.headline for p in parts]),
        weight=torch.cat([p.weight for p in parts]),
    )


def make_examples(
    queries: Sequence[TrainQuery],
    namespaces: Mapping[str, NamespaceFeatures],
    *,
    alpha: float,
    pool: int,
    window: int,
    weight: float = 1.0,
) -> Examples:
    """Fuse, cut the pool (as the eval pipeline and the product do) and compute features;
    every query gets loss weight ``weight``."""
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
        weight=torch.full((n,), float(weight)),
    )


def _scores(model: V1Model, ex: Examples, idx: torch.Tensor) -> torch.Tensor:
    m = ex.memories[ex.rows[idx]] if model.embed != "none" else None  # (B, K, d) is costly
    s = model(ex.q[idx], m, ex.x[idx])
    return s.masked_fill(~ex.mask[idx], -1e4)


def listwise_loss(scores: torch.Tensor, gold: torch.Tensor,
                  weight: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax cross-entropy of the pool against a target uniform over the gold candidates
    (a weighted mean over queries when ``weight`` is given)."""
    target = gold / gold.sum(dim=-1, keepdim=True).clamp_min(1.0)
    loss = -(target * torch.log_softmax(scores, dim=-1)).sum(dim=-1)
    if weight is None:
        return loss.mean()
    return (loss * weight).sum() / weight.sum().clamp_min(1e-9)


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


def validate(model: V1Model, val: Mapping[str, Examples]) -> dict[str, Any]:
    """Metrics of each validation set and their ``criterion``: the mean over the sets of
    (MRR + Recall@10) / 2, so every dataset counts the same however many queries it has."""
    per = {name: evaluate_examples(model, ex) for name, ex in val.items() if len(ex)}
    crit = float(np.mean([_criterion(m) for m in per.values()])) if per else 0.0
    mean = {k: float(np.mean([m[k] for m in per.values()])) if per else 0.0
            for k in ("mrr", "hit@1", "recall@10")}
    return {**mean, "criterion": crit, "per_dataset": per}


def fit(
    train: Examples,
    config: TrainConfig,
    *,
    val: Examples | Mapping[str, Examples] | None = None,
    epochs: int | None = None,
    progress: bool = False,
) -> tuple[V1Model, dict[str, Any]]:
    """Train a fresh model; with ``val`` (one set, or one per dataset), keep the epoch with the
    best validation criterion and stop after ``patience`` epochs without gain.
    Returns (model, history)."""
    if isinstance(val, Examples):
        val = {"val": val}
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
                    loss = listwise_loss(_scores(model, train, idx), train.gold[idx],
                                         train.weight[idx])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += loss.detach().item() * len(idx)
                history["loss"].append(total / max(len(perm), 1))
                post = {"loss": f"{history['loss'][-1]:.3f}"}
                if val is not None:
                    metrics = validate(model, val)
                    history["val"].append(metrics)
                    post["val_mrr"] = f"{metrics['mrr']:.3f}"
                    crit = metrics["criterion"]
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


@dataclasses.dataclass(frozen=True)
class Part:
    """One dataset's share of a training run: its eval ``Context`` and the groups to train on."""

    ctx: Any
    groups: tuple[str, ...]

    @property
    def name(self) -> str:
        return str(self.ctx.task.name)


VAL_SHARE = 0.2  # of each dataset's train groups, held out to pick the epoch


def _dataset_examples(part: Part, config: TrainConfig) -> dict[str, Any]:
    """A dataset's train and validation examples, with its fitted fusion weight: the one the
    fusion baseline fits on the same groups (headline categories), so the pool the model is
    trained on is the pool it reranks at eval time."""
    from memsieve.eval.harness import FirstStage

    ctx, groups = part.ctx, sorted(set(part.groups))
    if len(groups) < 2:
        raise ConfigError(f"{part.name}: v1 training needs at least two train groups "
                          "(some are held out)")
    queries = [q for q in ctx.task.queries if q.namespace in set(groups)]
    headline = set(ctx.task.headline)
    first = FirstStage("fusion", "turn", config.pool)
    first.fit(ctx, [q for q in queries if not headline or q.category in headline], config.seed)
    n_val = max(1, round(VAL_SHARE * len(groups)))
    val_groups = sorted(random.Random(config.seed).sample(groups, n_val))
    namespaces = context_namespaces(ctx, set(groups))
    tq = context_queries(ctx, queries, namespaces)
    kw = {"alpha": float(first.alpha), "pool": config.pool, "window": config.window}
    return {
        "alpha": float(first.alpha), "groups": groups, "val_groups": val_groups, "kw": kw,
        "namespaces": namespaces, "queries": tq,
        "inner": [t for t in tq if t.namespace not in val_groups],
        "val": [t for t in tq if t.namespace in val_groups],
    }


def train_v1(
    parts: Sequence[Part],
    config: TrainConfig,
    *,
    progress: bool = False,
) -> tuple[V1Model, dict[str, Any]]:
    """Train v1 on the queries of each part's groups (one part per dataset); returns the model
    and the checkpoint metadata (train groups per dataset, validation groups, fusion weights,
    history, the gate, wall time).

    Each dataset's queries weigh ``1 / sqrt(n)`` in the loss (normalised to mean 1), so a
    large dataset leads without drowning a small one; the epoch is chosen on held-out groups
    of every dataset (``VAL_SHARE`` of each), each dataset counting the same, and the model is
    then refit on every train group for that many epochs.
    """
    from memsieve.rerank.gate import PoolGate, summarise

    t0 = time.perf_counter()
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise ConfigError(f"one part per dataset, got {names}")
    data = {p.name: _dataset_examples(p, config) for p in parts}
    weight = dataset_weights({n: len(d["queries"]) for n, d in data.items()})
    inner, val = split_examples(data, weight)
    log.info("v1 seed %d: %d train / %d val queries over %s", config.seed, len(inner),
             sum(len(v) for v in val.values()), ", ".join(data))
    model, history = fit(inner, config, val=val, progress=progress)
    val_metrics = history["val"][history["best_epoch"] - 1] if history["val"] else {}
    everything = weighted_examples(data, weight, "queries")
    if config.refit:
        model, _ = fit(everything, config, epochs=history["best_epoch"], progress=progress)
    kinds = [n for n, d in data.items() for _ in d["queries"]]  # concat keeps this order
    gate = PoolGate.fit(np.stack([summarise(everything.x[i][everything.mask[i]].numpy())
                                  for i in range(len(everything))]), kinds, seed=config.seed)
    meta = {
        "datasets": list(data),
        "train_groups": {n: d["groups"] for n, d in data.items()},
        "val_groups": {n: d["val_groups"] for n, d in data.items()},
        "alpha": {n: d["alpha"] for n, d in data.items()},
        "loss_weight": {n: round(w, 4) for n, w in weight.items()},
        "seed": config.seed,
        "encoder": parts[0].ctx.encoder.name,
        "pool": config.pool,
        "window": config.window,
        "n_train_queries": {n: len(d["queries"]) for n, d in data.items()},
        "best_epoch": history["best_epoch"],
        "val": val_metrics,
        "history": {
            "loss": [round(x, 4) for x in history["loss"]],
            "val_criterion": [round(v["criterion"], 4) for v in history["val"]],
        },
        "train": {k: list(v) if isinstance(v, tuple) else v
                  for k, v in dataclasses.asdict(config).items()},
        "gate": gate.to_dict(),
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    return model, meta


def weighted_examples(data: Mapping[str, Mapping[str, Any]], weight: Mapping[str, float],
                      key: str) -> Examples:
    """One ``Examples`` of every dataset's ``key`` queries ("inner", "queries"), each query
    weighing its dataset's ``weight`` in the loss."""
    return concat([make_examples(d[key], d["namespaces"], weight=weight[n], **d["kw"])
                   for n, d in data.items() if d[key]])


def split_examples(
    data: Mapping[str, Mapping[str, Any]], weight: Mapping[str, float],
) -> tuple[Examples, dict[str, Examples]]:
    """(the weighted training examples without the held-out groups, one unweighted validation
    set per dataset), from each dataset's ``_dataset_examples``."""
    val = {n: make_examples(d["val"], d["namespaces"], **d["kw"])
           for n, d in data.items() if d["val"]}
    return weighted_examples(data, weight, "inner"), val


def dataset_weights(counts: Mapping[str, int]) -> dict[str, float]:
    """Loss weight of one query of each dataset: ``1 / sqrt(n)``, normalised so the mean over
    all queries is 1 (a large dataset leads without drowning a small one)."""
    total = sum(counts.values())
    norm = total / max(sum(n ** 0.5 for n in counts.values()), 1e-9)
    return {name: norm / max(n, 1) ** 0.5 for name, n in counts.items()}


def trained_groups(config: Mapping[str, Any], dataset: str) -> list[str]:
    """The groups of ``dataset`` a checkpoint was trained on (none when it never saw it).
    Reads both layouts: ``{dataset: [groups]}`` and a single dataset's list (the v2 and the
    older v1 checkpoints, with ``dataset`` naming it; LoCoMo when absent)."""
    groups = config.get("train_groups", [])
    if isinstance(groups, Mapping):
        return list(groups.get(dataset, []))
    return list(groups) if config.get("dataset", "locomo") == dataset else []


__all__ = [
    "ABLATIONS",
    "Examples",
    "Part",
    "TrainConfig",
    "TrainQuery",
    "evaluate_examples",
    "fit",
    "listwise_loss",
    "make_examples",
    "concat",
    "dataset_weights",
    "split_examples",
    "train_v1",
    "trained_groups",
    "weighted_examples",
]
