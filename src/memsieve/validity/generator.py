"""Synthetic supervision for the validity verifier, and multi-hop chains for its benchmark.

Every example is a (query, source, target, label) quadruple (validity-context-layer §6.2, §6.4):
the *target* is an earlier first-person conversation turn ("Sam: I just started as a nurse at
Riverside Hospital"), the *source* a later turn, the *query* asks about the attribute the target
states ("Where does Sam work?"), and ``label`` is 1 when the source overturns the target for
that query. Labels come from the construction only; no evaluation set (Memora, LoCoMo) is read.

Strata and their base weights (the natural mix, used for validation and test splits):

=========================  ======  =====================================================
stratum                    weight  the source ...
=========================  ======  =====================================================
pos_explicit                0.08   names the old and the new value ("left X, now at Y")
pos_new_value               0.09   states a new value only ("I teach at Oakwood now")
pos_ended *                 0.05   ends the old value, no new one ("I quit my job")
pos_correction *            0.04   corrects it ("correction: Y, not X")
pos_compound *              0.05   target states two attributes; the source updates the one
                                   the query asks about
pos_reported *              0.04   another speaker reports the subject's change
pos_list_drop *             0.06   finishes / drops the target's item of a list (``lists``:
                                   a to-do list, likes per category; list-level query)
hard_other_attribute        0.08   same person, another attribute changes (scope mismatch;
                                   includes the same kind with another object: a different
                                   class's time, favourite drink vs favourite food)
hard_query_scope            0.05   compound target; the source updates the *other* attribute
hard_repeat                 0.05   restates or confirms the same value (temporal non-conflict)
hard_detail                 0.05   adds an unrelated detail about the same value
hard_other_person           0.06   a different speaker changes the same attribute
hard_relative               0.04   the same speaker reports a relative's change
hard_tentative              0.04   considers or declines a change, nothing changes
hard_history_query          0.02   a real overturn, but the query asks for the earlier value
hard_list_other_item        0.05   drops *another* item of the same list (target-conditioned)
hard_list_add               0.03   adds another item to the same list
hard_list_repeat            0.02   restates or keeps the target's list item
hard_reaction               0.04   a later reply about the target's news: the other
                                   speaker reacts or asks ("Congrats! How is it going?"),
                                   or the subject elaborates ("Thanks, it's been great")
easy_chitchat               0.06   unrelated chit-chat
=========================  ======  =====================================================

Positives 0.41, hard negatives 0.53, easy negatives 0.06. ``*`` marks the rare positives.
The training mix (``training_weights``) multiplies hard negatives by 4 and rare positives by
3 (§6.2: ``hard_focus_multiplier=4``, ``pos_multiplier=3``), giving about 29% positives, 69%
hard and 2% easy negatives; the trainer then balances the two classes with a weighted
cross-entropy (§6.1). ``generate(n, seed)`` gives each stratum ``floor(n * weight)`` examples,
the remainder to the largest fractional parts, and shuffles them; the same seed gives the same
data. ``pos_compound`` and ``hard_query_scope`` come as adjacent *twins* while both have
budget: the same target and source, the query on the updated or on the other attribute, so
only the query tells them apart (the query-conditioning of §6.4 and §11).

A share ``USER_SHARE`` (0.3) of examples is an agent transcript: the subject speaks as
``user``, the other speaker is ``assistant``, and the query says "the user" or, for most of
them, "my" ("What is my job now?").

Attributes (18): job, city, partner, relationship status, age, salary, pets (count), rent,
schedule (day/time of an activity), preference (favourite food, colour, music, ...), trip and
purchase plans, health, project status, commute, instrument, studies, car. Each has several
paraphrase templates per role; names (~150), organisations (~600 combinations), cities and
values are drawn from pools, so no surface string recurs often enough to be memorised.

Attribute pools and templates are in ``attributes``, list-valued memories (to-do list,
likes) in ``lists``, the multi-hop chains of the benchmark in ``chains``.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from memsieve.errors import ConfigError
from memsieve.validity.attributes import (  # noqa: F401 — NAMES, ATTRIBUTES: re-exported
    _BY_KEY,
    _COMPOUND_JOINERS,
    _CORRECTIONS,
    _GENERIC_QUESTIONS,
    _HISTORY_QUESTIONS,
    _MY_HISTORY_QUESTIONS,
    _MY_QUESTIONS,
    _REPEATS,
    _REPORTS,
    ATTRIBUTES,
    CHITCHAT,
    NAMES,
    RELATIVES,
    Attribute,
    Fields,
    _independent,
)
from memsieve.validity.lists import LIST_STRATA, list_example

# ============================================================================== STRATA

BASE_WEIGHTS: Mapping[str, float] = MappingProxyType({
    "pos_explicit": 0.08,
    "pos_new_value": 0.09,
    "pos_ended": 0.05,
    "pos_correction": 0.04,
    "pos_compound": 0.05,
    "pos_reported": 0.04,
    "pos_list_drop": 0.06,
    "hard_other_attribute": 0.08,
    "hard_query_scope": 0.05,
    "hard_repeat": 0.05,
    "hard_detail": 0.05,
    "hard_other_person": 0.06,
    "hard_relative": 0.04,
    "hard_tentative": 0.04,
    "hard_history_query": 0.02,
    "hard_list_other_item": 0.05,
    "hard_list_add": 0.03,
    "hard_list_repeat": 0.02,
    "hard_reaction": 0.04,
    "easy_chitchat": 0.06,
})
RARE_POSITIVES = frozenset({"pos_ended", "pos_correction", "pos_compound", "pos_reported",
                            "pos_list_drop"})
HARD_FOCUS_MULTIPLIER = 4
POS_MULTIPLIER = 3


def label_of(stratum: str) -> int:
    """1 for the positive strata (the source overturns the target for the query), else 0."""
    if stratum not in BASE_WEIGHTS:
        raise ConfigError(f"unknown stratum {stratum!r}; known: {', '.join(BASE_WEIGHTS)}")
    return 1 if stratum.startswith("pos_") else 0


def group_of(stratum: str) -> str:
    """``positive``, ``hard`` or ``easy``."""
    label_of(stratum)
    return {"pos": "positive", "hard": "hard", "easy": "easy"}[stratum.split("_", 1)[0]]


def training_weights() -> dict[str, float]:
    """The base weights with hard negatives ×4 and rare positives ×3 (§6.2), renormalised."""
    w = {}
    for s, x in BASE_WEIGHTS.items():
        if group_of(s) == "hard":
            x *= HARD_FOCUS_MULTIPLIER
        elif s in RARE_POSITIVES:
            x *= POS_MULTIPLIER
        w[s] = x
    total = sum(w.values())
    return {s: x / total for s, x in w.items()}


_PREFIXES = ("Oh, ", "So, ", "Btw, ", "Okay so ", "Ha, ", "Honestly, ", "Anyway, ",
             "Just so you know, ", "Well, ")  # the next word continues the sentence
_HEADS = ("Guess what? ", "Hey! ", "Quick update: ", "News: ", "Hi! ", "Right. ")
_SUFFIXES = (" :)", " haha", "!", " lol", " :D", "!!", "... anyway.", ". Crazy, right?",
             ", love it.", ", honestly.", ", for what it's worth.", ", long story.",
             ", just so you know.", ", anyway.")
USER_SHARE = 0.3  # examples whose subject is "user" talking to "assistant" (agent transcripts)


# ============================================================================== EXAMPLES


@dataclasses.dataclass(frozen=True)
class Example:
    """One supervised triple. ``target_turn < source_turn``: the source is said later."""

    query: str
    source: str
    target: str
    label: int
    stratum: str
    attribute: str
    target_turn: int
    source_turn: int


class _Draw:
    """One draw of an attribute: its frame, an old and a new value, and the render helpers."""

    def __init__(self, rng: random.Random, attr: Attribute, frame: Fields | None = None):
        self.rng, self.attr = rng, attr
        self.frame = frame if frame is not None else attr.frame(rng)
        self.old = attr.value(rng, self.frame)
        self.new = attr.draw_new(rng, self.frame, self.old)

    def fields(self, value: Fields, old: Fields | None = None, **extra: Any) -> Fields:
        f = {**self.frame, **value, **extra}
        if old is not None:
            f.update({f"old_{k}": v for k, v in old.items()})
        return f

    def fmt(self, template: str, fields: Fields) -> str:
        """Render raw: the first letter as the template or the value has it (see ``_cap``)."""
        return template.format(**fields)

    def pick(self, templates: Sequence[str], fields: Fields) -> str:
        return self.fmt(self.rng.choice(templates), fields)

    def state(self, value: Fields) -> str:
        return self.pick(self.attr.states, self.fields(value))

    def short(self, value: Fields) -> str:
        return self.attr.short.format(**self.fields(value))

    def question(self, name: str, *, history: bool = False, first_person: bool = False) -> str:
        """A question about this attribute of ``name``; ``first_person``: the user's own
        ("What is my job now?"), where the attribute's noun reads well that way."""
        nominal = self.attr.has_value and self.attr.key != "pets"
        generic = _GENERIC_QUESTIONS if nominal else ()
        pool = _HISTORY_QUESTIONS if history else self.attr.questions + generic
        if first_person and nominal:
            pool = _MY_HISTORY_QUESTIONS if history else _MY_QUESTIONS
        noun = self.attr.noun.format(**self.frame)
        return _cap(self.fmt(self.rng.choice(pool), {**self.frame, "name": name, "noun": noun}))

    # -- sources -----------------------------------------------------------------------------

    def change(self) -> str:
        return self.pick(self.attr.changes, self.fields(self.new, self.old))

    def new_value(self) -> str:
        if self.rng.random() < 0.25:  # a bare restatement with the new value is an update too
            text = self.state(self.new)
            return text[:-1] + " now." if text.endswith(".") else text
        return self.pick(self.attr.news, self.fields(self.new, self.old))

    def ended(self) -> str:
        return self.pick(self.attr.ends, self.fields(self.new, self.old))

    def any_update(self) -> str:
        r = self.rng.random()
        return self.change() if r < 0.4 else self.new_value() if r < 0.85 else self.ended()

    def correction(self) -> str:
        state = self.state(self.new)
        f = self.fields(self.new, self.old, state=_cap(state), state_lc=_lower_first(state),
                        short=self.short(self.new), old_short=self.short(self.old))
        return self.pick(_CORRECTIONS, f)

    def repeat(self) -> str:
        r = self.rng.random()
        if r < 0.3:
            return self.state(self.old)
        if r < 0.55:
            return _stillify(self.state(self.old))
        state = self.state(self.old)
        f = self.fields(self.old, state=_cap(state), state_lc=_lower_first(state),
                        short=self.short(self.old))
        return self.pick(_REPEATS, f)

    def detail(self) -> str:
        return self.pick(self.attr.details, self.fields(self.new, self.old))

    def tentative(self) -> str:
        return self.pick(self.attr.tentatives, self.fields(self.new, self.old))

    def third(self, who: str) -> str:
        return _cap(self.pick(self.attr.thirds, self.fields(self.new, self.old, who=who)))


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _common_starts() -> frozenset[str]:
    """First words of the literal templates (never a name, a place or "I"): safe to lower."""
    templates = [*CHITCHAT, *_CORRECTIONS, *_REPEATS, *_REPORTS]
    for a in ATTRIBUTES:
        templates += [*a.states, *a.changes, *a.news, *a.ends, *a.details, *a.tentatives]
    firsts = {t.split(" ", 1)[0] for t in templates if not t.startswith("{")}
    return frozenset(w for w in firsts if w != "I" and not w.startswith("I'"))


def _stillify(text: str) -> str:
    """"I live in Leeds." → "I still live in Leeds."; unchanged when no safe place is found."""
    for head, still in (("I'm ", "I'm still "), ("I ", "I still "), ("My ", None)):
        if text.startswith(head):
            if still is not None:
                return still + text[len(head):]
            if " is " in text:
                return text.replace(" is ", " is still ", 1)
    return text


def _lower_first(text: str) -> str:
    """Lower-case the first letter when the first word is an ordinary word ("My", "The")."""
    return text[:1].lower() + text[1:] if text.split(" ", 1)[0] in _COMMON else text


def _chatty(rng: random.Random, text: str) -> str:
    """Conversational noise, applied to every stratum alike so it carries no label."""
    r = rng.random()
    if r < 0.1:
        text = rng.choice(_PREFIXES) + _lower_first(text)
    elif r < 0.17:
        text = rng.choice(_HEADS) + _cap(text)
    elif r < 0.27:
        text = text.rstrip(".!") + rng.choice(_SUFFIXES)
    return _cap(text)


_COMMON = _common_starts()


def _turn(speaker: str, text: str) -> str:
    return f"{speaker}: {text}"


def _names(rng: random.Random, k: int) -> list[str]:
    return rng.sample(NAMES, k)


_REACTIONS = (
    "That's great news, {name}! I'm really happy for you.",
    "Wow, that sounds amazing! How is it going so far?",
    "I'm so proud of you, {name}. That takes guts.",
    "Oh nice! What made you decide on that?",
    "That sounds lovely. Any photos?",
    "Love that! You always find the best things.",
    "Really? Tell me more!",
    "Congrats, {name}! You deserve it.",
    "That must feel great. I remember you talking about it.",
    "Haha, that's so you. How did your family take it?",
)
_ELABORATIONS = (
    "Thanks! It's been really rewarding so far.",
    "Honestly, it's one of the best decisions I've made.",
    "Yeah, I'm still getting used to it, but I love it.",
    "It was a lot of work, but totally worth it.",
    "Thanks for asking! It's going really well.",
    "I'll send you some photos later!",
)


def _example(rng: random.Random, stratum: str) -> tuple[Example, Example | None]:
    """Draw one example of ``stratum`` (see the module docstring for what each one means).

    For the two compound strata also return the *twin*: the same target and source with the
    query on the other attribute, the opposite label and the other stratum; else ``None``.
    """
    if stratum in LIST_STRATA:
        query, source, target, key = list_example(rng, stratum)
        t_turn = rng.randrange(0, 200)
        return Example(query=query, source=_turn("user", source), target=_turn("user", target),
                       label=label_of(stratum), stratum=stratum, attribute=key,
                       target_turn=t_turn, source_turn=t_turn + rng.randrange(1, 300)), None
    pool = ATTRIBUTES
    if stratum in ("pos_correction", "hard_history_query"):
        pool = tuple(a for a in ATTRIBUTES if a.has_value)
    attr = rng.choice(pool)
    d = _Draw(rng, attr)
    name, other, rel_name = _names(rng, 3)
    user_mode = stratum != "pos_reported" and rng.random() < USER_SHARE
    first_person = user_mode and rng.random() < 0.6
    if user_mode:  # an agent transcript: the user's own memories, asked about by the user
        name, other = "user", "assistant"
    who = "the user" if user_mode else name

    def ask(draw: _Draw, *, history: bool = False) -> str:
        return draw.question(who, history=history, first_person=first_person)

    if attr.key == "partner":  # the partner is never the subject or the other speaker
        while d.old["partner"] in (name, other) or d.new["partner"] in (name, other):
            d = _Draw(rng, attr)
    target = d.state(d.old)
    query = ask(d)
    speaker = name
    twin: tuple[str, str, str] | None = None
    if stratum == "pos_explicit":
        source = d.change()
    elif stratum == "pos_new_value":
        source = d.new_value()
    elif stratum == "pos_ended":
        source = d.ended()
    elif stratum == "pos_correction":
        source = d.correction()
    elif stratum in ("pos_compound", "hard_query_scope"):
        other_attr = rng.choice([a for a in ATTRIBUTES if _independent(a.key, attr.key)])
        d2 = _Draw(rng, other_attr)
        first, second = d.state(d.old), d2.state(d2.old)
        if rng.random() < 0.5:
            first, second = second, first
        target = first + rng.choice(_COMPOUND_JOINERS) + _lower_first(second)
        source = d.any_update()  # the update always acts on ``attr``
        asks = {"pos_compound": (ask(d), attr.key),
                 "hard_query_scope": (ask(d2), other_attr.key)}
        query, key = asks[stratum]
        twin_stratum = "hard_query_scope" if stratum == "pos_compound" else "pos_compound"
        twin = (twin_stratum, *asks[twin_stratum])
        attr = _BY_KEY[key]
    elif stratum == "pos_reported":
        speaker = other
        third = d.third(name)
        source = rng.choice(_REPORTS).format(third=third, name_raw=name)
    elif stratum == "hard_other_attribute":
        d2 = None
        if attr.objects and rng.random() < 0.4:  # the same kind of attribute, another object
            for _ in range(20):
                frame = attr.frame(rng)
                if frame != d.frame:
                    d2 = _Draw(rng, attr, frame)
                    break
        if d2 is None:
            d2 = _Draw(rng, rng.choice([a for a in ATTRIBUTES if _independent(a.key, attr.key)]))
        source = d2.any_update()
    elif stratum == "hard_repeat":
        source = d.repeat()
    elif stratum == "hard_detail":
        source = d.detail()
    elif stratum == "hard_other_person":
        speaker = other
        source = d.any_update() if rng.random() < 0.8 else d.state(d.new)
    elif stratum == "hard_relative":
        who = rng.choice(RELATIVES)
        who = f"my {who} {rel_name}" if rng.random() < 0.4 else f"my {who}"
        source = d.third(who)
    elif stratum == "hard_tentative":
        source = d.tentative()
    elif stratum == "hard_history_query":
        source = d.any_update()
        query = ask(d, history=True)
    elif stratum == "hard_reaction":
        if rng.random() < 0.65:
            speaker = other
            source = rng.choice(_REACTIONS).format(name=name)
        else:
            source = rng.choice(_ELABORATIONS)
    elif stratum == "easy_chitchat":
        speaker = rng.choice((name, other))
        source = rng.choice(CHITCHAT)
    else:
        raise ConfigError(f"unknown stratum {stratum!r}")
    t_turn = rng.randrange(0, 200)
    ex = Example(
        query=query,
        source=_turn(speaker, _chatty(rng, source)),
        target=_turn(name, _chatty(rng, target)),  # _chatty capitalises the first letter
        label=label_of(stratum),
        stratum=stratum,
        attribute=attr.key,
        target_turn=t_turn,
        source_turn=t_turn + rng.randrange(1, 300),
    )
    if twin is None:
        return ex, None
    t_stratum, t_query, t_key = twin
    return ex, dataclasses.replace(ex, query=t_query, label=label_of(t_stratum),
                                   stratum=t_stratum, attribute=t_key)


def allocate(n: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Exact per-stratum counts summing to ``n``: floor of ``n·w``, remainder by largest part."""
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    unknown = [s for s in weights if s not in BASE_WEIGHTS]
    if unknown or any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ConfigError(f"weights must be non-negative over known strata; bad: {unknown}")
    total = sum(weights.values())
    exact = {s: n * w / total for s, w in weights.items()}
    counts = {s: int(x) for s, x in exact.items()}
    order = sorted(exact, key=lambda s: (-(exact[s] - counts[s]), s))
    for s in order[: n - sum(counts.values())]:
        counts[s] += 1
    return counts


def generate(
    n: int, seed: int, *, weights: Mapping[str, float] | None = None
) -> list[Example]:
    """``n`` examples in a shuffled order, ``allocate(n, weights)`` of each stratum.

    Args:
        n: number of examples.
        seed: the whole draw depends on it alone (``random.Random(seed)``).
        weights: stratum weights; the natural mix ``BASE_WEIGHTS`` by default, or
            ``training_weights()`` for the oversampled training mix.

    Example:
        >>> ex = generate(1, seed=3)[0]
        >>> ex.target_turn < ex.source_turn
        True
    """
    rng = random.Random(seed)
    counts = allocate(n, weights if weights is not None else BASE_WEIGHTS)
    strata = [s for s in BASE_WEIGHTS for _ in range(counts.get(s, 0))]
    rng.shuffle(strata)
    left = dict(counts)
    out = []
    for s in strata:
        if left[s] == 0:  # this slot was filled by a twin already
            continue
        ex, twin = _example(rng, s)
        out.append(ex)
        left[s] -= 1
        if twin is not None and left.get(twin.stratum, 0) > 0:
            out.append(twin)  # adjacent: twins usually share a length-sorted training batch
            left[twin.stratum] -= 1
    return out
