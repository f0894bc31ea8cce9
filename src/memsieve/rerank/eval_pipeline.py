"""The ``v1`` and ``v2`` eval pipelines: the fitted fusion first stage, the v1 reranker over its
pool, and (v2) the cross-encoder over v1's protected top-10.

Each loads the checkpoints of the split seed (``v1-seed{seed}.pt``, ``v2-seed{seed}.pt``),
trained on the train halves of that seed's split of every dataset they name, and refuses one
whose train groups of the evaluated dataset overlap the split's test groups. v1 applies its
gate (``rerank/gate.py``) as the product stage does: a pool the gate turns away keeps the
first stage's order, one in the zone at its edge gets the blend, and v2 leaves both alone;
``trust`` records each query's weight on v1 (1, the blend's, or 0), ``nearest`` the gate's
nearest training kind (v2 reads the pairs as that kind's ``cross.READING`` says).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsieve.errors import ConfigError
from memsieve.eval.datasets import EvalQuery, split
from memsieve.eval.harness import Context, FirstStage, Ranking
from memsieve.rerank.cross import PROTECTED, CrossEncoder
from memsieve.rerank.features import NamespaceFeatures, PoolFeatures, pool_features
from memsieve.rerank.gate import PoolGate, blend
from memsieve.rerank.learned import V1Model, gate_of, load_checkpoint, weights_dir
from memsieve.rerank.train import context_namespaces, trained_groups


class V1Pipeline(FirstStage):
    """Fusion first stage (alpha fitted on the train half) + v1 rerank of the top ``pool``."""

    def __init__(
        self,
        pool: int = 500,
        *,
        weights: str | Path | None = None,
        checkpoint: str | Path | None = None,
        gate: bool = True,
    ) -> None:
        super().__init__("fusion", "turn", pool)
        self.weights = Path(weights) if weights is not None else weights_dir()
        self.fixed = Path(checkpoint) if checkpoint is not None else None
        self.use_gate = gate
        self.model: V1Model | None = None
        self.gate: PoolGate | None = None
        self.trust: dict[str, float] = {}  # qid -> v1's weight (1, the blend's, or 0)
        self.nearest: dict[str, str] = {}  # qid -> the gate's nearest training kind
        self.config: dict = {}
        self._namespaces: dict[str, NamespaceFeatures] = {}
        self._texts: dict[str, dict[str, str]] = {}

    def checkpoint(self, seed: int, stage: str = "v1") -> Path:
        """The seed's own checkpoint (it saw only train halves of that seed's splits)."""
        return self.weights / f"{stage}-seed{seed}.pt"

    def fit(self, ctx: Context, train: Sequence[EvalQuery], seed: int) -> None:
        """Fit alpha as the fusion baseline does, then load the checkpoint and check that it
        never saw a test group (a ``checkpoint`` given to the constructor is for training
        on top of v1, and is not checked against a split)."""
        super().fit(ctx, train, seed)
        path = self.fixed or self.checkpoint(seed)
        self.model, self.config = load_checkpoint(path)
        self.gate = gate_of(self.config) if self.use_gate else None
        if self.fixed is None:
            refuse_overlap(path, self.config, ctx, seed)
        if self.config.get("encoder") not in (None, ctx.encoder.name):
            raise ConfigError(
                f"{path} was trained on {self.config['encoder']!r} vectors, "
                f"the eval uses {ctx.encoder.name!r}"
            )

    def rank(self, ctx: Context, q: EvalQuery) -> Ranking:
        return self.rank_scored(ctx, q)[0]

    def rank_scored(self, ctx: Context, q: EvalQuery) -> tuple[Ranking, np.ndarray]:
        """The v1 ranking and its scores, in ranked order."""
        first = super().rank(ctx, q)
        # built once per namespace and not timed, like the first stage's index and vectors
        context_namespaces(ctx, {q.namespace}, self._namespaces)
        t0 = time.perf_counter()
        fused, feats = self.features(ctx, q, first)
        weight = 1.0
        if self.gate is not None:
            weight, _, self.nearest[q.qid] = self.gate.weigh(feats.x)
        self.trust[q.qid] = weight
        if weight == 0:
            scores = fused  # the first stage's order, already ranked
        else:
            scores = blend(self.model.score_pool(feats.q, feats.m, feats.x), weight)
        order = np.argsort(-scores, kind="stable")
        ids = [first.ids[i] for i in order]
        ms = dict(first.ms)
        ms["rerank_v1"] = (time.perf_counter() - t0) * 1000.0
        return Ranking(ids, ms), scores[order]

    def features(
        self, ctx: Context, q: EvalQuery, first: Ranking
    ) -> tuple[np.ndarray, PoolFeatures]:
        """The fused scores of the first stage's pool (in its order) and v1's features of it."""
        if self.model is None:
            raise ConfigError("V1Pipeline.rank called before fit")
        ns = context_namespaces(ctx, {q.namespace}, self._namespaces)[q.namespace]
        s = ctx.scored[q.qid]
        top = np.array([ns.position[i] for i in first.ids], dtype=np.int64)
        fused = self.key(ctx, s, self.alpha)[1][top]
        qvec = ctx.encoder.encode([q.text])[0]  # memo'd: the first stage encoded it
        feats = pool_features(ns.query(q.text, qvec), ns, top, s.dense[top], s.bm25[top], fused,
                              window=int(self.config.get("window", 3)))
        return fused, feats

    def namespace_texts(self, ctx: Context, namespace: str) -> dict[str, str]:
        """Memory id -> text of a namespace (built once per namespace)."""
        if namespace not in self._texts:
            self._texts[namespace] = {m.id: m.text for m in ctx.store.list(namespace)}
        return self._texts[namespace]


def refuse_overlap(path: Path, config: dict, ctx: Context, seed: int) -> None:
    """ConfigError when a checkpoint's train groups of the evaluated dataset (or of the one
    its groups are built on) overlap split ``seed``'s test half."""
    _, test = split(ctx.task.groups, seed)
    seen = {g for name in (ctx.task.name, ctx.task.based_on) if name
            for g in trained_groups(config, name)}
    overlap = sorted(seen & set(test))
    if overlap:
        raise ConfigError(
            f"{path} was trained on test group(s) {overlap} of split seed {seed}; "
            f"train it on this split's train half (memsieve train ... --seed {seed})"
        )


class V2Pipeline(V1Pipeline):
    """v1, then the v2 cross-encoder over v1's top ``PROTECTED`` (the rest stays in v1 order)."""

    def __init__(self, pool: int = 500, *, weights: str | Path | None = None,
                 quantize: bool = True) -> None:
        super().__init__(pool, weights=weights)
        self.quantize = quantize
        self.cross: CrossEncoder | None = None

    def fit(self, ctx: Context, train: Sequence[EvalQuery], seed: int) -> None:
        super().fit(ctx, train, seed)
        path = self.checkpoint(seed, "v2")
        self.cross = CrossEncoder.load(path)
        refuse_overlap(path, self.cross.config, ctx, seed)

    def rank(self, ctx: Context, q: EvalQuery) -> Ranking:
        if self.cross is None:
            raise ConfigError("V2Pipeline.rank called before fit")
        first, v1 = self.rank_scored(ctx, q)
        if self.trust.get(q.qid, 1.0) < 1:  # first stage's order or the blend: not protected
            return first
        texts = self.namespace_texts(ctx, q.namespace)
        head = first.ids[:PROTECTED]
        t0 = time.perf_counter()
        order = self.cross.reorder(q.text, [texts[i] for i in head], v1[: len(head)],
                                   quantize=self.quantize, kind=self.nearest.get(q.qid))[0]
        ids = [head[i] for i in order] + first.ids[PROTECTED:]
        ms = dict(first.ms)
        ms["rerank_v2"] = (time.perf_counter() - t0) * 1000.0
        return Ranking(ids, ms)
