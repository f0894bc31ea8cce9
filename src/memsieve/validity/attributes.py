"""Attribute pools and paraphrase templates of the validity generator (``generator``).

Each ``Attribute`` is one property of a person (job, city, partner, ...) with its questions and
the templates of each role: a state, a change, a new value, an end, an unrelated detail, a
tentative change, a third-person change. Names, organisations, cities and values come from
the pools below. Nothing here draws an example; ``generator`` does.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any


def _lines(block: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in block.strip().splitlines() if s.strip())


def _csv(block: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in block.replace("\n", " ").split(",") if s.strip())


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
