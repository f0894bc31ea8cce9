"""Shared fakes of the validity tests."""

from __future__ import annotations

import numpy as np
import pytest


class Counting:
    """A scorer that says every pair overturns, and counts (and keeps) the pairs it was asked
    about."""

    def __init__(self) -> None:
        self.pairs = 0
        self.seen: list[tuple[str, str, str]] = []

    def score(self, triples):
        self.pairs += len(triples)
        self.seen.extend(triples)
        return np.ones(len(triples))


@pytest.fixture
def counting() -> type[Counting]:
    """The counting scorer's class: call it for a fresh one."""
    return Counting
