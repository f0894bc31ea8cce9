"""Shared fakes of the validity tests."""

from __future__ import annotations

import numpy as np
import pytest


class Counting:
    """A scorer that says every pair overturns, and counts the pairs it was asked about."""

    def __init__(self) -> None:
        self.pairs = 0

    def score(self, triples):
        self.pairs += len(triples)
        return np.ones(len(triples))


@pytest.fixture
def counting() -> type[Counting]:
    """The counting scorer's class: call it for a fresh one."""
    return Counting
