"""The v1 learned reranker (pipeline step 3): a small torch model over cheap pool features,
its checkpoint format, and the ``LearnedReranker`` stage.

The model (ConvMemory v1, retrieval-reranking-abstracts, second abstract, without the teacher)
scores each candidate from the scalar features of ``rerank/features.py`` through a two-layer
MLP plus a linear path; an optional vector branch adds learned interactions of the query and
memory vectors (``[q, m, q*m, |q-m|]`` or a compressed form, see ``V1Model``).
The final order is the v1 score; its top ``PROTECTED`` candidates are the protected set that a
later v2 stage may reorder but not change.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from memsieve.embed import Encoder
from memsieve.errors import ConfigError, NotFound, StoreError
from memsieve.rerank.features import FEATURES, NamespaceFeatures, pool_features
from memsieve.rerank.gate import PoolGate, blend
from memsieve.retrieve.index import IndexCache
from memsieve.trace import Trace
from memsieve.types import Candidate, Query

log = logging.getLogger(__name__)

VERSION = 1
PROTECTED = 10


EMBED_MODES = ("interactions", "full", "none")


class V1Model(nn.Module):
    """Scores a pool: ``forward(q (B, d), m (B, k, d), x (B, k, F)) -> (B, k)``.

    ``x`` always holds every column of ``FEATURES``; ``features`` picks the ones this model
    uses (an ablation drops some). ``embed`` says how the vectors enter:

    - ``none`` (default): scalar features only; the vectors enter through the scalar
      interactions of ``features.py`` (q.m, q.m of the neighbours, m.centroid of the pool head);
    - ``interactions``: the compressed interactions ``W1 (q*m)`` and ``W2 |q-m|``,
      each ``proj`` learned weighted similarities; no term sees q or m alone;
    - ``full``: a shared projection P and ``[Pq, Pm, Pq*Pm, |Pq-Pm|]``.

    Trained on LoCoMo's few conversations both vector branches overfit within a few epochs
    and score below the scalar features alone on validation (``rerank/train.py``), hence none.
    """

    def __init__(
        self,
        *,
        dim: int,
        features: Sequence[str] = FEATURES,
        embed: str = "none",
        proj: int = 16,
        hidden: int = 256,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        unknown = sorted(set(features) - set(FEATURES))
        if unknown:
            raise ConfigError(f"unknown v1 features {unknown}; known: {list(FEATURES)}")
        if embed not in EMBED_MODES:
            raise ConfigError(f"unknown embed mode {embed!r}; choose one of {list(EMBED_MODES)}")
        self.dim, self.features, self.embed, self.proj_dim = dim, tuple(features), embed, proj
        self.register_buffer(
            "columns", torch.tensor([FEATURES.index(f) for f in self.features], dtype=torch.long)
        )
        width = len(self.features)
        if embed == "interactions":
            self.prod = nn.Linear(dim, proj)
            self.diff = nn.Linear(dim, proj)
            width += 2 * proj
        elif embed == "full":
            self.proj = nn.Linear(dim, proj, bias=False)
            width += 4 * proj
        self.mlp = nn.Sequential(
            nn.Linear(width, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden // 2),
            nn.GELU(),
            nn.Linear(hidden // 2, 1),
        )
        self.linear = nn.Linear(len(self.features), 1)

    def forward(self, q: torch.Tensor, m: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor:
        x = x.index_select(-1, self.columns)
        parts = [x]
        if self.embed != "none" and m is None:
            raise ValueError(f"embed={self.embed!r} needs the memory vectors m")
        if self.embed == "interactions":
            qe = q.unsqueeze(-2)
            # unit-norm vectors: q*m sums to the cosine, so scale by d (|q-m| by sqrt d) to
            # give the entries unit scale
            parts += [self.prod(qe * m * self.dim), self.diff((qe - m).abs() * math.sqrt(self.dim))]
        elif self.embed == "full":
            scale = math.sqrt(self.dim)
            pm = self.proj(m * scale)
            pq = self.proj(q * scale).unsqueeze(-2).expand_as(pm)
            parts += [pq, pm, pq * pm, (pq - pm).abs()]
        h = torch.cat(parts, dim=-1)
        return self.mlp(h).squeeze(-1) + self.linear(x).squeeze(-1)

    def config(self) -> dict[str, Any]:
        """The constructor's arguments (saved in the checkpoint)."""
        return {
            "dim": self.dim,
            "features": list(self.features),
            "embed": self.embed,
            "proj": self.proj_dim,
            "hidden": self.mlp[0].out_features,
            "dropout": self.mlp[2].p,
        }

    @torch.inference_mode()
    def score_pool(self, q: np.ndarray, m: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Scores of one pool (numpy in, numpy out), in eval mode, on one thread.

        One pool is a few hundred rows through a small MLP: intra-op threads buy nothing and,
        when another process holds a core, their barriers cost 10-40x (measured: 0.9 ms on one
        thread vs 27 ms on two for a 500-pool on the 2-core machine). The thread count is
        restored afterwards.
        """
        self.eval()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            out = self(
                torch.from_numpy(np.ascontiguousarray(q, dtype=np.float32)).unsqueeze(0),
                torch.from_numpy(np.ascontiguousarray(m, dtype=np.float32)).unsqueeze(0),
                torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).unsqueeze(0),
            )
        finally:
            torch.set_num_threads(threads)
        return out[0].numpy().astype(np.float64)


# -- checkpoints ---------------------------------------------------------------------------


def weights_dir() -> Path:
    """The folder of the packaged v1 checkpoints (``memsieve/rerank/weights``)."""
    return Path(str(resources.files("memsieve.rerank"))) / "weights"


def default_checkpoint() -> Path:
    """The checkpoint the product uses: trained on all LoCoMo conversations."""
    return weights_dir() / "v1-default.pt"


def save_checkpoint(path: str | Path, model: V1Model, meta: Mapping[str, Any]) -> Path:
    """Write ``model`` as an fp16 state_dict plus its config and ``meta`` (train groups, seed,
    encoder, ...) in one file; written to a temp file first so a crash leaves no half file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        k: v.detach().to(torch.float16) if v.is_floating_point() else v.detach()
        for k, v in model.state_dict().items()
    }
    config = _tensors({"version": VERSION, "model": model.config(), **dict(meta)})
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save({"config": config, "state_dict": state}, tmp)
    tmp.replace(path)
    return path


def _tensors(obj: Any) -> Any:
    """numpy arrays (the gate's) as tensors, so ``weights_only`` loading can read them."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, Mapping):
        return {k: _tensors(v) for k, v in obj.items()}
    return obj


def gate_of(config: Mapping[str, Any]) -> PoolGate | None:
    """The checkpoint's pool gate (None for a checkpoint saved without one)."""
    return PoolGate.from_dict(config["gate"]) if config.get("gate") else None


def load_checkpoint(path: str | Path) -> tuple[V1Model, dict[str, Any]]:
    """Load a v1 checkpoint (no network, tensors and plain types only): (model, config)."""
    path = Path(path)
    if not path.is_file():
        raise NotFound(f"no v1 checkpoint at {path}; train one with `memsieve train v1`")
    blob = torch.load(path, map_location="cpu", weights_only=True)
    config = blob["config"]
    if config.get("version") != VERSION:
        raise ConfigError(f"{path}: v1 checkpoint version {config.get('version')}, need {VERSION}")
    model = V1Model(**config["model"])
    state = {k: v.float() if v.is_floating_point() else v for k, v in blob["state_dict"].items()}
    model.load_state_dict(state)
    model.eval()
    return model, config


# -- the stage -----------------------------------------------------------------------------


class LearnedReranker:
    """Stage 3: reorder the first-stage pool by the v1 score.

    Returns the same candidates (a permutation), each with score ``v1`` set as the ranking key;
    ties keep the input order. When the checkpoint's gate (``rerank/gate.py``) finds the pool
    unlike every kind it was trained on, the first stage's order is kept and no ``v1`` score is
    set (so v2 leaves it alone too); in the zone at the gate's edge the order is a blend of v1's
    and the first stage's (score ``v1_blend``, and v2 leaves it alone too); the trace says
    which (``rerank_v1_gate``: ``weight`` 1, the blend weight, or 0). Needs the
    encoder (its memo makes the query vector free after the retriever) and the retriever's
    ``IndexCache`` (memory vectors, store order).
    """

    name = "rerank_v1"

    def __init__(
        self,
        model: V1Model,
        *,
        encoder: Encoder,
        cache: IndexCache,
        config: Mapping[str, Any] | None = None,
        window: int | None = None,
    ) -> None:
        config = dict(config or {})
        expected = config.get("encoder")
        if expected is not None and expected != encoder.name:
            raise ConfigError(
                f"the v1 checkpoint was trained on {expected!r} vectors, "
                f"but the encoder is {encoder.name!r}; use --rerank off"
            )
        if encoder.dim != model.dim:
            raise ConfigError(
                f"the v1 model expects {model.dim}-d vectors, the encoder gives {encoder.dim}"
            )
        self.model, self.encoder, self.cache, self.config = model, encoder, cache, config
        self.window = window if window is not None else int(config.get("window", 3))
        self.gate = gate_of(config)

    @classmethod
    def from_checkpoint(
        cls, path: str | Path, *, encoder: Encoder, cache: IndexCache
    ) -> LearnedReranker:
        model, config = load_checkpoint(path)
        return cls(model, encoder=encoder, cache=cache, config=config)

    def namespace_features(self, namespace: str) -> NamespaceFeatures:
        """Features of a namespace: built once beside the retriever's live index, then moved
        along with its deltas (a write costs the new memories' terms, not a rebuild)."""
        index = self.cache.get(namespace)
        features = index.followers.get(self.name)
        if features is None:
            features = index.followers[self.name] = NamespaceFeatures.of_index(
                index, self.cache.store)
        return features

    def __call__(
        self, query: Query, candidates: list[Candidate], *, trace: Trace
    ) -> list[Candidate]:
        if not candidates:
            return []
        with trace.timed("rerank_v1_namespace"):  # built once per namespace revision
            ns = self.namespace_features(query.namespace)
        try:
            positions = np.array([ns.position[c.memory.id] for c in candidates], dtype=np.int64)
        except KeyError as err:
            raise StoreError(
                f"candidate {err.args[0]!r} is not in namespace {query.namespace!r}'s index"
            ) from None
        missing = [n for n in ("dense", "bm25", "fused") if n not in candidates[0].scores]
        if missing:
            raise ConfigError(f"v1 needs the fusion retriever's scores; missing {missing}")
        dense, bm25, fused = (
            np.array([c.scores[n] for c in candidates]) for n in ("dense", "bm25", "fused")
        )
        qvec = self.encoder.encode([query.text])[0]
        feats = pool_features(ns.query(query.text, qvec), ns, positions, dense, bm25, fused,
                              window=self.window)
        weight = 1.0
        if self.gate is not None:
            weight, ratio, nearest = self.gate.weigh(feats.x)
            trace.note("rerank_v1_gate", {"applied": weight > 0, "weight": weight,
                                          "ratio": round(ratio, 3), "nearest": nearest})
            if weight == 0:
                return list(candidates)
        key = blend(self.model.score_pool(feats.q, feats.m, feats.x), weight)
        name = "v1" if weight == 1 else "v1_blend"  # the zone's blend: no v1 score for v2
        order = np.argsort(-key, kind="stable")
        return [candidates[i].with_score(name, key[i]) for i in order]


RERANK_MODES = ("off", "v1", "v2")


def default_reranker(
    mode: str | None, *, encoder: Encoder, cache: IndexCache, method: str = "fusion"
) -> LearnedReranker | None:
    """Stage 3 of ``Pipeline.default``: ``"off"`` -> None; ``"v1"`` or ``"v2"`` (which runs on
    v1) -> the default checkpoint (ConfigError when it cannot apply); None (auto) -> v1 when the
    checkpoint exists, was trained on this encoder's vectors and the first stage is fusion,
    else None."""
    if mode is not None and mode not in RERANK_MODES:
        raise ConfigError(f"unknown rerank mode {mode!r}; choose one of {list(RERANK_MODES)}")
    if mode == "off":
        return None
    path = default_checkpoint()
    if mode is None:
        if str(method) != "fusion" or not path.is_file():
            return None
        model, config = load_checkpoint(path)
        if config.get("encoder") != encoder.name or model.dim != encoder.dim:
            log.info("v1 off: checkpoint trained on %r, encoder is %r", config.get("encoder"),
                     encoder.name)
            return None
        return LearnedReranker(model, encoder=encoder, cache=cache, config=config)
    if str(method) != "fusion":
        raise ConfigError(f"--rerank {mode} needs the fusion first stage, not {str(method)!r}")
    return LearnedReranker.from_checkpoint(path, encoder=encoder, cache=cache)


__all__ = [
    "EMBED_MODES",
    "PROTECTED",
    "RERANK_MODES",
    "default_reranker",
    "LearnedReranker",
    "V1Model",
    "default_checkpoint",
    "load_checkpoint",
    "save_checkpoint",
    "weights_dir",
]
