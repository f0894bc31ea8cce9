"""Memora current-state task (benchmarks/PROTOCOL.md, "Memora current state").

Memora's ``forgetting_evidence`` names the sessions where an item was *updated or deleted*
("I finished the client report", "I used to like 90s music, now ..."): those turns are the
later evidence, not the stale memory. The stale memory is the earlier session that stated the
item (its ``operation_details`` name the same value: an ``add``, or the previous ``update``).
So, per question with both kinds of evidence, at turn level (only the turns Memora marks
``share_memory``, the ones that state the memory):

- *current*: turns of the sessions under ``memory_evidence``;
- *update*: turns of the ``forgetting_evidence`` sessions (the overturning statements);
- *stale*: turns of the latest earlier session that stated each forgotten value;
- ``pairs``: (stale turn, update turn that overturns it), for pair accuracy with the true source.

These labels come from Memora's evaluation files and session labels and are used for scoring
only: the pipeline never sees them, and the verifier trains on synthetic data alone.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memsieve.errors import ConfigError, NotFound
from memsieve.ingest import read_memories
from memsieve.types import Memory


@dataclasses.dataclass(frozen=True)
class CurrentStateQuery:
    qid: str
    text: str
    namespace: str
    current: frozenset[str]  # memory ids
    stale: frozenset[str]
    update: frozenset[str]
    pairs: tuple[tuple[str, str], ...]  # (stale id, update id)
    task: str


def _evidence(obj: Any) -> Iterator[dict]:
    """Every evidence entry (a dict with a ``session_id``) anywhere under ``obj``."""
    if isinstance(obj, dict):
        if isinstance(obj.get("session_id"), int):
            yield obj
        for v in obj.values():
            yield from _evidence(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _evidence(v)


def _shared_turns(namespace: str, session: dict) -> list[str]:
    return [f"{namespace}:{session['session_id']}:{t['turn']}"
            for t in session.get("conversation", ()) if t.get("share_memory")]


def _origin(operations: dict[int, str], value: str, before: int) -> int | None:
    """The latest session id before ``before`` whose operation (lower-cased JSON) names
    ``value``."""
    needle = value.lower()
    hits = [sid for sid, op in operations.items() if sid < before and needle in op]
    return max(hits, default=None)


def personas(root: Path) -> Iterator[tuple[str, dict[int, dict], dict | None]]:
    """Each persona of a period folder: its namespace, its sessions by id, and its evaluation
    file (None when it has none)."""
    for persona in sorted(p for p in root.iterdir() if (p / "sessions.jsonl").is_file()):
        sessions = {}
        with (persona / "sessions.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                sessions[row["session_id"]] = row
        files = sorted(persona.glob("evaluation_questions_*.json"))
        evaluation = json.loads(files[0].read_text(encoding="utf-8")) if files else None
        yield f"{root.name}/{persona.name}", sessions, evaluation


def load_memora_current(period_dir: str | Path) -> tuple[list[Memory], list[CurrentStateQuery]]:
    """Memories of every persona of one period (e.g. ``memora/weekly``) and the derived queries."""
    root = Path(period_dir)
    if not root.is_dir():
        raise NotFound(f"{root}: no such directory")
    if not any((p / "sessions.jsonl").is_file() for p in root.iterdir()):
        raise ConfigError(f"{root}: expected persona folders with sessions.jsonl")
    memories = list(read_memories("memora", root))
    queries = []
    for namespace, sessions, data in personas(root):
        if data is None:
            continue
        operations = {sid: json.dumps(s.get("operation_details")).lower()
                      for sid, s in sessions.items()}
        for task, items in data["questions"].items():
            for q in items:
                current_sids = {e["session_id"] for e in _evidence(q.get("memory_evidence"))}
                current = {t for sid in current_sids if sid in sessions
                           for t in _shared_turns(namespace, sessions[sid])}
                stale, update, pairs = set(), set(), []
                for e in _evidence(q.get("forgetting_evidence")):
                    op = sessions.get(e["session_id"])
                    if op is None or e["session_id"] in current_sids or "value" not in e:
                        continue
                    origin = _origin(operations, str(e["value"])[:40], e["session_id"])
                    if origin is None or origin in current_sids:
                        continue
                    ups = _shared_turns(namespace, op)
                    olds = _shared_turns(namespace, sessions[origin])
                    update.update(ups)
                    stale.update(olds)
                    pairs.extend((o, u) for o in olds for u in ups)
                if not current or not stale:
                    continue
                queries.append(CurrentStateQuery(
                    qid=f"{namespace}:{q['question_id']}", text=q["question"],
                    namespace=namespace, current=frozenset(current),
                    stale=frozenset(stale - current), update=frozenset(update - current),
                    pairs=tuple(dict.fromkeys(pairs)), task=task,
                ))
    return memories, queries
