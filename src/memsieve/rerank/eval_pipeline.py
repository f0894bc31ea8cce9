"""The ``v1`` eval pipeline: the fitted fusion first stage, then the v1 reranker over its pool.

On LoCoMo it loads the checkpoint trained on the split seed's train half
(``v1-seed{seed}.pt``); on any other dataset the default checkpoint (trained on LoCoMo only).
Either way it refuses a checkpoint whose train groups overlap the split's test groups.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsieve.errors import ConfigError
from memsieve.eval.datasets import EvalQuery, split
from memsieve.eval.harness import Context, FirstStage, Ranking
from memsieve.rerank.features import NamespaceFeatures, pool_features
from memsieve.rerank.learned import V1Model, load_checkpoint, weights_dir
from memsieve.rerank.train import context_namespaces


class V1Pipeline(FirstStage):
    """Fusion first stage (alpha fitted on the train half) + v1 rerank of the top ``pool``."""

    def __init__(self, pool: int = 500, *, weights: str | Path | None = None) -> None:
        super().__init__("fusion", "turn", pool)
        self.weights = Path(weights) if weights is not None else weights_dir()
        self.model: V1Model | None = None
        self.config: dict = {}
        self._namespaces: dict[str, NamespaceFeatures] = {}

    def checkpoint(self, dataset: str, seed: int) -> Path:
        """LoCoMo: the seed's own checkpoint; other datasets: the default (LoCoMo-only) one."""
        name = f"v1-seed{seed}.pt" if dataset == "locomo" else "v1-default.pt"
        return self.weights / name

    def fit(self, ctx: Context, train: Sequence[EvalQuery], seed: int) -> None:
        """Fit alpha as the fusion baseline does, then load the checkpoint and check that it
        never saw a test group."""
        super().fit(ctx, train, seed)
        path = self.checkpoint(ctx.task.name, seed)
        self.model, self.config = load_checkpoint(path)
        _, test = split(ctx.task.groups, seed)
        seen = set(self.config.get("train_groups", []))
        overlap = sorted(seen & set(test))
        if overlap:
            raise ConfigError(
                f"{path} was trained on test group(s) {overlap} of split seed {seed}; "
                "train it on this split's train half (memsieve train v1 --seed S)"
            )
        if self.config.get("encoder") not in (None, ctx.encoder.name):
            raise ConfigError(
                f"{path} was trained on {self.config['encoder']!r} vectors, "
                f"the eval uses {ctx.encoder.name!r}"
            )

    def rank(self, ctx: Context, q: EvalQuery) -> Ranking:
        if self.model is None:
            raise ConfigError("V1Pipeline.rank called before fit")
        # built once per namespace and not timed, like the first stage's index and vectors
        ns = context_namespaces(ctx, {q.namespace}, self._namespaces)[q.namespace]
        first = super().rank(ctx, q)
        s = ctx.scored[q.qid]
        t0 = time.perf_counter()
        top = np.array([ns.position[i] for i in first.ids], dtype=np.int64)
        fused = self.key(ctx, s, self.alpha)[1]
        qvec = ctx.encoder.encode([q.text])[0]  # memo'd: the first stage encoded it
        feats = pool_features(
            ns.query(q.text, qvec), ns, top, s.dense[top], s.bm25[top], fused[top],
            window=int(self.config.get("window", 3)),
        )
        scores = self.model.score_pool(feats.q, feats.m, feats.x)
        order = np.argsort(-scores, kind="stable")
        ids = [first.ids[i] for i in order]
        ms = dict(first.ms)
        ms["rerank_v1"] = (time.perf_counter() - t0) * 1000.0
        return Ranking(ids, ms)
