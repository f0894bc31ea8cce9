"""Natural verifier supervision from Memora's session labels (issue 13, item 1).

The generator's templates teach the verifier what an update looks like in our own words; real
users say it otherwise ("I've grown out of his style lately", "my review has been rescheduled
to Friday"). Memora labels every session with the operation it performs on the persona's
memory (``add``, ``update``, ``delete``) and the item it touches, in text an LLM wrote, not
us. So each ``update`` or ``delete`` of an item that an earlier session stated gives a natural
positive (the earlier statement is the target, the change the source), and each later ``add``
of *another* item of the same list (a second liked author, another day's steps, another lunch
bill) a natural hard negative: same attribute, a new value, and both stay true; and each
change set against another item of its list that it leaves standing, one more.

The stage meets a third kind of pair that neither gives: its own write-time edges (a later
turn close to an earlier one, ``validity/edges.py``). ``memora_edge_examples`` runs the edge
finder over a persona's share-memory turns and keeps each edge whose source session does not
change the target's item as a hard negative (a candidate trained without them flagged current
memories through such edges: RESULTS.md, "Natural supervision").

Which data: the periods and personas passed in. The product's recipe (``TRAIN_PERIODS``,
``TRAIN_PERSONAS``) takes the monthly and quarterly conversations of the five personas that
the Memora evaluation calls ``dev``; the weekly conversations, on which the Memora
current-state task is scored, and the five held-out personas are never read. Documents
(``content_data``: e-mails, proposals) are left out: their edits change a field of a draft.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memsieve.errors import NotFound
from memsieve.validity.generator import Example

TRAIN_PERIODS = ("monthly", "quarterly")
TRAIN_PERSONAS = ("academic_researcher", "business_executive", "content_writer",
                  "creative_designer", "financial_analyst")  # the first five by name: "dev"
PER_EXAMPLE = 1  # negatives drawn (at most) per later add and per change: other items of its list

_QUERIES = {
    "pref": ("What {topic} does the user like?", "Any {topic} you would recommend for me?",
             "What are my favourite {topic}?", "Which {topic} am I into these days?"),
    "todo_list": ("What is on the user's to-do list?", "What do I still have to do?",
                  "Which tasks are still open for me?"),
    "calendar_event": ("When is my {topic}?", "What is on my calendar?",
                       "When is the user's {topic}?"),
    "food_expenses": ("How much did I spend on {topic}?", "What did the user spend on food?"),
    "step_tracker": ("How many steps did I walk?", "What does the user's step count look like?"),
    "goal": ("What is my {topic} goal?", "What budget did the user set for {topic}?",
             "How many daily steps am I aiming for?"),
}


def _shares(session: dict) -> list[dict]:
    """The turns of a session that Memora marks as stating the memory (the user's)."""
    return [t for t in session.get("conversation", ())
            if t.get("share_memory") and t.get("speaker") == "user_agent"]


def _first_share(session: dict) -> str | None:
    """The first of them, as memory text."""
    shares = _shares(session)
    return f"user: {shares[0]['message']}" if shares else None


def _key(session: dict) -> tuple[str, str, str] | None:
    """(family, list, item) of a session's operation; None for documents and no-ops."""
    d = session.get("operation_details") or {}
    if not session.get("operation") or "content_data" in d:
        return None
    item = d.get("item")
    if session.get("session_type") == "preference" and isinstance(item, str):
        return "pref", str(d.get("subcategory", "")), item.lower()
    if session.get("session_type") == "goal":
        return "goal", "goal", str(d.get("subcategory", ""))
    if isinstance(item, dict):
        category = str(d.get("category", ""))
        name = item.get("description") or item.get("event_name")
        if name is None:  # a log entry (an expense, a day's steps): every add is a new item
            name = json.dumps(item, sort_keys=True)
        return "act", category, str(name).lower()
    return None


def _query(rng: random.Random, family: str, lst: str, item: str) -> str:
    if family == "pref":
        pool, topic = _QUERIES["pref"], lst.replace("already_", "").replace("_list", "s")
    elif family == "goal":
        pool, topic = _QUERIES["goal"], item.replace("_", " ")
    else:
        pool = _QUERIES.get(lst, ("What does the user have going on?",))
        topic = item if lst == "calendar_event" else lst.split("_")[0]
    return rng.choice(pool).format(topic=topic.replace("_", " "))


def _persona_examples(sessions: Sequence[dict], rng: random.Random) -> Iterator[Example]:
    """One persona's positives (updates and deletes of a stated item) and negatives (a later
    item of the same list; a change set against another item of its list)."""
    stated: dict[tuple[str, str, str], tuple[int, str]] = {}
    for s in sorted(sessions, key=lambda s: s["session_id"]):
        key, text = _key(s), _first_share(s)
        if key is None or text is None:
            continue
        family, lst, item = key
        op = s["operation"]
        old = _changed(s, key)
        sid = int(s["session_id"])
        if old in stated and _overturns(op, old, key, old):
            turn, target = stated.pop(old)
            query = _query(rng, family, lst, item)
            yield Example(query=query, source=text, target=target,
                          label=1, stratum=f"pos_memora_{op if family != 'goal' else 'update'}",
                          attribute=f"memora_{lst}", target_turn=turn, source_turn=sid)
            # the same change against another item of the list: that one still holds
            others = [k for k in stated if k[:2] == key[:2] and k not in (key, old)]
            for k in rng.sample(others, min(len(others), PER_EXAMPLE)):
                turn, target = stated[k]
                yield Example(query=query, source=text, target=target, label=0,
                              stratum="hard_memora_other_item", attribute=f"memora_{lst}",
                              target_turn=turn, source_turn=sid)
        elif op == "add":
            others = [k for k in stated if k[:2] == key[:2] and k != key]
            for k in rng.sample(others, min(len(others), PER_EXAMPLE)):
                turn, target = stated[k]
                yield Example(query=_query(rng, family, lst, k[2]), source=text, target=target,
                              label=0, stratum="hard_memora_list", attribute=f"memora_{lst}",
                              target_turn=turn, source_turn=sid)
        if op != "delete":
            stated[key] = (sid, text)


def memora_examples(
    root: str | Path,
    *,
    periods: Sequence[str] = TRAIN_PERIODS,
    personas: Sequence[str] = TRAIN_PERSONAS,
    seed: int = 7,
) -> list[Example]:
    """Every natural example of ``personas`` in ``periods`` of the Memora folder ``root``
    (e.g. ``../shared/data/memora``), in a seeded order."""
    root = Path(root)
    rng = random.Random(seed)
    out: list[Example] = []
    for period in periods:
        for persona in personas:
            out.extend(_persona_examples(_sessions(root, period, persona), rng))
    rng.shuffle(out)
    return out


def _sessions(root: Path, period: str, persona: str) -> list[dict]:
    path = root / period / persona / "sessions.jsonl"
    if not path.is_file():
        raise NotFound(f"{path}: no such Memora sessions file")
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _overturns(op: str, changed: tuple[str, str, str], key: tuple[str, str, str],
               target: tuple[str, str, str]) -> bool:
    """Does a session (its operation, the item it changes, its own key) overturn the item
    ``target`` stated earlier? An update or delete of it, or a new value of the same goal."""
    return (op in ("update", "delete") and changed == target) or (
        key[0] == "goal" and key == target)


def _changed(session: dict, key: tuple[str, str, str]) -> tuple[str, str, str]:
    """The (family, list, item) an update or delete session changes (its ``old_item``)."""
    old_item = (session.get("operation_details") or {}).get("old_item")
    return (key[0], key[1], str(old_item).lower()) if isinstance(old_item, str) else key


def _edge_negatives(sessions: Sequence[dict], encoder: Any, rng: random.Random,
                    persona: str) -> Iterator[Example]:
    """The write-time edges over one persona's share-memory user turns (in session order)
    whose source is a session's first such turn and whose source session leaves the target
    session's item standing."""
    from datetime import datetime, timedelta

    from memsieve.types import Memory
    from memsieve.validity.edges import candidate_edges

    keys: dict[int, tuple[str, str, str]] = {}
    ops: dict[int, tuple[str, tuple[str, str, str]]] = {}
    mems: list[Memory] = []
    firsts: set[str] = set()
    for s in sorted(sessions, key=lambda s: s["session_id"]):
        key = _key(s)
        if key is None:
            continue
        sid = int(s["session_id"])
        keys[sid], ops[sid] = key, (s["operation"], _changed(s, key))
        for i, t in enumerate(_shares(s)):
            m = Memory(id=f"{sid}:{t['turn']}", namespace=persona, text=f"user: {t['message']}",
                       speaker="user", session_id=str(sid), turn_index=len(mems),
                       timestamp=datetime(2025, 1, 1) + timedelta(seconds=len(mems)))
            if i == 0:
                firsts.add(m.id)
            mems.append(m)
    if not mems:
        return
    by_id = {m.id: m for m in mems}
    for e in candidate_edges(mems, encoder.encode([m.text for m in mems])):
        src, tgt = int(e.source.split(":")[0]), int(e.target.split(":")[0])
        if e.source not in firsts or src == tgt:
            continue
        if _overturns(*ops[src], keys[src], keys[tgt]):
            continue  # a true change of the target's item: not a negative
        yield Example(query=_query(rng, *keys[tgt]), source=by_id[e.source].text,
                      target=by_id[e.target].text, label=0, stratum="hard_memora_edge",
                      attribute=f"memora_{keys[tgt][1]}", target_turn=tgt, source_turn=src)


def memora_edge_examples(
    root: str | Path,
    encoder: Any,
    *,
    periods: Sequence[str] = TRAIN_PERIODS,
    personas: Sequence[str] = TRAIN_PERSONAS,
    seed: int = 7,
) -> list[Example]:
    """Hard negatives from the write-time edges (``edges.candidate_edges`` on ``encoder``'s
    vectors, the product's floor and fan-out) over ``personas`` in ``periods``: every edge
    from a session's first share-memory turn to another session's turn whose item it does not
    change; in a seeded order."""
    root = Path(root)
    rng = random.Random(seed)
    out: list[Example] = []
    for period in periods:
        for persona in personas:
            out.extend(_edge_negatives(_sessions(root, period, persona), encoder, rng, persona))
    rng.shuffle(out)
    return out


def summary(examples: Sequence[Example]) -> dict[str, Any]:
    """Counts per stratum."""
    counts: dict[str, int] = {}
    for e in examples:
        counts[e.stratum] = counts.get(e.stratum, 0) + 1
    return dict(sorted(counts.items()))
