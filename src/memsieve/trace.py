"""The Trace: what one query did, kept as a value the pipeline returns (never a global)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager


@dataclasses.dataclass
class Trace:
    """What one query did: stage timings (ms), considered ids, exposed ids, and what a stage
    decided (``notes``, e.g. whether the v1 gate let the reranker apply)."""

    timings_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    considered: list[str] = dataclasses.field(default_factory=list)
    exposed: list[str] = dataclasses.field(default_factory=list)
    excluded: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: dict[str, object] = dataclasses.field(default_factory=dict)

    def note(self, name: str, value: object) -> None:
        """Record what a stage decided (kept out of the timings)."""
        self.notes[name] = value

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Add the wall time of the block to ``timings_ms[name]``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            ms = (time.perf_counter() - t0) * 1000.0
            self.timings_ms[name] = self.timings_ms.get(name, 0.0) + ms
