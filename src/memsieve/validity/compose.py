"""Score composition of the dual-evidence gate (validity-context-layer §5.1–§5.3, §10).

slot = product of the slot heads (both must agree: conservative, eq. 1);
edge = slot · min(p_ev, p_op) when the event/operation gate is configured (eq. 3);
invalid_score = noisy-or over sources, ``1 − Π(1 − x_i)`` (eq. 4).
Multi-hop: a memory's invalidity is the noisy-or of its own score and its parents'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from memsieve.errors import ConfigError


def noisy_or(values: Iterable[float]) -> float:
    """``1 − Π(1 − x_i)``; 0 for no values. Inputs are clipped to [0, 1]."""
    prod = 1.0
    for x in values:
        prod *= 1.0 - min(max(float(x), 0.0), 1.0)
    return 1.0 - prod


def edge_scores(
    heads: Sequence[np.ndarray], gate: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """Edge score per pair: product of the slot heads, times ``min(p_ev, p_op)`` if gated."""
    if not heads:
        raise ConfigError("at least one slot head is needed")
    slot = np.prod(np.stack([np.asarray(h, dtype=np.float64) for h in heads]), axis=0)
    if gate is None:
        return slot
    p_ev, p_op = (np.asarray(g, dtype=np.float64) for g in gate)
    return slot * np.minimum(p_ev, p_op)


def propagate(
    direct: Mapping[str, float], parents: Mapping[str, Sequence[str]], *, max_depth: int = 16
) -> dict[str, float]:
    """Invalidity along given dependency edges (child → the parents it depends on).

    ``invalid(m) = noisy_or(direct(m), invalid(p) for each parent p)``: an overturned premise
    makes what depends on it doubtful, and several doubtful paths add up (noisy-or over
    paths). Memories without a direct score count 0. A cycle is an error: dependency is
    a partial order. Only edges the caller gives are used (§15: no automatic edges).
    """
    memo: dict[str, float] = {}

    def visit(node: str, stack: tuple[str, ...]) -> float:
        if node in memo:
            return memo[node]
        if node in stack:
            raise ConfigError(f"dependency edges form a cycle through {node!r}")
        if len(stack) > max_depth:
            raise ConfigError(f"dependency chain deeper than {max_depth} at {node!r}")
        up = [visit(p, stack + (node,)) for p in parents.get(node, ())]
        memo[node] = noisy_or([direct.get(node, 0.0), *up])
        return memo[node]

    nodes = set(direct) | set(parents) | {p for ps in parents.values() for p in ps}
    for node in sorted(nodes):
        visit(node, ())
    return memo
