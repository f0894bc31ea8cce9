"""Memora current-state task (benchmarks/PROTOCOL.md, "Memora current state").

For each question, the sessions named under ``memory_evidence`` hold the current state and
those named only under ``forgetting_evidence`` hold updated or deleted state. A retrieved turn
is *current* if its session is a current-evidence session and *stale* if it is a
forgetting-evidence session. Only questions with both kinds are kept: they are the ones where
a stale memory can outrank the current one. These labels are used for scoring only; they are
never given to the pipeline (and the verifier was trained on synthetic data alone).
"""

from __future__ import annotations

import dataclasses
import json
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
    current_sessions: frozenset[str]
    stale_sessions: frozenset[str]
    task: str


def _session_ids(obj: Any, out: set[int]) -> set[int]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "session_id" and isinstance(v, int):
                out.add(v)
            else:
                _session_ids(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _session_ids(v, out)
    return out


def load_memora_current(period_dir: str | Path) -> tuple[list[Memory], list[CurrentStateQuery]]:
    """Memories of every persona of one period (e.g. ``memora/weekly``) and the derived queries."""
    root = Path(period_dir)
    if not root.is_dir():
        raise NotFound(f"{root}: no such directory")
    personas = sorted(p for p in root.iterdir() if (p / "sessions.jsonl").is_file())
    if not personas:
        raise ConfigError(f"{root}: expected persona folders with sessions.jsonl")
    memories = list(read_memories("memora", root))
    queries = []
    for persona in personas:
        namespace = f"{root.name}/{persona.name}"
        files = list(persona.glob("evaluation_questions_*.json"))
        if not files:
            continue
        data = json.loads(files[0].read_text(encoding="utf-8"))
        for task, items in data["questions"].items():
            for q in items:
                current = _session_ids(q.get("memory_evidence"), set())
                stale = _session_ids(q.get("forgetting_evidence"), set()) - current
                if not current or not stale:
                    continue
                queries.append(CurrentStateQuery(
                    qid=f"{namespace}:{q['question_id']}", text=q["question"], namespace=namespace,
                    current_sessions=frozenset(f"{namespace}:{s}" for s in current),
                    stale_sessions=frozenset(f"{namespace}:{s}" for s in stale), task=task,
                ))
    return memories, queries
