"""Multi-hop chains for the validity benchmark (validity-context-layer §10).

``make_chains(n, seed)`` builds the multi-hop benchmark (§10): chains of 2-4 dependent
memories ("works at Acme" → "office in Acme's Leeds building" → "7:10 train to Leeds"), an
update of the root (all invalid) or of an inner node (it and its descendants invalid), and
valid controls (an update of an unrelated attribute, or a restatement of the root: none
invalid).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from datetime import datetime, timedelta
from types import MappingProxyType

from memsieve.errors import ConfigError
from memsieve.types import Memory
from memsieve.validity.attributes import (
    ATTRIBUTES,
    CITIES,
    DAYS,
    MAJORS,
    MONTHS,
    NAMES,
    PURCHASES,
    TIMES,
    _draw_other,
    _org,
)
from memsieve.validity.generator import _cap, _Draw, _lower_first, _names, _turn


@dataclasses.dataclass(frozen=True)
class Chain:
    """A chain of dependent memories and one later update (validity-context-layer §10).

    ``edges`` are (child id, parent id): the child depends on the parent. ``gold_invalid`` is
    what the update makes invalid: the updated node and its descendants (empty for controls);
    ``direct_invalid`` is the part a single-hop verifier can see (the updated node alone).
    ``queries`` asks, for each chain memory, for what that memory states.
    """

    chain_id: str
    kind: str  # root_update | mid_update | control_unrelated | control_repeat
    length: int
    memories: tuple[Memory, ...]
    edges: tuple[tuple[str, str], ...]
    update: Memory
    gold_invalid: frozenset[str]
    direct_invalid: frozenset[str]
    queries: Mapping[str, str]

    @property
    def store_memories(self) -> tuple[Memory, ...]:
        """Everything a store for this chain holds: the memories, then the update."""
        return (*self.memories, self.update)

    @property
    def parents(self) -> dict[str, list[str]]:
        """child id → parent ids, the shape the validity stage takes as ``dependencies``."""
        out: dict[str, list[str]] = {}
        for child, parent in self.edges:
            out.setdefault(child, []).append(parent)
        return out


@dataclasses.dataclass(frozen=True)
class _Node:
    state: str
    question: str
    update: str


_CAFES = ("Kiosk 7", "Bean There", "the Daily Grind", "Cafe Nero", "Brew Lab", "Steam")
_GYMS = ("PureGym", "Iron Works", "FitHub", "the Y", "Core Studio", "Peak Fitness")
_HOTELS = ("Grand Hotel", "Harbour Inn", "Old Mill B&B", "Park Plaza", "Seaview Lodge")
_VENUES = ("the Rooftop Bar", "the Old Library", "the Boathouse", "Hall 3", "the Crown pub")
_PRODUCTS = ("Orbit", "Nimbus", "Pulse", "Atlas", "Beacon", "Lumen", "Quill", "Vista")
_UNIS = ("Leeds Uni", "King's College", "the Open University", "UCL", "Trinity")


def _chain_family(rng: random.Random, name: str, other: str) -> list[_Node]:
    """Four dependent nodes (each depends on the previous one) of one randomly chosen family."""
    city, city2 = rng.sample(CITIES, 2)
    org, org2 = _org(rng), _org(rng)
    t1, t2 = rng.sample(TIMES, 2)
    d1, d2 = rng.sample(DAYS, 2)
    month = rng.choice(MONTHS)
    fam = rng.randrange(6)
    if fam == 0:
        cafe = rng.choice(_CAFES)
        return [
            _Node(f"I just started at {org}.", f"Where does {name} work?",
                  f"I left {org}. I work at {org2} now, fully remote."),
            _Node(f"My office is in {org}'s {city} building.", f"Where is {name}'s office?",
                  f"{org} moved my team out of {city}, I'm in the {city2} office now."),
            _Node(f"I take the {t1} train to {city} every morning.",
                  f"Which train does {name} take to work?",
                  f"The timetable changed, my train is at {t2} now."),
            _Node(f"I grab a coffee at {cafe} by {city} station before work.",
                  f"Where does {name} get coffee before work?",
                  f"{cafe} closed, I get coffee at the office now."),
        ]
    if fam == 1:
        gym, gym2 = rng.sample(_GYMS, 2)
        coach = rng.choice(NAMES)
        return [
            _Node(f"I live in {city} now.", f"Where does {name} live?",
                  f"I moved out of {city}, I live in {city2} now."),
            _Node(f"I joined {gym} round the corner from my flat in {city}.",
                  f"Which gym does {name} go to?",
                  f"I cancelled {gym} and joined {gym2} instead."),
            _Node(f"My spin class at {gym} is every {d1} at {t1}.",
                  f"When is {name}'s spin class?",
                  f"Spin class moved to {d2}s at {t2}."),
            _Node(f"My trainer in that {d1} spin class is {coach}.",
                  f"Who is {name}'s spin trainer?",
                  f"{coach} doesn't teach spin anymore, we have a new trainer."),
        ]
    if fam == 2:
        partner = _draw_other(rng, lambda r: r.choice(NAMES), name, other)
        h1, h2 = rng.sample(_HOTELS, 2)
        return [
            _Node(f"I've been dating {partner} for a few months.", f"Who is {name} dating?",
                  f"{partner} and I broke up."),
            _Node(f"{partner} and I are going to {city} in {month}.",
                  f"Where is {name} travelling in {month}?",
                  f"{partner} and I cancelled the {city} trip."),
            _Node(f"We booked the {h1} in {city} for the trip with {partner}.",
                  f"Which hotel did {name} book?",
                  f"The {h1} cancelled our booking, we're at the {h2} now."),
            _Node(f"I reserved a table near the {h1} for {partner}'s birthday dinner.",
                  f"Where is {name} having {partner}'s birthday dinner?",
                  "The restaurant lost our reservation, so no dinner there."),
        ]
    if fam == 3:
        car, car2 = rng.sample(PURCHASES["car"], 2)
        friend = rng.choice(NAMES)
        return [
            _Node(f"I'm buying the {car}.", f"What car is {name} buying?",
                  f"I'm not getting the {car} after all, it's the {car2}."),
            _Node(f"I ordered a roof rack that fits the {car}.",
                  f"What did {name} order for the new car?",
                  "I returned the roof rack, didn't need it."),
            _Node(f"I'll drive the {car} with the roof box to {city} on {d1}.",
                  f"How is {name} getting to {city}?",
                  f"I'm taking the train to {city} instead of driving."),
            _Node(f"I promised {friend} a lift from {city} on {d1}.",
                  f"Who is {name} giving a lift to?",
                  f"{friend} found another lift, so I'm not picking them up."),
        ]
    if fam == 4:
        product = rng.choice(_PRODUCTS)
        v1, v2 = rng.sample(_VENUES, 2)
        speaker = rng.choice(NAMES)
        return [
            _Node(f"We're launching {product} in {month}.", f"When is {product} launching?",
                  f"The {product} launch is cancelled."),
            _Node(f"The {product} launch party is at {v1}.",
                  f"Where is the {product} launch party?",
                  f"The launch party moved from {v1} to {v2}."),
            _Node(f"I ordered fifty T-shirts for the party at {v1}.",
                  f"What did {name} order for the launch party?",
                  "I cancelled the T-shirt order."),
            _Node(f"{speaker} is handing out our T-shirts at the door.",
                  f"Who is handing out T-shirts at {name}'s party?",
                  f"{speaker} can't make it, someone else will do the door."),
        ]
    major, major2 = rng.sample(MAJORS, 2)
    uni = rng.choice(_UNIS)
    buddy = rng.choice(NAMES)
    return [
        _Node(f"I'm studying {major} at {uni}.", f"What is {name} studying?",
              f"I dropped {major}, I'm doing {major2} now."),
        _Node(f"My {major} lab is on {d1}s at {t1}.", f"When is {name}'s lab?",
              f"The lab moved to {d2}s at {t2}."),
        _Node(f"I'm in a study group for that {d1} lab with {buddy}.",
              f"Who is in {name}'s study group?",
              f"I left the study group with {buddy}."),
        _Node(f"{buddy} and I meet in the {uni} library before the lab.",
              f"Where does {name} meet {buddy}?",
              f"{buddy} and I meet online now, not in the library."),
    ]


def make_chains(
    n: int, seed: int, *, namespace_prefix: str = "chain", control_share: float = 0.4,
    mid_share: float = 0.25,
) -> list[Chain]:
    """``n`` multi-hop chains of length 2-4 (number of dependent memories, root included).

    Kinds: ``root_update`` (the root is overturned: every chain memory is invalid),
    ``mid_update`` (an inner node of a chain of length ≥ 3 is overturned: it and what depends
    on it are invalid, its ancestors stay valid), ``control_unrelated`` (an update of an
    unrelated attribute of the same person) and ``control_repeat`` (the root is restated):
    both controls leave every memory valid. Each chain has its own namespace, memories
    one day apart, the update last.
    """
    if not 0 <= control_share <= 1 or not 0 <= mid_share <= 1:
        raise ConfigError("control_share and mid_share must lie in [0, 1]")
    rng = random.Random(seed)
    base = datetime(2024, 1, 1)
    chains = []
    for i in range(n):
        length = 2 + i % 3
        name, other = _names(rng, 2)
        nodes = _chain_family(rng, name, other)[:length]
        r = rng.random()
        if r < control_share:
            kind = "control_unrelated" if rng.random() < 0.6 else "control_repeat"
        elif length >= 3 and rng.random() < mid_share:
            kind = "mid_update"
        else:
            kind = "root_update"
        ns = f"{namespace_prefix}-{seed}-{i}"
        mems = []
        start = base + timedelta(days=rng.randrange(0, 300))
        for j, node in enumerate(nodes):
            mems.append(Memory(
                id=f"{ns}:m{j}", namespace=ns, text=_turn(name, node.state),
                session_id=f"{ns}:s{j}", turn_index=0, speaker=name,
                timestamp=start + timedelta(days=j)))
        if kind == "root_update":
            updated, text = 0, nodes[0].update
        elif kind == "mid_update":
            updated = rng.randrange(1, length - 1)
            text = nodes[updated].update
        elif kind == "control_unrelated":
            updated = -1
            attr = rng.choice([a for a in ATTRIBUTES
                               if a.key in ("preference", "instrument", "pets", "age", "health",
                                            "schedule", "project")])
            text = _cap(_Draw(rng, attr).any_update())
        else:
            updated = -1
            text = "As I said, " + _lower_first(nodes[0].state)
        update = Memory(
            id=f"{ns}:u", namespace=ns, text=_turn(name, text), session_id=f"{ns}:su",
            turn_index=0, speaker=name, timestamp=start + timedelta(days=length + 1))
        edges = tuple((mems[j].id, mems[j - 1].id) for j in range(1, length))
        gold = frozenset(m.id for m in mems[updated:]) if updated >= 0 else frozenset()
        direct = frozenset({mems[updated].id}) if updated >= 0 else frozenset()
        queries = MappingProxyType({m.id: node.question for m, node in zip(mems, nodes,
                                                                          strict=True)})
        chains.append(Chain(ns, kind, length, tuple(mems), edges, update, gold, direct, queries))
    return chains
