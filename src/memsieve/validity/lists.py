"""List-valued memories for the validity generator: a to-do list and likes per category.

The attribute strata of ``generator`` hold one value per attribute ("my job is X"). Agents
also keep *lists*: open tasks, things the user likes. An item leaves a list when the user
finishes or drops a task ("I finished the grant report") or goes off a like ("I used to love
synthwave, but I'm not into it anymore"); the query asks about the whole list ("What's still
on my to-do list?", "Any music you'd recommend for me?"). The hard case is target-conditioned:
a later turn that drops *another* item of the same list, adds an item, or restates this one
leaves the target valid.

This is the §6.3 feedback loop of validity-context-layer: an error analysis of the released
verifier on the development half of Memora (weekly, the first five personas by name; see
benchmarks/PROTOCOL.md) showed it never flagged completed tasks or reversed likes. The shapes
of those cases are written here as templates with our own wording and item pools; no Memora
text or label is read (the generator reads no file).

Strata (weights in ``generator.BASE_WEIGHTS``):

- ``pos_list_drop``: the source finishes / drops the target's item (label 1);
- ``hard_list_other_item``: the source finishes / drops another item of the same list, or
  drops another like in favour of the target's (label 0);
- ``hard_list_add``: the source adds another item to the same list (label 0);
- ``hard_list_repeat``: the source restates or keeps the target's item (label 0).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import MappingProxyType

from memsieve.validity.attributes import _lines

LIST_STRATA = ("pos_list_drop", "hard_list_other_item", "hard_list_add", "hard_list_repeat")

# ============================================================================== TO-DO LIST

# "verb rest": the first word is the verb (its -ing form comes from ``_ing``). Tasks are a
# fixed list plus verb × object combinations, so that another item of the same list often
# shares the verb ("prepare the lecture notes" vs "prepare the budget review"): the item,
# not the verb, must decide.
_FIXED_TASKS = _lines("""
book a dentist appointment
renew my passport
call the insurance company
fix the leaking tap
clean out the garage
pick up the dry cleaning
return the library books
back up my laptop
file my tax return
email the landlord about the heating
register for the marathon
service the car
buy a birthday gift for my sister
sort out the photo archive
apply for the research fellowship
set up the new printer
replace the bike tyres
clear out my inbox
repaint the spare room
pay the electricity bill
get quotes for the roof repair
visit the new art museum
research summer camps for the kids
""")
_VERBS = ("prepare", "plan", "update", "review", "schedule", "finish", "organise", "write",
          "draft", "submit")
_OBJECTS = _lines("""
the grant report
the lecture notes
the quarterly budget
the team offsite
my portfolio website
the newsletter
the product launch
the client presentation
the hiring plan
the conference talk
the safety audit
the board slides
the workshop agenda
the project timeline
my CV
the annual review
the training session
the research proposal
the sales forecast
the volunteer rota
""")
TASKS = _FIXED_TASKS + tuple(f"{v} {o}" for v in _VERBS for o in _OBJECTS)
_DOUBLE = frozenset({"plan", "set", "get", "map", "shop", "run", "stop", "put"})


def _other_task(rng: random.Random, task: str) -> str:
    """Another task, half the time one with the same verb."""
    verb = task.split(" ", 1)[0]
    same = [t for t in TASKS if t != task and t.split(" ", 1)[0] == verb]
    if same and rng.random() < 0.5:
        return rng.choice(same)
    return rng.choice([t for t in TASKS if t != task])


TASK_ADDS = _lines("""
I need to {task} this week.
I still need to {task}.
Can you add "{Task}" to my to-do list?
I really should {task} soon.
Put "{Task}" on my list, please.
Remind me that I have to {task}.
Don't let me forget to {task} by Friday.
One more thing for my tasks: {task}.
I have to {task} before the weekend.
""")
TASK_DONE = _lines("""
I finished {ing}.
I finally got around to {ing} today.
I no longer need to track "{Task}" on my to-do list.
Please take "{Task}" off my list, it's done.
I was able to {task} this morning.
{Ing} is done, finally.
I've decided not to {task} after all, so drop it from my tasks.
You can remove "{Task}" from my to-do list.
All done with {ing}, one less thing to worry about.
I managed to {task} yesterday.
""")
TASK_KEEPS = _lines("""
I still haven't managed to {task}.
I keep putting off {ing}.
I started {ing} but it's nowhere near done.
Don't forget I still need to {task}.
Ugh, I need to {task} and I haven't even started.
I tried to {task} today but ran out of time.
""")
TASK_QUESTIONS = _lines("""
What's still on my to-do list?
Which tasks do I have left this week?
What do I still need to get done?
Can you remind me of my open tasks?
What's left on my list of things to do?
What am I still supposed to do this week?
""")

# ============================================================================== LIKES

# Named items, plus modifier × head items, so another like is often a near neighbour
# ("chamber music" vs "gospel music", "spy thrillers" vs "psychological thrillers").
_NAMED: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "music": _lines("""
        synthwave\nbossa nova\nMotown\nshoegaze\nbluegrass\nAfrobeat\ngrunge\nNina Simone
        Fleetwood Mac\nMiles Davis\nDolly Parton\nDaft Punk\nElla Fitzgerald\nArctic Monkeys
        sea shanties\nBritpop
    """),
    "film": _lines("""
        Wes Anderson films\nGreta Gerwig's movies\nAkira Kurosawa\nMeryl Streep\nfilm noir
        Studio Ghibli films\nBollywood musicals\nDenzel Washington\nCate Blanchett
        Paul Thomas Anderson's films\nsilent comedies
    """),
    "book": _lines("""
        Ursula K. Le Guin\nKazuo Ishiguro\nAgatha Christie\nToni Morrison\nHaruki Murakami
        Terry Pratchett\nZadie Smith\nStephen King\nMargaret Atwood\nNordic noir
    """),
    "travel": _lines("""
        Iceland\nthe Amalfi Coast\nJapan\nPatagonia\nthe Scottish Highlands\nLisbon
        Morocco\nNew Zealand\nthe Greek islands\nVietnam\nthe Dolomites\nCape Town
    """),
    "food": _lines("""
        Ethiopian food\ndim sum\nGeorgian cuisine\nKorean barbecue\nSichuan food
        omakase sushi\nNeapolitan pizza\nPeruvian ceviche\nLebanese mezze
    """),
    "topic": _lines("""
        stoic philosophy\nurban gardening\nastronomy\nbehavioural economics
        Renaissance art\nmarine biology\ncryptography\nlinguistics\nquantum computing
    """),
})
_COMPOSED: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = MappingProxyType({
    "music": (("80s", "90s", "chamber", "gospel", "Latin", "electronic", "baroque", "folk",
               "ambient", "film score"), ("music",)),
    "film": (("psychological", "spy", "legal", "erotic", "political", "Korean"), ("thrillers",)),
    "book": (("historical", "science", "literary", "crime", "climate", "Victorian"),
             ("fiction", "novels")),
    "travel": (("tropical", "alpine", "desert", "coastal", "Mediterranean", "continental"),
               ("destinations", "climates")),
    "food": (("vegan", "Thai", "Mexican", "Indian", "French"), ("restaurants", "street food")),
    "topic": (("ancient", "modern", "art", "military", "economic"), ("history",)),
})
LIKE_ITEMS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    kind: _NAMED[kind] + tuple(f"{m} {h}" for m in mods for h in heads)
    for kind, (mods, heads) in _COMPOSED.items()
})


def _other_like(rng: random.Random, kind: str, item: str, *avoid: str) -> str:
    """Another like of ``kind``, half the time one with the same last word."""
    head = item.rsplit(" ", 1)[-1]
    pool = [x for x in LIKE_ITEMS[kind] if x != item and x not in avoid]
    same = [x for x in pool if x.rsplit(" ", 1)[-1] == head]
    return rng.choice(same if same and rng.random() < 0.5 else pool)


LIKE_QUESTIONS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "music": _lines("""
        Any music you'd recommend for me?
        What should I listen to tonight, given my taste?
        Can you put together a playlist I'd enjoy?
        Recommend me some songs based on what I like.
    """),
    "film": _lines("""
        What movie should I watch this weekend?
        Any film recommendations for me?
        Can you pick a movie I would enjoy?
        Recommend me something to watch based on my taste.
    """),
    "book": _lines("""
        What should I read next?
        Can you recommend a book I'd like?
        Any reading suggestions for me?
        I need a new book, what would suit my taste?
    """),
    "travel": _lines("""
        Where should I go on my next holiday?
        Can you suggest a trip I'd enjoy?
        Any travel destination ideas for me?
        I have a week off, where should I travel?
    """),
    "food": _lines("""
        Where should I eat tonight?
        Can you suggest a restaurant I'd like?
        Any dinner ideas based on what I enjoy?
        What kind of food should I order for my birthday dinner?
    """),
    "topic": _lines("""
        Can you suggest a podcast or talk I'd find interesting?
        What topic should I read up on next?
        Recommend me a documentary on something I'm into.
        Any lecture series you think I'd enjoy?
    """),
})
LIKE_ADDS = _lines("""
I really like {x}.
I've been really enjoying {x} lately.
I love {x}, it never gets old for me.
{X} is one of my favourites.
Lately I'm really into {x}.
Honestly, I can't get enough of {x}.
I've recently discovered {x} and I love it.
""")
LIKE_DROPS = _lines("""
I used to like {x}, but I'm not into it anymore.
I don't like {x} anymore.
I've gone off {x} lately.
I used to love {x}, but lately {y} has really won me over.
I've grown out of {x}, it just doesn't do it for me anymore.
My taste has shifted, {x} feels too much for me now.
I used to think I liked {x}, but I actually don't.
I'm done with {x}, I prefer {y} these days.
{X} used to be a favourite, but not anymore.
""")
LIKE_KEEPS = _lines("""
I'm still really enjoying {x}.
{X} is still one of my favourites.
I went back to {x} last night and loved it as much as ever.
Nothing has changed, I still love {x}.
""")

_LIST_PREFIXES = ("Speaking of which, ", "That reminds me, ", "Oh, by the way, ",
                  "That's fair. ", "Funny you mention that, ", "Anyway, ", "You know, ")


def _ing(task: str) -> str:
    verb, _, rest = task.partition(" ")
    if verb in _DOUBLE:
        ing = verb + verb[-1] + "ing"
    elif verb.endswith("e") and not verb.endswith("ee"):
        ing = verb[:-1] + "ing"
    else:
        ing = verb + "ing"
    return f"{ing} {rest}".strip()


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _task_fields(task: str) -> dict[str, str]:
    return {"task": task, "Task": _cap(task), "ing": _ing(task), "Ing": _cap(_ing(task))}


def _like_fields(x: str, y: str) -> dict[str, str]:
    return {"x": x, "X": _cap(x), "y": y}


_LOWER_OK = frozenset({"Can", "Put", "Remind", "Don't", "One", "Please", "You", "All", "Ugh",
                       "Lately", "Honestly", "My", "Nothing"})


def _noisy(rng: random.Random, text: str) -> str:
    """Sometimes a conversational lead-in; the first letter lowered only for template words."""
    if rng.random() >= 0.35:
        return text
    first = text.split(" ", 1)[0].rstrip(",.!")
    return rng.choice(_LIST_PREFIXES) + (text[:1].lower() + text[1:] if first in _LOWER_OK
                                         else text)


def list_example(rng: random.Random, stratum: str) -> tuple[str, str, str, str]:
    """One (query, source, target, attribute) of a list stratum, the user speaking."""
    if stratum not in LIST_STRATA:
        raise ValueError(f"not a list stratum: {stratum!r}")
    if rng.random() < 0.35:  # to-do list
        x = rng.choice(TASKS)
        y = _other_task(rng, x)
        target = rng.choice(TASK_ADDS).format(**_task_fields(x))
        query = rng.choice(TASK_QUESTIONS)
        if stratum == "pos_list_drop":
            source = rng.choice(TASK_DONE).format(**_task_fields(x))
        elif stratum == "hard_list_other_item":
            source = rng.choice(TASK_DONE).format(**_task_fields(y))
        elif stratum == "hard_list_add":
            source = rng.choice(TASK_ADDS).format(**_task_fields(y))
        else:
            source = rng.choice(TASK_KEEPS).format(**_task_fields(x))
        attribute = "todo_list"
    else:
        kind = rng.choice(sorted(LIKE_ITEMS))
        x = rng.choice(LIKE_ITEMS[kind])
        y = _other_like(rng, kind, x)
        z = _other_like(rng, kind, x, y)
        target = rng.choice(LIKE_ADDS).format(**_like_fields(x, y))
        query = rng.choice(LIKE_QUESTIONS[kind])
        if stratum == "pos_list_drop":
            source = rng.choice(LIKE_DROPS).format(**_like_fields(x, y))
        elif stratum == "hard_list_other_item":
            # another like dropped, sometimes in favour of the target's item
            source = rng.choice(LIKE_DROPS).format(**_like_fields(y, x if rng.random() < 0.4
                                                                  else z))
        elif stratum == "hard_list_add":
            source = rng.choice(LIKE_ADDS).format(**_like_fields(y, z))
        else:
            source = rng.choice(LIKE_KEEPS).format(**_like_fields(x, y))
        attribute = f"likes_{kind}"
    return query, _noisy(rng, source), _noisy(rng, target), attribute
