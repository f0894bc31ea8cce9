"""The v1 gate: apply the learned reranker only to pools that look like the pools it was
trained on, and keep the first stage's order otherwise.

A reranker trained on some kinds of memory can rank another kind worse than the training-free
first stage it starts from (RESULTS.md, leave-one-dataset-out). The gate is a nearest-neighbour
novelty test (as in deep k-NN out-of-distribution detection): a pool is summarised by the mean
of its head's feature rows (the same features v1 scores, so query shape, memory length, score
spread and lexical overlap all enter), standardised with the training summaries' mean and
spread, and its distance to the ``k``-th nearest training summary of each training dataset is
compared with that dataset's threshold: the ``quantile`` of the same distance over the
dataset's own summaries (each left out of its own neighbours). A pool close enough to any one
dataset passes. Everything is fitted on training pools only; nothing is chosen on an
evaluation set. Saved inside the v1 checkpoint (at most ``MAX_BANK`` summaries, fp16: ~120 KB).

Between "like the training pools" and "unlike them" lies a zone where v1 is trusted only in
part (issue 12: a reranker that never saw RHELM or Memora let most of their pools through the
99% gate and ranked them below fusion). A pool within the ``TRUST`` quantile of its nearest
kind's own distances gets v1's order; one beyond it but inside the gate gets a reciprocal-rank
blend of v1's and the first stage's orders with weight ``BLEND`` on v1; one outside keeps the
first stage's order. The inner thresholds are derived from the stored banks when the gate is
built, so checkpoints trained before the zone existed get it too. ``TRUST`` and ``BLEND`` were
chosen on train halves only (RESULTS.md, "A trust zone").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memsieve.rerank.features import FEATURES

HEAD = 20  # pool rows (best first-stage ranks) whose mean summarises a pool
K = 10  # neighbours
QUANTILE = 0.99  # share of training pools the gate lets through
MAX_BANK = 2000  # training summaries kept (an even subsample beyond this)
TRUST = 0.90  # share of a kind's training pools inside which v1's order is used as is
BLEND = 0.5  # v1's weight in the blend zone (between TRUST and QUANTILE)
RRF_K = 20  # reciprocal-rank constant of the blend
_RANK = FEATURES.index("rank_fused")


def summarise(x: np.ndarray, head: int = HEAD) -> np.ndarray:
    """(F,) mean feature row of the ``head`` candidates with the best first-stage rank."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return np.zeros(x.shape[-1])
    top = np.argsort(x[:, _RANK], kind="stable")[:head]
    return x[top].mean(axis=0)


class PoolGate:
    """``accepts(x)``: is a pool's feature matrix close enough to the training pools of some
    kind of memory the model was trained on?

    One bank of training summaries per training dataset, each with its own threshold, so a
    small dataset's pools are judged against their own neighbours and not against the large
    ones' density; the standardisation is shared.
    """

    def __init__(self, banks: Mapping[str, np.ndarray], thresholds: Mapping[str, float],
                 ks: Mapping[str, int], mean: np.ndarray, scale: np.ndarray, *,
                 head: int = HEAD) -> None:
        self.banks = {n: np.asarray(b, dtype=np.float32) for n, b in banks.items()}
        self.thresholds = {n: float(t) for n, t in thresholds.items()}
        self.ks = {n: int(k) for n, k in ks.items()}
        self.mean, self.scale = np.asarray(mean, float), np.asarray(scale, float)
        self.head = int(head)
        self._own = {n: _kth(b, b, self.ks[n] + 1) for n, b in self.banks.items()}
        self.inner = self.inner_at(TRUST)

    def inner_at(self, trust: float) -> dict[str, float]:
        """Per dataset: the ``trust`` quantile of its bank's own k-th-neighbour distances (as
        ``fit`` computes the threshold), as a share of that threshold."""
        return {n: float(np.quantile(d, trust)) / max(self.thresholds[n], 1e-9)
                for n, d in self._own.items()}

    @classmethod
    def fit(cls, summaries: np.ndarray, kinds: Sequence[str], *, k: int = K,
            quantile: float = QUANTILE, seed: int = 0) -> PoolGate:
        """Fit on the (n, F) summaries of the training pools and the dataset of each."""
        s = np.asarray(summaries, dtype=np.float64)
        kinds = np.asarray(kinds)
        mean = s.mean(axis=0)
        scale = np.maximum(s.std(axis=0), 1e-3)
        z = ((s - mean) / scale).astype(np.float32)
        names = sorted(set(kinds.tolist()))
        cap = max(MAX_BANK // max(len(names), 1), 2)
        rng = np.random.default_rng(seed)
        banks, thresholds, ks = {}, {}, {}
        for name in names:
            bank = z[kinds == name]
            if len(bank) > cap:
                bank = bank[np.sort(rng.choice(len(bank), cap, replace=False))]
            if len(bank) < 2:
                continue
            ks[name] = max(1, min(k, len(bank) - 1))
            d = _kth(bank, bank, ks[name] + 1)  # +1: each summary is its own nearest
            banks[name], thresholds[name] = bank, float(np.quantile(d, quantile))
        return cls(banks, thresholds, ks, mean, scale)

    def distance(self, x: np.ndarray) -> tuple[float, str]:
        """(ratio, dataset): the pool's distance to its k-th nearest training pool of the
        closest dataset, as a multiple of that dataset's threshold (≤ 1: accepted)."""
        return self.weigh(x)[1:]

    def ratios(self, x: np.ndarray) -> dict[str, float]:
        """Per training dataset: the pool's k-th-neighbour distance / that dataset's threshold."""
        z = ((summarise(x, self.head) - self.mean) / self.scale).astype(np.float32)[None, :]
        return {n: float(_kth(z, b, self.ks[n])[0]) / max(self.thresholds[n], 1e-9)
                for n, b in self.banks.items()}

    def accepts(self, x: np.ndarray) -> bool:
        return self.distance(x)[0] <= 1.0

    def weigh(self, x: np.ndarray) -> tuple[float, float, str]:
        """(weight, ratio, dataset): v1's weight for this pool (1: trusted, ``BLEND``: the
        zone between ``TRUST`` and the gate, 0: first stage only) and ``distance(x)``."""
        ratios = self.ratios(x)
        name = min(ratios, key=ratios.__getitem__)
        return zone_weight(ratios, self.inner, BLEND), ratios[name], name

    def to_dict(self) -> dict[str, Any]:
        """Arrays and numbers (the checkpoint stores the arrays as tensors, the banks fp16)."""
        return {"banks": {n: b.astype(np.float16) for n, b in self.banks.items()},
                "thresholds": self.thresholds, "ks": self.ks, "mean": self.mean,
                "scale": self.scale, "head": self.head}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PoolGate:
        return cls({n: np.asarray(b, dtype=np.float32) for n, b in d["banks"].items()},
                   d["thresholds"], d["ks"], np.asarray(d["mean"], float),
                   np.asarray(d["scale"], float), head=int(d["head"]))


def zone_weight(ratios: Mapping[str, float], inner: Mapping[str, float], weight: float) -> float:
    """v1's weight for a pool with these per-dataset ratios: 1 inside some dataset's trusted
    zone (``inner``), ``weight`` inside the gate only, 0 outside."""
    if any(r <= inner[n] for n, r in ratios.items()):
        return 1.0
    return weight if min(ratios.values()) <= 1.0 else 0.0


def zone_shares(weights: Sequence[float]) -> dict[str, float]:
    """Shares of pools by v1's weight: ``trusted`` (1: its order), ``blended`` (the zone),
    ``first_stage`` (0: the first stage's order); all 0 for no pools."""
    w = np.asarray(weights, dtype=np.float64)
    if not len(w):
        return {"trusted": 0.0, "blended": 0.0, "first_stage": 0.0}
    return {"trusted": float(np.mean(w == 1.0)), "blended": float(np.mean((w > 0) & (w < 1))),
            "first_stage": float(np.mean(w == 0.0))}


def blend(v1: np.ndarray, weight: float, k: int = RRF_K) -> np.ndarray:
    """Ranking key over a pool given in first-stage order: v1's scores at weight 1, else
    ``weight / (k + v1 rank) + (1 - weight) / (k + first-stage rank)`` (ties: first stage)."""
    v1 = np.asarray(v1, dtype=np.float64)
    if weight >= 1.0:
        return v1
    order = np.argsort(-v1, kind="stable")
    v1_rank = np.empty(len(v1))
    v1_rank[order] = np.arange(1, len(v1) + 1)
    return weight / (k + v1_rank) + (1.0 - weight) / (k + np.arange(1, len(v1) + 1))


def _kth(a: np.ndarray, bank: np.ndarray, k: int) -> np.ndarray:
    """Euclidean distance of each row of ``a`` to its ``k``-th nearest row of ``bank``."""
    d2 = (a * a).sum(1)[:, None] - 2.0 * a @ bank.T + (bank * bank).sum(1)[None, :]
    k = min(k, bank.shape[0])
    return np.sqrt(np.maximum(np.partition(d2, k - 1, axis=1)[:, k - 1], 0.0))


__all__ = ["BLEND", "HEAD", "K", "QUANTILE", "TRUST", "PoolGate", "blend", "summarise",
           "zone_shares", "zone_weight"]
