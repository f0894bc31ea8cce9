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
pos_explicit                0.09   names the old and the new value ("left X, now at Y")
pos_new_value               0.11   states a new value only ("I teach at Oakwood now")
pos_ended *                 0.05   ends the old value, no new one ("I quit my job")
pos_correction *            0.04   corrects it ("correction: Y, not X")
pos_compound *              0.05   target states two attributes; the source updates the one
                                   the query asks about
pos_reported *              0.04   another speaker reports the subject's change
hard_other_attribute        0.10   same person, another attribute changes (scope mismatch;
                                   includes the same kind with another object: a different
                                   class's time, favourite drink vs favourite food)
hard_query_scope            0.06   compound target; the source updates the *other* attribute
hard_repeat                 0.06   restates or confirms the same value (temporal non-conflict)
hard_detail                 0.06   adds an unrelated detail about the same value
hard_other_person           0.07   a different speaker changes the same attribute
hard_relative               0.05   the same speaker reports a relative's change
hard_tentative              0.05   considers or declines a change, nothing changes
hard_history_query          0.02   a real overturn, but the query asks for the earlier value
easy_chitchat               0.15   unrelated chit-chat
=========================  ======  =====================================================

Positives 0.38, hard negatives 0.47, easy negatives 0.15. ``*`` marks the rare positives.
The training mix (``training_weights``) multiplies hard negatives by 4 and rare positives by
3 (§6.2: ``hard_focus_multiplier=4``, ``pos_multiplier=3``), giving about 27% positives, 68%
hard and 5% easy negatives; the trainer then balances the two classes with a weighted
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

``make_chains(n, seed)`` builds the multi-hop benchmark (§10): chains of 2-4 dependent
memories ("works at Acme" → "office in Acme's Leeds building" → "7:10 train to Leeds"), an
update of the root (all invalid) or of an inner node (it and its descendants invalid), and
valid controls (an update of an unrelated attribute, or a restatement of the root: none
invalid).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from memsieve.errors import ConfigError
from memsieve.types import Memory


def _lines(block: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in block.strip().splitlines() if s.strip())


def _csv(block: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in block.replace("\n", " ").split(",") if s.strip())


# ============================================================================== STRATA

BASE_WEIGHTS: Mapping[str, float] = MappingProxyType({
    "pos_explicit": 0.09,
    "pos_new_value": 0.11,
    "pos_ended": 0.05,
    "pos_correction": 0.04,
    "pos_compound": 0.05,
    "pos_reported": 0.04,
    "hard_other_attribute": 0.10,
    "hard_query_scope": 0.06,
    "hard_repeat": 0.06,
    "hard_detail": 0.06,
    "hard_other_person": 0.07,
    "hard_relative": 0.05,
    "hard_tentative": 0.05,
    "hard_history_query": 0.02,
    "easy_chitchat": 0.15,
})
RARE_POSITIVES = frozenset({"pos_ended", "pos_correction", "pos_compound", "pos_reported"})
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


# ============================================================================== POOLS

NAMES = _lines("""
Sam Alex Jordan Taylor Morgan Casey Riley Jamie Avery Quinn Priya Arjun Mei Wei Yuki Hiro
Fatima Omar Aisha Yusuf Lena Jonas Sofia Mateo Lucia Diego Chloe Noah Emma Liam Olivia Ethan
Ava Mason Isla Leo Zara Kai Nadia Tomas Ingrid Lars Freya Bjorn Amara Kwame Zainab Tunde
Chidi Ngozi Rohan Ananya Vikram Meera Kenji Sakura Min-jun Ji-woo Hana Farid Leila Reza
Darius Elif Emre Selin Marco Giulia Luca Chiara Pierre Camille Hugo Manon Klaus Greta Felix
Anya Dmitri Olga Pavel Ivana Marek Zofia Kasia Bogdan Mihai Elena Nikos Eleni Yara Samir
Rania Tariq Hamza Layla Kofi Abena Thabo Lerato Sipho Naledi Ravi Sunita Deepak Kavya Tao
Lin Jun Xiu Bao Carlos Ana Pedro Beatriz Rafael Gabriela Ines Joao Sean Niamh Ciaran Aoife
Rhys Cerys Owen Bethan Fraser Iona Callum Morven Hannah Ben Lucy Tom Grace Jack Ruby Harry
Mia Oscar Ella George Alice Max Evie Finn Rosa Ivan Nora Emil Vera Otto Ada Milo Iris
""".replace("\n", " ").replace(" ", "\n"))
RELATIVES = _csv("""
sister, brother, cousin, mum, dad, best friend, roommate, neighbour, colleague, flatmate,
uncle, aunt, son, daughter, friend, old schoolmate
""")
_ORG_A = _lines("""
Brightwave Northgate Bluebird Oakridge Silverline Redwood Summit Harbor Pinecrest Evergreen
Lakeside Crescent Ironbridge Maple Starling Westbrook Riverside Highland Sunrise Granite
Copperleaf Foxglove Kestrel Meridian Orchard Willow Bramble Cobalt Juniper Larkspur
""".replace(" ", "\n"))
_ORG_B = _lines("""
Labs Logistics Bank Hospital Clinic Studios Media Foods Systems Insurance Academy Hotel
Motors Pharma Analytics Architects Bakery Consulting Energy Robotics
""".replace(" ", "\n"))
ORGS_EXTRA = _csv("""
Google, Amazon, IKEA, Tesco, the city council, the public library, St. Mary's Hospital, the
local high school, a small startup, the university, the post office, a law firm downtown, the
airport, a vet clinic, the fire station
""")
ROLES = _csv("""
nurse, teacher, software engineer, accountant, barista, chef, graphic designer, paramedic,
pharmacist, architect, data analyst, electrician, lawyer, librarian, mechanic,
physiotherapist, dentist, journalist, marketing manager, plumber, product manager,
receptionist, sales rep, social worker, vet, web developer, project manager, HR officer, lab
technician, translator, personal trainer, photographer, pilot, flight attendant, bus driver,
carpenter, baker, police officer, firefighter, researcher, lecturer, UX designer, copywriter,
bartender, estate agent, civil engineer, dietitian, radiographer, midwife, game developer,
tour guide, store manager, recruiter, logistics coordinator
""")
CITIES = _csv("""
Leeds, Manchester, Bristol, Glasgow, Edinburgh, Cardiff, Dublin, London, York, Brighton,
Berlin, Munich, Hamburg, Paris, Lyon, Marseille, Madrid, Barcelona, Valencia, Lisbon, Porto,
Rome, Milan, Turin, Vienna, Zurich, Amsterdam, Rotterdam, Brussels, Copenhagen, Oslo,
Stockholm, Helsinki, Warsaw, Krakow, Prague, Budapest, Athens, Istanbul, Toronto, Vancouver,
Montreal, Boston, Chicago, Seattle, Denver, Austin, Atlanta, Portland, San Diego, New York,
Miami, Mexico City, Bogota, Lima, Santiago, Buenos Aires, Sao Paulo, Cape Town, Nairobi,
Lagos, Accra, Cairo, Dubai, Mumbai, Bangalore, Delhi, Singapore, Bangkok, Hanoi, Seoul, Tokyo,
Osaka, Taipei, Shanghai, Sydney, Melbourne, Auckland, Wellington, Perth
""")
DAYS = _csv("""
Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday
""")
TIMES = _csv("""
7am, 7:30am, 8am, 9am, 10am, 11:30am, noon, 1pm, 2pm, 3:30pm, 4pm, 5pm, 6pm, 6:30pm, 7pm,
7:45pm, 8pm, 9pm
""")
MONTHS = _csv("""
January, February, March, April, May, June, July, August, September, October, November,
December
""")
ACTIVITIES = _csv("""
yoga class, piano lesson, team meeting, football practice, book club, dance class, therapy
session, Spanish class, swimming lesson, choir rehearsal, climbing session, pottery class,
guitar lesson, French class, running club, boxing class, art class, chess club, volunteering
shift, driving lesson
""")
PREFS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "food": _lines("sushi\npizza\nramen\ntacos\ncurry\npho\npaella\nlasagne\ndumplings\n"
                   "falafel\nbiryani\nburgers\npad thai\ngnocchi\nfish and chips\nbibimbap"),
    "colour": _lines("blue\ngreen\nred\nyellow\npurple\norange\nteal\nblack\npink\nnavy\n"
                     "burgundy\nmint green\nmustard yellow\ngrey"),
    "music genre": _lines("jazz\nhip hop\nclassical\ntechno\nfolk\nmetal\nreggae\nK-pop\n"
                          "country\nblues\nindie rock\nsoul\npunk\nambient"),
    "film genre": _lines("horror\ncomedy\nsci-fi\ndocumentaries\nthrillers\nromcoms\n"
                         "westerns\nanime\nmusicals\nfantasy\nwar films\ncrime dramas"),
    "sport": _lines("tennis\nbasketball\nrugby\ncricket\nbadminton\nswimming\ncycling\n"
                    "volleyball\nclimbing\nsurfing\ngolf\nhockey\ntable tennis"),
    "drink": _lines("coffee\ngreen tea\nlemonade\nkombucha\nhot chocolate\norange juice\n"
                    "chai\nmatcha\nsparkling water\nsmoothies"),
    "dessert": _lines("tiramisu\ncheesecake\nice cream\nbrownies\napple pie\nmochi\n"
                      "creme brulee\nbaklava\nchurros\npancakes"),
    "season": _lines("spring\nsummer\nautumn\nwinter"),
    "book genre": _lines("fantasy\nhistorical fiction\nmysteries\nbiographies\npoetry\n"
                         "science fiction\nromance\ntrue crime\nself-help"),
})
TRIP_WHEN = _csv("""
in the summer, next month, for the holidays, over Easter, at the end of the year, in the spring,
in March, in May, in August, in October, in December, this winter, next year
""")
PURCHASES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "car": _lines("Toyota Corolla\nHonda Civic\nTesla Model 3\nVW Golf\nKia Niro\nFord Focus\n"
                  "Mazda 3\nSkoda Octavia\nRenault Clio\nVolvo XC40\nBMW i3\nFiat 500"),
    "laptop": _lines("MacBook Air\nDell XPS 13\nThinkPad X1\nHP Spectre\nAsus Zenbook\n"
                     "Surface Laptop\nFramework laptop\nAcer Swift"),
    "phone": _lines("iPhone 15\nPixel 8\nGalaxy S24\nFairphone 5\nNothing Phone\nOnePlus 12\n"
                    "Xperia 10\nMoto G"),
    "bike": _lines("Brompton\ngravel bike\nroad bike\ne-bike\nmountain bike\ncargo bike\n"
                   "fixie\nhybrid bike"),
    "sofa": _lines("grey corner sofa\nleather couch\nsofa bed\nvelvet sofa\nIKEA Kivik\n"
                   "two-seater"),
})
CONDITIONS = (
    ("sprained ankle", "a sprained ankle"), ("broken wrist", "a broken wrist"), ("flu", "the flu"),
    ("back pain", "back pain"), ("knee injury", "a knee injury"), ("migraines", "migraines"),
    ("chest infection", "a chest infection"), ("tennis elbow", "tennis elbow"),
    ("pulled hamstring", "a pulled hamstring"), ("ear infection", "an ear infection"),
    ("cold", "a bad cold"), ("shoulder injury", "a shoulder injury"),
)
PROJECTS = _csv("""
website redesign, mobile app, kitchen renovation, thesis, quarterly report, garden shed,
novel, wedding planning, podcast, data migration, bathroom refit, marketing campaign
""")
PROJECT_STATUS = _csv("""
behind schedule, on track, on hold, almost done, finished, in testing, waiting for approval,
over budget
""")
COMMUTES = (
    ("drive", "driving"), ("take the bus", "the bus"), ("cycle", "cycling"),
    ("take the train", "the train"), ("walk", "walking"), ("take the tube", "the tube"),
    ("carpool with a colleague", "carpooling"), ("ride my scooter", "the scooter"),
    ("take the tram", "the tram"), ("get the ferry", "the ferry"),
)
INSTRUMENTS = _csv("""
piano, guitar, violin, drums, cello, saxophone, ukulele, flute, trumpet, bass guitar, harp,
clarinet
""")
MAJORS = _csv("""
biology, computer science, history, economics, law, nursing, architecture, psychology,
mechanical engineering, philosophy, chemistry, graphic design, linguistics, mathematics,
medicine, journalism
""")
CARS = _csv("""
Toyota Yaris, Honda Jazz, Ford Fiesta, VW Polo, Nissan Leaf, Tesla Model Y, Mini Cooper,
Subaru Outback, Hyundai Kona, Peugeot 208, Jeep Wrangler, old Volvo estate
""")
RELATIONSHIP = (
    ("single", "I'm single again"),
    ("in a relationship", "I'm officially in a relationship"),
    ("engaged", "I got engaged last weekend"),
    ("married", "we got married last month"),
    ("divorced", "the divorce came through"),
    ("separated", "we've separated"),
)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight")
PETS = (("cat", "cats"), ("dog", "dogs"), ("chicken", "chickens"), ("rabbit", "rabbits"),
        ("goldfish", "goldfish"), ("guinea pig", "guinea pigs"), ("parrot", "parrots"))

CHITCHAT = _lines("""
The weather has been awful all week.
Did you watch the match last night?
I can't believe it's already Friday.
I'm so tired today, barely slept.
Have you tried that new bakery on the corner?
My phone battery dies so fast these days.
Traffic was crazy this morning.
I finally finished that series everyone's talking about.
Happy birthday to your mum, by the way!
Ugh, Mondays.
That meme you sent made me laugh so hard.
I need a holiday.
Do you want to grab lunch sometime?
I've been drinking way too much coffee.
My neighbour's dog barked all night.
Just did the weekly shop, everything is so expensive.
Remember that concert we went to years ago?
I'm trying to read more books this year.
The sunset was gorgeous yesterday.
What are you up to this weekend?
I burned the toast again this morning.
My plants are finally growing.
Thanks for the recommendation, it was great.
It's been raining nonstop.
I just cleaned the whole flat.
Sorry I missed your call earlier.
I love this song.
I'm craving pancakes for some reason.
Long day, talk later?
Did you see the news about the storm?
The new episode comes out tonight.
I think I'm coming down with a cold.
Haha, that's hilarious.
Good luck with your exam tomorrow!
I tried meditating for ten minutes today.
My laptop needs an update again.
I saw a fox in the garden this morning.
We should plan a games night.
The train was delayed by twenty minutes.
I'm learning to bake sourdough, it's a disaster so far.
""")
_PREFIXES = ("Oh, ", "So, ", "Btw, ", "Okay so ", "Ha, ", "Honestly, ", "Anyway, ",
             "Just so you know, ", "Well, ")  # the next word continues the sentence
_HEADS = ("Guess what? ", "Hey! ", "Quick update: ", "News: ", "Hi! ", "Right. ")
_SUFFIXES = (" :)", " haha", "!", " lol", " :D", "!!", "... anyway.", ". Crazy, right?",
             ", love it.", ", honestly.", ", for what it's worth.", ", long story.",
             ", just so you know.", ", anyway.")
USER_SHARE = 0.3  # examples whose subject is "user" talking to "assistant" (agent transcripts)


# ============================================================================== ATTRIBUTES

Fields = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Attribute:
    """One attribute of a person and its paraphrase templates.

    ``frame`` fixes what the attribute is about (the activity of a schedule, the kind of a
    preference); ``value`` draws a value and ``new_value`` a different one. Templates are
    ``str.format`` strings over the frame and value fields; ``changes`` and ``tentatives``
    also see the old value as ``old_<field>``; ``thirds`` are third-person changes of
    ``{who}`` (a relative, or the subject reported by someone else).
    """

    key: str
    noun: str
    questions: tuple[str, ...]
    states: tuple[str, ...]
    changes: tuple[str, ...]
    news: tuple[str, ...]
    ends: tuple[str, ...]
    details: tuple[str, ...]
    tentatives: tuple[str, ...]
    thirds: tuple[str, ...]
    short: str
    value: Callable[[random.Random, Fields], Fields]
    frame: Callable[[random.Random], Fields] = lambda rng: {}
    new_value: Callable[[random.Random, Fields, Fields], Fields] | None = None
    objects: bool = False  # the frame names an object (another class, another kind of food)
    has_value: bool = True  # False: a state without a value (health): no correction, history

    def draw_new(self, rng: random.Random, frame: Fields, old: Fields) -> Fields:
        if self.new_value is not None:
            return self.new_value(rng, frame, old)
        for _ in range(100):
            new = self.value(rng, frame)
            if not old or new != old:
                return new
        raise RuntimeError(f"{self.key}: could not draw a different value")  # pragma: no cover


def _org(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return rng.choice(ORGS_EXTRA)
    return f"{rng.choice(_ORG_A)} {rng.choice(_ORG_B)}"


def _draw_other(rng: random.Random, draw: Callable[[random.Random], str], *avoid: str) -> str:
    for _ in range(1000):
        x = draw(rng)
        if x not in avoid:
            return x
    raise RuntimeError("could not draw a different value")  # pragma: no cover


def _money(rng: random.Random, lo: int, hi: int, step: int) -> int:
    return rng.randrange(lo, hi, step)


def _fmt_money(amount: int, currency: str) -> str:
    return f"{currency}{amount:,}"


def _count_phrase(n: int, pet: str, pets: str) -> str:
    word = NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)
    return f"{word} {pet if n == 1 else pets}"


def _pets_new(rng: random.Random, frame: Fields, old: Fields) -> Fields:
    n = max(1, old["n"] + rng.choice((-2, -1, 1, 1, 2, 3)))
    if n == old["n"]:
        n += 1
    return {"n": n, "count": _count_phrase(n, frame["pet"], frame["pets"])}


def _money_new(key: str, step: int) -> Callable[[random.Random, Fields, Fields], Fields]:
    def draw(rng: random.Random, frame: Fields, old: Fields) -> Fields:
        factor = rng.choice((0.8, 0.9, 1.1, 1.15, 1.2, 1.3, 1.5))
        amount = max(step, int(round(old["amount"] * factor / step)) * step)
        if amount == old["amount"]:
            amount += step
        return {"amount": amount, key: _fmt_money(amount, frame["cur"])}

    return draw


_GENERIC_QUESTIONS = _lines("""
What is {name}'s {noun} now?
What's {name}'s current {noun}?
Can you remind me of {name}'s {noun}?
""")
_MY_QUESTIONS = _lines("""
What is my {noun} now?
What's my current {noun}?
Can you remind me of my {noun}?
What did I say my {noun} is?
Tell me my {noun}.
""")
_MY_HISTORY_QUESTIONS = _lines("""
What was my {noun} before the change?
What was my old {noun}?
What {noun} did I mention originally?
""")
_HISTORY_QUESTIONS = _lines("""
What was {name}'s {noun} before the change?
What was {name}'s old {noun}?
What {noun} did {name} mention originally?
Before the update, what was {name}'s {noun}?
What did {name} first say about their {noun}?
""")
_CORRECTIONS = _lines("""
Sorry, I got that wrong earlier: {short}, not {old_short}.
Correction: it's {short}, not {old_short}. My mistake.
Wait, I misspoke before. {state}
Actually, scratch what I said. {state}
I need to correct myself: {state}
Ignore what I told you before, {short} is right, not {old_short}.
""")
_REPEATS = _lines("""
Still {short}, nothing has changed.
As I said before, {short}.
Yep, {short}, same as always.
Nothing new there: {state_lc}
Just to confirm, {short} still.
Like I mentioned, {state_lc}
""")
_REPORTS = _lines("""
Did you hear? {third}
Have you heard the news? {third}
I bumped into {name_raw} yesterday. {third}
{third} Pretty big news.
Apparently {third}
""")
_COMPOUND_JOINERS = (" Oh, and ", " Also, ", " By the way, ", " And ", " Plus, ")


def _attrs() -> tuple[Attribute, ...]:  # noqa: C901 — one table, read top to bottom
    job = Attribute(
        key="job", noun="job",
        questions=_lines("""
            Where does {name} work?
            What does {name} do for a living?
            What's {name}'s job?
            Who is {name} working for these days?
            Where is {name} employed now?
            What is {name}'s current job?
        """),
        states=_lines("""
            I just started as a {role} at {org}.
            I work as a {role} at {org}.
            I've been at {org} for a while now, working as a {role}.
            My job? I'm a {role} at {org}.
            I'm a {role}, I work for {org}.
            These days I'm working at {org} as a {role}.
        """),
        changes=_lines("""
            I left {old_org}. I'm a {role} at {org} now.
            Big news: I quit {old_org} and took a {role} job at {org}.
            No more {old_org} for me, I've moved to {org} as a {role}.
            I switched jobs, from {old_org} to {org}.
            After years as a {old_role} at {old_org}, I'm now a {role} at {org}.
        """),
        news=_lines("""
            Started my new job at {org} this week, as a {role}!
            I'm working as a {role} at {org} now.
            First day at {org} today, I'm their new {role}.
            I got hired by {org}, I start as a {role} on Monday.
            I accepted the {role} offer from {org}, starting next week.
        """),
        ends=_lines("""
            I quit my job at {old_org} yesterday.
            Got laid off from {old_org} today.
            I handed in my notice at {old_org}, last day was Friday.
            I'm unemployed now, {old_org} let me go.
            I retired from {old_org} last month.
        """),
        details=_lines("""
            My boss at {old_org} bought everyone pizza today.
            The coffee at {old_org} is terrible.
            Long shift at {old_org} today, I'm exhausted.
            There's a new {old_role} on my team at {old_org}.
            {old_org} is having its summer party next week.
            I got employee of the month at {old_org}!
        """),
        tentatives=_lines("""
            {org} has an opening for a {role}. Might apply, probably won't though.
            I was offered a job at {org} but I turned it down, I'm staying at {old_org}.
            Sometimes I dream of working at {org}.
            I had an interview at {org}, but I don't think I'll take it.
            If {old_org} doesn't give me a raise, maybe I'll look at {org} next year.
        """),
        thirds=_lines("""
            {who} just started as a {role} at {org}.
            {who} left {old_org} and now works at {org}.
            {who} got a job at {org} as a {role}.
            {who} is working at {org} now.
        """),
        short="a {role} at {org}",
        value=lambda rng, f: {"role": rng.choice(ROLES), "org": _org(rng)},
        new_value=lambda rng, f, old: {
            "role": rng.choice(ROLES) if rng.random() < 0.7 else old["role"],
            "org": _draw_other(rng, _org, old["org"])},
    )
    city = Attribute(
        key="city", noun="home city",
        questions=_lines("""
            Where does {name} live?
            Which city is {name} based in?
            Where is {name} living now?
            What city does {name} call home?
            Where's {name}'s home these days?
        """),
        states=_lines("""
            I live in {city}.
            I just moved into a flat in {city}.
            I've been living in {city} for three years.
            Home for me is {city} these days.
            I'm based in {city}.
        """),
        changes=_lines("""
            I moved from {old_city} to {city} last month.
            Goodbye {old_city}, hello {city}! Just moved.
            We finally left {old_city}, we live in {city} now.
            I'm not in {old_city} anymore, I relocated to {city}.
        """),
        news=_lines("""
            I just moved to {city}.
            I live in {city} now.
            Unpacked the last boxes in my new place in {city}.
            We signed the lease on a flat in {city}, moving in this weekend.
            Settling into life in {city}.
        """),
        ends=_lines("""
            I moved out of {old_city} for good.
            I sold my place in {old_city}, I'm living out of a suitcase for now.
            I don't live in {old_city} anymore.
        """),
        details=_lines("""
            The trams in {old_city} are always late.
            Found a great cafe near my place in {old_city}.
            It's freezing in {old_city} today.
            There's a festival in {old_city} this weekend.
            My rent in {old_city} went up a little.
        """),
        tentatives=_lines("""
            I'd love to live in {city} someday.
            We looked at flats in {city}, but we're staying in {old_city}.
            {city} is tempting, but I'm not moving.
            My partner wants to move to {city}, maybe in a few years.
            Visiting {city} next week, just for a holiday.
        """),
        thirds=_lines("""
            {who} just moved to {city}.
            {who} left {old_city} and lives in {city} now.
            {who} relocated to {city} last month.
        """),
        short="in {city}",
        value=lambda rng, f: {"city": rng.choice(CITIES)},
    )

    def partner_value(rng: random.Random, f: Fields) -> Fields:
        return {"partner": rng.choice(NAMES)}

    partner = Attribute(
        key="partner", noun="partner",
        questions=_lines("""
            Who is {name} dating?
            Who's {name}'s partner?
            Who is {name} seeing at the moment?
            What's the name of {name}'s partner?
            Who is {name} in a relationship with?
        """),
        states=_lines("""
            I've been dating {partner} for a few months.
            My partner {partner} is the best.
            {partner} and I have been together since spring.
            I'm seeing someone, their name is {partner}.
            {partner} is my partner, we met at work.
        """),
        changes=_lines("""
            {old_partner} and I broke up. I'm with {partner} now.
            After {old_partner}, I never thought I'd date again, but I'm seeing {partner}.
            I ended things with {old_partner}; {partner} and I are together now.
        """),
        news=_lines("""
            {partner} and I are officially a couple!
            I'm dating {partner} now.
            Went on a third date with {partner}, I think we're official.
            I have a new partner, {partner}.
        """),
        ends=_lines("""
            {old_partner} and I split up last week.
            {old_partner} dumped me.
            It's over with {old_partner}.
            I broke up with {old_partner}.
        """),
        details=_lines("""
            {old_partner} cooked dinner for me tonight.
            {old_partner} and I watched a film last night.
            {old_partner}'s birthday is coming up, any gift ideas?
            {old_partner} is away for work this week, I miss them.
        """),
        tentatives=_lines("""
            {partner} asked me out, but I said no, I'm happy with {old_partner}.
            {partner} flirted with me at the party, awkward.
            My friends want to set me up with {partner}, but I'm with {old_partner}.
        """),
        thirds=_lines("""
            {who} is dating {partner} now.
            {who} broke up with {old_partner} and is seeing {partner}.
            {who} got together with {partner}.
        """),
        short="with {partner}",
        value=partner_value,
    )
    relationship = Attribute(
        key="relationship", noun="relationship status",
        questions=_lines("""
            What is {name}'s relationship status?
            Is {name} married?
            Is {name} single or taken?
            Is {name} engaged?
        """),
        states=_lines("""
            I'm {status}.
            I've been {status} for a while now.
            Just so you know, I'm {status}.
            Yes, I'm {status}.
        """),
        changes=_lines("""
            I'm not {old_status} anymore, {event}.
            Update: {event}, so I'm {status} now.
            {event}! No longer {old_status}.
        """),
        news=_lines("""
            Big news, {event}!
            {event}, so I'm {status} now.
            Officially {status} as of this week.
        """),
        ends=_lines("""
            I'm not {old_status} anymore.
            That's all over, I'm no longer {old_status}.
        """),
        details=_lines("""
            Being {old_status} has its ups and downs.
            People keep asking about me being {old_status}, it's funny.
            My mum has opinions about me being {old_status}.
        """),
        tentatives=_lines("""
            I sometimes wonder what being {status} would be like.
            My friend just got {status}, not me though.
            Everyone assumes I'm {status}, but I'm still {old_status}.
        """),
        thirds=_lines("""
            {who} is {status} now.
            {who} got {status} recently.
        """),
        short="{status}",
        value=lambda rng, f: dict(zip(("status", "event"), rng.choice(RELATIONSHIP),
                                      strict=True)),
    )
    age = Attribute(
        key="age", noun="age",
        questions=_lines("""
            How old is {name}?
            What is {name}'s age?
            How old is {name} now?
        """),
        states=_lines("""
            I'm {age} years old.
            I'm {age}.
            I just turned {age}.
            At {age}, I feel ancient.
        """),
        changes=_lines("""
            It was my birthday yesterday, {age} now instead of {old_age}.
            No longer {old_age}, I turned {age} this week.
            Goodbye {old_age}, hello {age}!
        """),
        news=_lines("""
            I turned {age} yesterday.
            Just had my birthday, I'm {age} now!
            Officially {age} as of today.
        """),
        ends=_lines("""
            I'm not {old_age} anymore, had my birthday last week.
        """),
        details=_lines("""
            Being {old_age} is great, honestly.
            My back hurts, I'm only {old_age}!
            When I was younger than {old_age} I never stretched.
        """),
        tentatives=_lines("""
            I'll be {age} next year, scary.
            My brother is {age}, I'm still {old_age}.
            People think I look {age}, but I'm {old_age}.
        """),
        thirds=_lines("""
            {who} just turned {age}.
            {who} is {age} now.
        """),
        short="{age}",
        value=lambda rng, f: {"age": rng.randrange(18, 80)},
        new_value=lambda rng, f, old: {"age": old["age"] + 1},
    )
    salary = Attribute(
        key="salary", noun="salary",
        questions=_lines("""
            How much does {name} earn?
            What is {name}'s salary?
            How much money does {name} make a year?
            What does {name} get paid?
        """),
        states=_lines("""
            I make {salary} a year.
            My salary is {salary}.
            I earn about {salary} annually.
            I'm on {salary} a year.
        """),
        changes=_lines("""
            Got a raise! My salary went from {old_salary} to {salary}.
            They cut my pay from {old_salary} to {salary}.
            My salary changed: {salary} now instead of {old_salary}.
        """),
        news=_lines("""
            I'm on {salary} now after the promotion.
            New contract: {salary} a year.
            My pay is {salary} from this month.
        """),
        ends=_lines("""
            I'm not earning {old_salary} anymore, I'm between jobs.
            No more {old_salary} salary, I went freelance with no fixed pay.
        """),
        details=_lines("""
            My {old_salary} salary barely covers rent.
            Payday tomorrow, thank god.
            I put part of my salary into savings every month.
        """),
        tentatives=_lines("""
            I'm going to ask for {salary} at my review next month.
            A recruiter offered {salary}, but I'm not moving.
            I wish I made {salary}.
        """),
        thirds=_lines("""
            {who} got a raise to {salary}.
            {who} earns {salary} now.
        """),
        short="{salary} a year",
        frame=lambda rng: {"cur": rng.choice(("$", "£", "€"))},
        value=lambda rng, f: (lambda a: {"amount": a, "salary": _fmt_money(a, f["cur"])})(
            _money(rng, 20_000, 150_000, 1_000)),
        new_value=_money_new("salary", 1_000),
    )
    pets = Attribute(
        key="pets", noun="number of {pets}",
        questions=_lines("""
            How many {pets} does {name} have?
            How many {pets} live with {name}?
            What's the number of {pets} {name} owns?
        """),
        states=_lines("""
            I have {count}.
            We've got {count} at home.
            I own {count} and they're a handful.
            Living with {count} is chaos.
        """),
        changes=_lines("""
            We adopted more, so I have {count} now instead of {old_count}.
            I used to have {old_count}, now it's {count}.
            We rehomed some, we're down from {old_count} to {count}.
        """),
        news=_lines("""
            I have {count} now!
            We're a household of {count} these days.
            Update on the {pets}: we have {count} now.
        """),
        ends=_lines("""
            I had to rehome all my {pets}, the flat is so quiet now.
            I don't have any {pets} anymore.
        """),
        details=_lines("""
            One of my {pets} knocked a glass off the table again.
            Vet bills for my {pets} are brutal.
            My {pets} love the new toy I bought.
        """),
        tentatives=_lines("""
            Thinking about getting another {pet}... maybe not.
            The shelter has a cute {pet}, but we can't take more.
            My kid keeps asking for more {pets}, the answer is no.
        """),
        thirds=_lines("""
            {who} has {count} now.
            {who} adopted some {pets}, {count} in total.
        """),
        short="{count}",
        objects=True,
        frame=lambda rng: dict(zip(("pet", "pets"), rng.choice(PETS), strict=True)),
        value=lambda rng, f: (lambda n: {"n": n, "count": _count_phrase(n, f["pet"], f["pets"])})(
            rng.randrange(1, 6)),
        new_value=_pets_new,
    )
    rent = Attribute(
        key="rent", noun="rent",
        questions=_lines("""
            How much rent does {name} pay?
            What is {name}'s monthly rent?
            How much is {name}'s rent?
        """),
        states=_lines("""
            My rent is {rent} a month.
            I pay {rent} in rent every month.
            Rent is {rent}, which is a lot.
        """),
        changes=_lines("""
            The landlord raised my rent from {old_rent} to {rent}.
            My rent went from {old_rent} to {rent}.
            Good news, my rent dropped from {old_rent} to {rent}.
        """),
        news=_lines("""
            New lease signed, rent is {rent} now.
            I'm paying {rent} a month now.
        """),
        ends=_lines("""
            I don't pay rent anymore, I bought a place.
            No more {old_rent} rent, I moved back in with my parents.
        """),
        details=_lines("""
            Paid the {old_rent} rent today, ouch.
            My landlord finally fixed the boiler.
            Rent day again, where does the money go.
        """),
        tentatives=_lines("""
            The landlord said rent might go up to {rent} next year, nothing confirmed.
            A flat for {rent} came up, but I'm staying put.
        """),
        thirds=_lines("""
            {who} pays {rent} in rent now.
            {who}'s rent went up to {rent}.
        """),
        short="{rent} a month",
        frame=lambda rng: {"cur": rng.choice(("$", "£", "€"))},
        value=lambda rng, f: (lambda a: {"amount": a, "rent": _fmt_money(a, f["cur"])})(
            _money(rng, 400, 3_000, 50)),
        new_value=_money_new("rent", 50),
    )
    schedule = Attribute(
        key="schedule", noun="{activity} time",
        questions=_lines("""
            When is {name}'s {activity}?
            What day is {name}'s {activity} on?
            What time is {name}'s {activity}?
            When does {name} go to their {activity}?
        """),
        states=_lines("""
            My {activity} is on {day}s at {time}.
            I have my {activity} every {day} at {time}.
            For me, {activity} is on {day}s, {time}.
            I go to my {activity} on {day} at {time} each week.
        """),
        changes=_lines("""
            They moved my {activity} from {old_day} to {day}, at {time} now.
            My {activity} is no longer on {old_day}s, it's {day}s at {time}.
            Schedule change: {activity} moved to {day} at {time} instead of {old_time}.
        """),
        news=_lines("""
            My {activity} is on {day}s at {time} from now on.
            There's a new slot for my {activity}: {day}, {time}.
            They rescheduled my {activity} to {day} at {time}.
        """),
        ends=_lines("""
            My {activity} got cancelled for good.
            I stopped going to my {activity}.
            I quit my {activity}.
        """),
        details=_lines("""
            My {activity} was really fun this {old_day}.
            The teacher at my {activity} is brilliant.
            I was late to {activity} again.
            We had a substitute at {activity} on {old_day}.
        """),
        tentatives=_lines("""
            They might move my {activity} to {day}, nothing decided.
            I asked if my {activity} could be on {day}s, they said no.
            There's a {day} {time} {activity} too, but I'll keep mine.
        """),
        thirds=_lines("""
            {who}'s {activity} moved to {day}s at {time}.
            {who} goes to the {activity} on {day}s at {time} now.
        """),
        short="{day}s at {time}",
        objects=True,
        frame=lambda rng: {"activity": rng.choice(ACTIVITIES)},
        value=lambda rng, f: {"day": rng.choice(DAYS), "time": rng.choice(TIMES)},
    )
    preference = Attribute(
        key="preference", noun="favourite {kind}",
        questions=_lines("""
            What is {name}'s favourite {kind}?
            What {kind} does {name} like best?
            What's {name}'s top {kind} these days?
            Which {kind} does {name} love most?
        """),
        states=_lines("""
            My favourite {kind} is {fav}.
            I love {fav}, best {kind} ever.
            Nothing beats {fav} for me.
            {fav} is my favourite {kind}, no contest.
        """),
        changes=_lines("""
            I used to love {old_fav} but {fav} is my favourite {kind} now.
            I'm over {old_fav}, {fav} is my new favourite {kind}.
            Forget {old_fav}, I'm all about {fav} now.
        """),
        news=_lines("""
            New favourite {kind}: {fav}!
            {fav} is my favourite {kind} now.
            I've become obsessed with {fav}, definitely my favourite {kind} now.
        """),
        ends=_lines("""
            I've gone off {old_fav} completely.
            I can't stand {old_fav} anymore.
            {old_fav} isn't my favourite anymore, I'm not sure what is.
        """),
        details=_lines("""
            {old_fav} always reminds me of my childhood.
            My friends tease me about how much I like {old_fav}.
            I was telling my coworker about {old_fav} today.
            Found a great article about {old_fav}.
        """),
        tentatives=_lines("""
            My friend keeps telling me to try {fav}. Not convinced.
            I tried {fav} once, didn't like it as much as {old_fav}.
            People say {fav} is amazing, maybe I'll give it a go sometime.
        """),
        thirds=_lines("""
            {who}'s favourite {kind} is {fav} now.
            {who} is obsessed with {fav} these days.
        """),
        short="{fav}",
        objects=True,
        frame=lambda rng: {"kind": rng.choice(sorted(PREFS))},
        value=lambda rng, f: {"fav": rng.choice(PREFS[f["kind"]])},
    )
    trip = Attribute(
        key="trip", noun="travel plan",
        questions=_lines("""
            Where is {name} going {when}?
            Where is {name} travelling {when}?
            What's {name}'s destination {when}?
            Where is {name} planning to go {when}?
        """),
        states=_lines("""
            I'm going to {dest} {when}.
            We booked a trip to {dest} {when}.
            {dest} {when}, can't wait!
            We're spending a week in {dest} {when}.
        """),
        changes=_lines("""
            Change of plans: we're going to {dest} instead of {old_dest} {when}.
            We switched the trip from {old_dest} to {dest}.
            No {old_dest} after all, we rebooked for {dest}.
        """),
        news=_lines("""
            We just booked {dest} {when}!
            The trip {when} is to {dest} now.
            Rebooked everything, it's {dest} {when}.
        """),
        ends=_lines("""
            We cancelled our {old_dest} trip.
            The {old_dest} trip is off, we're staying home.
            No holiday {when} after all, {old_dest} got cancelled.
        """),
        details=_lines("""
            Just bought a guidebook for {old_dest}.
            Need to renew my passport before {old_dest}.
            Packing list for {old_dest} is getting long.
            Found a great restaurant to try in {old_dest}.
        """),
        tentatives=_lines("""
            {dest} would be nice too, but we're not changing anything.
            My cousin suggested {dest}, maybe next year.
            I looked at flights to {dest}, too expensive, sticking with {old_dest}.
        """),
        thirds=_lines("""
            {who} is going to {dest} {when}.
            {who} booked a trip to {dest} {when}.
        """),
        short="{dest}",
        objects=True,
        frame=lambda rng: {"when": rng.choice(TRIP_WHEN)},
        value=lambda rng, f: {"dest": rng.choice(CITIES)},
    )
    purchase = Attribute(
        key="purchase", noun="{item} choice",
        questions=_lines("""
            What {item} is {name} planning to buy?
            Which {item} is {name} getting?
            What {item} did {name} decide on?
        """),
        states=_lines("""
            I'm going to buy the {model}.
            I've decided on the {model} as my new {item}.
            Getting a {model}, ordering it next week.
            My next {item} will be the {model}.
        """),
        changes=_lines("""
            Changed my mind: getting the {model} instead of the {old_model}.
            Not the {old_model} anymore, I'm going with the {model}.
            I cancelled the {old_model} order and went for the {model}.
        """),
        news=_lines("""
            I ordered the {model}!
            Final decision on the {item}: the {model}.
            I'm buying the {model} now.
        """),
        ends=_lines("""
            I'm not buying a new {item} after all.
            Scrapped the {old_model} plan, keeping my old {item}.
        """),
        details=_lines("""
            Watched a review of the {old_model} last night.
            The {old_model} comes in a nice colour.
            Saving up for the {old_model}, almost there.
        """),
        tentatives=_lines("""
            The {model} is on sale, tempting, but I'm sticking with my choice.
            My friend swears by the {model}. Not for me.
            I looked at the {model} in the shop, but no.
        """),
        thirds=_lines("""
            {who} is buying the {model}.
            {who} decided on the {model}.
        """),
        short="the {model}",
        objects=True,
        frame=lambda rng: {"item": rng.choice(sorted(PURCHASES))},
        value=lambda rng, f: {"model": rng.choice(PURCHASES[f["item"]])},
    )
    health = Attribute(
        key="health", noun="{condition}",
        questions=_lines("""
            How is {name}'s {condition}?
            Is {name} still dealing with the {condition}?
            Has {name} recovered from the {condition}?
            What's the latest on {name}'s {condition}?
        """),
        states=_lines("""
            I've got {a_condition}, it's miserable.
            I'm laid up with {a_condition}.
            The doctor says it's {a_condition}, I need to rest.
            Still recovering from {a_condition}, it's slow.
        """),
        changes=_lines("""
            The {condition} got worse, I need surgery now.
            Turns out the {condition} was more serious, I'm off work for a month.
        """),
        news=_lines("""
            My {condition} has completely healed!
            Fully recovered from the {condition}.
            Doctor gave me the all-clear for the {condition}.
        """),
        ends=_lines("""
            The {condition} is gone, back to normal.
            No more {condition}, I feel great.
        """),
        details=_lines("""
            My physio is really nice, she helps with the {condition}.
            Watching lots of TV while I deal with the {condition}.
            My friends brought soup for my {condition}.
        """),
        tentatives=_lines("""
            Hoping the {condition} clears up soon.
            The doctor thinks the {condition} might improve next month.
            I wish this {condition} would go away.
        """),
        thirds=_lines("""
            {who} has recovered from the {condition}.
            {who}'s {condition} has healed.
        """),
        short="the {condition}",
        objects=True, has_value=False,
        frame=lambda rng: dict(zip(("condition", "a_condition"), rng.choice(CONDITIONS),
                                   strict=True)),
        value=lambda rng, f: {},
        new_value=lambda rng, f, old: {},
    )
    project = Attribute(
        key="project", noun="{project} status",
        questions=_lines("""
            What's the status of {name}'s {project}?
            How is {name}'s {project} going?
            Where is {name} with the {project}?
        """),
        states=_lines("""
            The {project} is {status}.
            Our {project} is {status} right now.
            Quick status: the {project} is {status}.
        """),
        changes=_lines("""
            Update on the {project}: it's {status} now, no longer {old_status}.
            The {project} went from {old_status} to {status}.
        """),
        news=_lines("""
            The {project} is {status} now.
            Latest: the {project} is {status}.
        """),
        ends=_lines("""
            We scrapped the {project} entirely.
            The {project} got cancelled.
        """),
        details=_lines("""
            Had a long meeting about the {project} today.
            My manager asked about the {project} again.
            I drew some sketches for the {project} on the train.
        """),
        tentatives=_lines("""
            If things go badly, the {project} might end up {status}.
            There's a rumour the {project} will be {status}, nothing official.
        """),
        thirds=_lines("""
            {who} says their {project} is {status} now.
            {who}'s {project} is {status}.
        """),
        short="{status}",
        objects=True,
        frame=lambda rng: {"project": rng.choice(PROJECTS)},
        value=lambda rng, f: {"status": rng.choice(PROJECT_STATUS)},
    )
    commute = Attribute(
        key="commute", noun="commute",
        questions=_lines("""
            How does {name} get to work?
            How does {name} commute?
            What's {name}'s way of getting to the office?
        """),
        states=_lines("""
            I {mode} to work every day.
            I usually {mode} to the office.
            My commute: I {mode}, takes about forty minutes.
        """),
        changes=_lines("""
            I used to {old_mode}, but now I {mode} to work.
            I don't {old_mode} anymore, I {mode} to work these days.
            Switched my commute: I {mode} instead now.
        """),
        news=_lines("""
            I've started to {mode} to work.
            These days I {mode} to the office.
        """),
        ends=_lines("""
            I work from home now, no more commute.
            I don't commute anymore, fully remote.
        """),
        details=_lines("""
            Traffic was awful on my way in today.
            I listen to podcasts on my commute.
            Got soaked on the way to work.
        """),
        tentatives=_lines("""
            Thinking I might {mode} to work in the summer.
            My colleague wants me to {mode} with him, but nah.
        """),
        thirds=_lines("""
            {who} changed commute, it's {mode_noun} now.
            {who} switched to {mode_noun} for getting to work.
        """),
        short="{mode_noun}",
        value=lambda rng, f: dict(zip(("mode", "mode_noun"), rng.choice(COMMUTES), strict=True)),
    )
    instrument = Attribute(
        key="instrument", noun="instrument",
        questions=_lines("""
            What instrument is {name} learning?
            Which instrument does {name} play?
            What is {name} practising these days, musically?
        """),
        states=_lines("""
            I'm learning the {instrument}.
            I've started {instrument} lessons.
            I play the {instrument} in a little band.
        """),
        changes=_lines("""
            I gave up the {old_instrument} and picked up the {instrument}.
            Switched from {old_instrument} to {instrument}.
        """),
        news=_lines("""
            I'm learning the {instrument} now.
            Just bought a {instrument}, lessons start Monday.
        """),
        ends=_lines("""
            I quit {old_instrument} lessons.
            Sold my {old_instrument}, music isn't for me.
        """),
        details=_lines("""
            My {old_instrument} teacher is so patient.
            Practised the {old_instrument} for an hour today.
            I need new strings or reeds or whatever for the {old_instrument}.
        """),
        tentatives=_lines("""
            I'd love to learn the {instrument} someday.
            Tried a friend's {instrument}, too hard, sticking with the {old_instrument}.
        """),
        thirds=_lines("""
            {who} is learning the {instrument} now.
            {who} took up the {instrument}.
        """),
        short="the {instrument}",
        value=lambda rng, f: {"instrument": rng.choice(INSTRUMENTS)},
    )
    studies = Attribute(
        key="studies", noun="subject of study",
        questions=_lines("""
            What is {name} studying?
            What's {name}'s major?
            Which course is {name} doing at university?
        """),
        states=_lines("""
            I'm studying {major} at uni.
            I'm in my second year of {major}.
            My degree is in {major}.
        """),
        changes=_lines("""
            I switched from {old_major} to {major}.
            Dropped {old_major}; I'm doing {major} now.
        """),
        news=_lines("""
            I've transferred into {major}.
            I'm a {major} student now.
        """),
        ends=_lines("""
            I dropped out of my {old_major} course.
            I quit uni, no more {old_major}.
        """),
        details=_lines("""
            My {old_major} exam is next week.
            Pulled an all-nighter for a {old_major} essay.
            The {old_major} lecturer is hilarious.
        """),
        tentatives=_lines("""
            I sometimes wish I'd picked {major}.
            Considered switching to {major}, decided not to.
        """),
        thirds=_lines("""
            {who} switched to {major}.
            {who} is studying {major} now.
        """),
        short="{major}",
        value=lambda rng, f: {"major": rng.choice(MAJORS)},
    )
    car = Attribute(
        key="car", noun="car",
        questions=_lines("""
            What car does {name} drive?
            What car does {name} have?
            Which car is {name} driving these days?
        """),
        states=_lines("""
            I drive a {car}.
            My car is a {car}.
            I've got a {car}, it's reliable.
        """),
        changes=_lines("""
            Sold the {old_car}, I drive a {car} now.
            Traded in my {old_car} for a {car}.
        """),
        news=_lines("""
            Just picked up my new {car}!
            I drive a {car} now.
        """),
        ends=_lines("""
            I sold my {old_car}, no car for now.
            The {old_car} got written off, I'm carless.
        """),
        details=_lines("""
            My {old_car} needs new tyres.
            Washed the {old_car} today, looks brand new.
            Someone scratched my {old_car} in the car park.
        """),
        tentatives=_lines("""
            Test drove a {car}, but I'm keeping my {old_car}.
            A {car} would be nice, maybe one day.
        """),
        thirds=_lines("""
            {who} drives a {car} now.
            {who} bought a {car}.
        """),
        short="a {car}",
        value=lambda rng, f: {"car": rng.choice(CARS)},
    )
    return (job, city, partner, relationship, age, salary, pets, rent, schedule, preference,
            trip, purchase, health, project, commute, instrument, studies, car)


ATTRIBUTES: tuple[Attribute, ...] = _attrs()
_BY_KEY = {a.key: a for a in ATTRIBUTES}
# Attribute pairs where a change of one does overturn the other (a break-up ends "in a
# relationship"; buying another car changes the car one drives): never used as each other's
# scope-mismatch negatives or together in one compound target. Everything else is: a new job
# does not overturn where someone lives (§4, the employer vs hometown example).
ENTANGLED = (
    frozenset({"partner", "relationship"}),
    frozenset({"car", "purchase"}),
)


def _independent(a: str, b: str) -> bool:
    return a != b and not any(a in g and b in g for g in ENTANGLED)


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


def _example(rng: random.Random, stratum: str) -> tuple[Example, Example | None]:
    """Draw one example of ``stratum`` (see the module docstring for what each one means).

    For the two compound strata also return the *twin*: the same target and source with the
    query on the other attribute, the opposite label and the other stratum; else ``None``.
    """
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


# ============================================================================== CHAINS


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
