"""Evaluation tasks: the memories of each group (conversation / persona / question) and the
queries whose gold evidence resolves to stored memory ids.

Memories come from the same ingest adapters the product uses, so ids are the store's ids.
Gold labels live only here, on ``EvalQuery``; they never enter a Memory or a Query.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from pathlib import Path

from memsieve.errors import ConfigError, NotFound
from memsieve.ingest import read_memories
from memsieve.types import Memory


@dataclasses.dataclass(frozen=True)
class EvalQuery:
    """One evaluation question with its gold memory ids (turn level) and sessions."""

    qid: str
    text: str
    namespace: str
    gold: frozenset[str]
    gold_sessions: frozenset[str]
    category: str
    date: str | None = None  # when the question is asked (YYYY-MM-DD), where the data says


@dataclasses.dataclass
class EvalTask:
    """A dataset ready to evaluate: memories, queries, and why some queries were dropped."""

    name: str
    memories: list[Memory]
    queries: list[EvalQuery]
    dropped: dict[str, int]
    repaired: int = 0
    headline: tuple[str, ...] = ()  # categories that make the headline; empty = all
    # the dataset whose groups (and turns) this one's groups hold: a checkpoint that saw one of
    # them in training must not be scored on it (LoCoMo-Plus stitches into LoCoMo's)
    based_on: str | None = None

    @property
    def groups(self) -> list[str]:
        """Split units (conversations / personas / questions), sorted."""
        return sorted({m.namespace for m in self.memories})

    def session_of(self) -> dict[str, str]:
        return {m.id: m.session_id or m.id for m in self.memories}


def _check(path: Path) -> Path:
    if not path.exists():
        raise NotFound(f"{path}: no such file or directory")
    return path


_DIA = re.compile(r"^D(\d+):(\d+)$")


def load_locomo(path: str | Path) -> EvalTask:
    """LoCoMo: memories = every turn; gold = the QA item's evidence dia_ids that resolve.

    Evidence strings holding several ids ("D8:6; D9:17") are split and ids with leading zeros
    ("D30:05") normalised (counted as ``repaired``); tokens that are still malformed ("D",
    "D:11:26") or name no turn are dropped, and a query left with no gold is dropped.
    """
    path = _check(Path(path))
    memories = list(read_memories("locomo", path))
    ids = {m.id for m in memories}
    session = {m.id: m.session_id for m in memories}
    samples = json.loads(path.read_text(encoding="utf-8"))
    queries, dropped, repaired = [], collections.Counter(), 0
    for sample in samples:
        sid = sample["sample_id"]
        for i, qa in enumerate(sample["qa"]):
            gold = set()
            for raw in qa.get("evidence", []):
                tokens = [t for t in re.split(r"[;,\s]+", raw) if t]
                if len(tokens) > 1:
                    repaired += 1
                for tok in tokens:
                    m = _DIA.match(tok)
                    if not m:
                        dropped["malformed evidence id (ref)"] += 1
                        continue
                    dia = f"D{int(m.group(1))}:{int(m.group(2))}"
                    if dia != tok and len(tokens) == 1:
                        repaired += 1
                    mid = f"{sid}:{dia}"
                    if mid in ids:
                        gold.add(mid)
                    else:
                        dropped["evidence id names no turn (ref)"] += 1
            if not qa.get("evidence"):
                dropped["empty evidence (query)"] += 1
                continue
            if not gold:
                dropped["no resolvable evidence (query)"] += 1
                continue
            queries.append(
                EvalQuery(
                    qid=f"{sid}:q{i}",
                    text=qa["question"],
                    namespace=sid,
                    gold=frozenset(gold),
                    gold_sessions=frozenset(session[g] for g in gold),
                    category=str(qa["category"]),
                )
            )
    return EvalTask("locomo", memories, queries, dict(dropped), repaired, ("1", "2", "3", "4"))


def load_longmemeval(path: str | Path) -> EvalTask:
    """LongMemEval (oracle sample): one namespace per question; gold turns = ``has_answer``,
    gold sessions = ``answer_session_ids``. Abstention questions (``_abs``) have no gold turn
    and are dropped at turn level only if no has_answer turn exists."""
    path = _check(Path(path))
    memories = list(read_memories("longmemeval", path))
    records = json.loads(path.read_text(encoding="utf-8"))
    queries, dropped = [], collections.Counter()
    for rec in records:
        qid = rec["question_id"]
        gold = set()
        for sess_id, turns in zip(
            rec["haystack_session_ids"], rec["haystack_sessions"], strict=True
        ):
            for j, turn in enumerate(turns):
                if turn.get("has_answer"):
                    gold.add(f"{qid}:{sess_id}:{j}")
        sessions = {f"{qid}:{s}" for s in rec["answer_session_ids"]}
        if not gold:
            dropped["no has_answer turn (query)"] += 1
            continue
        queries.append(
            EvalQuery(
                qid,
                rec["question"],
                qid,
                frozenset(gold),
                frozenset(sessions),
                rec["question_type"],
            )
        )
    return EvalTask("longmemeval", memories, queries, dict(dropped))


def load_rhelm(path: str | Path) -> EvalTask:
    """RHELM: conversation turns per persona; gold = ``YYYY-MM-DD:turn`` evidence that resolves.

    Email and attachment evidence is out of scope (those documents are not ingested as turns);
    a query whose evidence is only of that kind is dropped and counted.
    """
    path = _check(Path(path))
    memories = list(read_memories("rhelm", path))
    ids = {m.id for m in memories}
    session = {m.id: m.session_id for m in memories}
    qa_dir = path / "QA_final"
    if not qa_dir.is_dir():
        raise ConfigError(f"{path}: expected the RHELM data folder (with QA_final/)")
    personas = {m.namespace for m in memories}
    queries, dropped = [], collections.Counter()
    for qa_file in sorted(qa_dir.glob("*.jsonl")):
        persona = next(
            (
                p
                for p in personas
                if qa_file.stem.endswith(p + "_all_validated") or qa_file.stem.endswith(p)
            ),
            None,
        )
        if persona is None:
            raise ConfigError(f"{qa_file}: no conversations for this persona")
        for line in qa_file.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            qa = json.loads(line)
            gold = set()
            for ref in qa.get("supporting_evidence", []):
                m = re.match(r"^(\d{4}-\d{2}-\d{2}):(\d+)$", ref)
                if not m:
                    dropped["email/attachment evidence (ref)"] += 1
                    continue
                mid = f"{persona}:{m.group(1)}:{int(m.group(2))}"
                if mid in ids:
                    gold.add(mid)
                else:
                    dropped["evidence names no turn (ref)"] += 1
            if not gold:
                dropped["no turn evidence (query)"] += 1
                continue
            queries.append(
                EvalQuery(
                    f"{persona}:{qa['id']}",
                    qa["question"],
                    persona,
                    frozenset(gold),
                    frozenset(session[g] for g in gold),
                    qa["question_type"],
                    qa.get("question_date"),
                )
            )
    return EvalTask("rhelm", memories, queries, dict(dropped))


def load_memora(path: str | Path) -> EvalTask:
    """Memora (one period folder, e.g. ``memora/weekly``) as a retrieval task: memories are the
    turns (one namespace per persona); a question's gold is the turns Memora marks
    ``share_memory`` in the sessions of its ``memory_evidence`` (the current evidence), its
    category the question's task (remembering / reasoning / recommending). Forgetting evidence
    is not gold: it is what the validity layer is for (PROTOCOL.md)."""
    from memsieve.eval.memora import _evidence, _shared_turns, personas

    root = _check(Path(path))
    memories = list(read_memories("memora", root))
    session = {m.id: m.session_id for m in memories}
    queries, dropped = [], collections.Counter()
    for namespace, sessions, data in personas(root):
        if data is None:
            dropped["persona without questions"] += 1
            continue
        for task, items in data["questions"].items():
            for q in items:
                sids = {e["session_id"] for e in _evidence(q.get("memory_evidence"))}
                gold = {t for sid in sorted(sids) if sid in sessions
                        for t in _shared_turns(namespace, sessions[sid]) if t in session}
                if not gold:
                    dropped["no current-evidence turn (query)"] += 1
                    continue
                queries.append(EvalQuery(
                    f"{namespace}:{q['question_id']}", q["question"], namespace,
                    frozenset(gold), frozenset(session[g] for g in gold), task,
                    q.get("question_date")))
    return EvalTask("memora", memories, queries, dict(dropped))


_LINE = re.compile(r"^\s*([AB])\s*:\s*(.+?)\s*$")


def load_locomo_plus(path: str | Path) -> EvalTask:
    """LoCoMo-Plus (cognitive memory) as a retrieval task: each item's cue dialogue is stitched
    into a LoCoMo conversation as a session of its own, its trigger is the query, the cue's
    turns are gold. Item ``i`` goes to conversation ``i mod 10`` (file order); a
    conversation's ~40 cues are spread evenly between its sessions, each an hour after the
    session before it, A / B spoken by the conversation's two speakers. The LoCoMo file is read
    from beside ``path`` (the upstream layout) or from ``../locomo/locomo10.json``. Namespaces
    are LoCoMo's, so a split seed gives LoCoMo's halves (``based_on``)."""
    import datetime as dt

    path = _check(Path(path))
    if path.is_dir():
        path = _check(path / "locomo_plus.json")
    haystack = next((p for p in (path.parent / "locomo10.json",
                                 path.parent.parent / "locomo" / "locomo10.json") if p.exists()),
                    None)
    if haystack is None:
        raise NotFound(f"{path}: LoCoMo-Plus needs locomo10.json beside it or in ../locomo/")
    base = list(read_memories("locomo", haystack))
    samples = json.loads(haystack.read_text(encoding="utf-8"))
    items = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(items, list):
        raise ConfigError(f"{path}: expected a list of LoCoMo-Plus items")
    by_conv: dict[str, list[Memory]] = collections.defaultdict(list)
    for m in base:
        by_conv[m.namespace].append(m)
    memories: list[Memory] = []
    queries, dropped = [], collections.Counter()
    for c, sample in enumerate(samples):
        sid, conv = sample["sample_id"], sample["conversation"]
        speaker = {"A": str(conv.get("speaker_a", "A")), "B": str(conv.get("speaker_b", "B"))}
        by_session: dict[str | None, list[Memory]] = {}
        for m in by_conv[sid]:
            by_session.setdefault(m.session_id, []).append(m)
        sessions = list(by_session)
        mine = [(i, it) for i, it in enumerate(items) if i % len(samples) == c]
        # cue k follows session after[k]: spread over the conversation, never before its first
        after = [sessions[min(len(sessions) - 1, (k * len(sessions)) // max(1, len(mine)))]
                 for k in range(len(mine))]
        cues: dict[str | None, list[Memory]] = collections.defaultdict(list)
        for (i, item), anchor in zip(mine, after, strict=True):
            item = item if isinstance(item, dict) else {}  # not an item: dropped below
            lines = [m for ln in str(item.get("cue_dialogue", "")).splitlines()
                     if (m := _LINE.match(ln))]
            trigger = _LINE.match(str(item.get("trigger_query", "")))
            if not lines or trigger is None:
                dropped["cue or trigger not in 'A: text' form (query)"] += 1
                continue
            when = by_session[anchor][0].timestamp
            session_id = f"{sid}:plus_{i}"
            cue = [Memory(id=f"{sid}:P{i}:{j}", namespace=sid, text=f"{speaker[who]}: {text}",
                          conversation_id=sid, session_id=session_id, turn_index=j,
                          speaker=speaker[who],
                          timestamp=when + dt.timedelta(hours=1) if when else None,
                          metadata={"locomo_plus": i})
                   for j, (who, text) in enumerate(m.groups() for m in lines)]
            cues[anchor].extend(cue)
            queries.append(EvalQuery(f"{sid}:plus{i}", trigger.group(2), sid,
                                     frozenset(m.id for m in cue), frozenset({session_id}),
                                     str(item.get("relation_type", "unknown"))))
        for session, held in by_session.items():
            memories += held + cues[session]
    return EvalTask("locomo_plus", memories, queries, dict(dropped), based_on="locomo")


LOADERS = {"locomo": load_locomo, "longmemeval": load_longmemeval, "rhelm": load_rhelm,
           "memora": load_memora, "locomo_plus": load_locomo_plus}

DEFAULT_PATHS = {
    "locomo": "../shared/data/locomo/locomo10.json",
    "longmemeval": "../shared/data/longmemeval/longmemeval_oracle_sample_seed42_97.json",
    "rhelm": "../shared/data/rhelm",
    "memora": "../shared/data/memora/weekly",
    "locomo_plus": "../shared/data/locomo_plus/locomo_plus.json",
}


def load_task(name: str, path: str | Path | None = None) -> EvalTask:
    """Load evaluation task ``name`` (locomo, longmemeval, rhelm, memora, locomo_plus) from
    ``path``."""
    if name not in LOADERS:
        raise ConfigError(f"unknown dataset {name!r}; choose one of {sorted(LOADERS)}")
    return LOADERS[name](path or DEFAULT_PATHS[name])


def split(groups: list[str], seed: int) -> tuple[list[str], list[str]]:
    """Protocol split: sort, shuffle with random.Random(seed), first half train, rest test."""
    import random

    order = sorted(groups)
    random.Random(seed).shuffle(order)
    half = len(order) // 2
    return order[:half], order[half:]
