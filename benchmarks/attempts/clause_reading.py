"""Stop 35's clause-by-clause reading (issue 13; not shipped): import this module before a
benchmark to make the verifier score a source as the max over the whole turn and its clauses,
with the thresholds the training rule re-chose on generator validation under that reading.

    import runpy, sys
    sys.path.insert(0, "benchmarks/attempts"); import clause_reading  # noqa: F401
    sys.argv = ["bench_natural.py", "--split", "dev", "--no-timing"]
    runpy.run_path("benchmarks/bench_natural.py", run_name="__main__")

Figures: benchmarks/RESULTS.md, "What the verifier reads, and four tries at item 1".
"""

from __future__ import annotations

import re

import numpy as np

from memsieve.validity import verifier as _verifier

CLAUSE = re.compile(r"(?<=[.!?])\s+|,\s+|;\s+|\s+and\s+")
GLUE = re.compile(r"^(but|though|although|except|unless|if|until|not|probably|maybe|or|"
                  r"because|since|which|who|when)\b", re.I)
# choose_thresholds / edge_threshold on generate(1000, 7 + VAL_OFFSET), read this way
THRESHOLDS = {"context_threshold": 0.7973910570144653, "demote_threshold": 0.9631166458129883,
              "edge_threshold": 0.12371238321065903}
_score = _verifier.Verifier.score
_stage_thresholds = _verifier.Verifier.stage_thresholds


def pieces(text: str) -> list[str]:
    """The turn, then its clauses (each with the speaker), when it has more than one."""
    speaker, sep, body = text.partition(": ")
    if not sep or len(speaker) > 40:
        speaker, body = "", text
    parts: list[str] = []
    for p in CLAUSE.split(body):
        if parts and GLUE.match(p):
            parts[-1] += ", " + p
        else:
            parts.append(p)
    parts = [p for p in parts if len(p.split()) >= 2]
    if len(parts) < 2:
        return [text]
    return [text] + [f"{speaker}: {p}" if speaker else p for p in parts]


def score(self, triples, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
    flat, owner = [], []
    for i, (q, s, t) in enumerate(triples):
        for p in pieces(s):
            flat.append((q, p, t))
            owner.append(i)
    if not flat:
        return _score(self, triples, *args, **kwargs)
    out = np.zeros(len(triples))
    np.maximum.at(out, np.array(owner), np.asarray(_score(self, flat, *args, **kwargs)))
    return out


def stage_thresholds(self, encoder_name):  # noqa: ANN001, ANN201
    return {**_stage_thresholds(self, encoder_name),
            **{k: v for k, v in THRESHOLDS.items() if k != "min_similarity"}}


_verifier.Verifier.score = score
_verifier.Verifier.stage_thresholds = stage_thresholds
