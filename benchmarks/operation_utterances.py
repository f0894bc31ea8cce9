"""Single-utterance supervision for a query-blind *operation* head (validity-context-layer §5).

One utterance, one label: 1 when the speaker asserts a durable change of their own state (a
change, an end, a new value: "I traded in a Golf for a Leaf last week"), 0 when it does not — a
plan or wish ("I might switch banks"), a question, a confirmation ("Nothing's changed, I still
live in Leeds"), a temporary exception ("Just this Friday I ..."), someone else's change ("My
cousin moved to Porto"), or a reaction ("Congrats!"). It needs no query and no target, so a head
trained on it can score a memory once, when it is written.

Compositional: 28 attribute kinds, each with event phrases in a past and a base form
(``"sold {old}|sell {old}"``) and state phrases with and without "still"; every negative family
wraps the *same* event or state phrases as a positive does, so the attribute and its verbs carry
no label, only the frame around them. Values are drawn from small per-kind pools. Written after
reading the dev half of ``benchmarks/data/natural_updates.jsonl`` (never its test half), with
none of its names or values; see RESULTS.md for what that means for the dev figures.

Not in the pipeline: ``bench_operation.py`` (beside this file) trains a head on it and measures;
the head did not transfer to the test half, so this stays an experiment (RESULTS.md).
"""

from __future__ import annotations

import random

A = {}  # attribute -> dict(old/new pools, events [(past, base)], states [(state, still_state)])


def att(name, values, events, states, things=()):
    A[name] = dict(
        values=values,
        events=[tuple(e.split("|")) for e in events],
        states=[tuple(s.split("|")) for s in states],
        things=things,
    )


ORG = [
    "Acme",
    "Northwind",
    "the city hospital",
    "a small design studio",
    "the public library",
    "Harbor Bank",
    "a logistics firm",
    "the local council",
    "Greenleaf Foods",
    "a startup downtown",
    "the university",
    "Copperline",
]
att(
    "job",
    ORG,
    [
        "started at {new}|start at {new}",
        "left {old} for {new}|leave {old} for {new}",
        "quit {poss} job at {old}|quit {poss} job at {old}",
        "took the offer from {new}|take the offer from {new}",
        "handed in {poss} notice at {old}|hand in {poss} notice at {old}",
        "got hired at {new}|get hired at {new}",
        "joined {new}|join {new}",
        "retired from {old}|retire from {old}",
        "got laid off from {old}|get laid off from {old}",
        "signed a contract with {new}|sign a contract with {new}",
        "went freelance after {old}|go freelance",
        "moved over to {new}|move over to {new}",
    ],
    ["work at {v}|still work at {v}", "am employed by {v}|am still employed by {v}"],
)
att(
    "role",
    [
        "a nurse",
        "a teacher",
        "a line manager",
        "an accountant",
        "a surveyor",
        "a barista",
        "a data analyst",
        "a team lead",
        "a junior developer",
        "a night manager",
        "a bus driver",
        "a pharmacist",
    ],
    [
        "got promoted to {new}|get promoted to {new}",
        "retrained as {new}|retrain as {new}",
        "became {new}|become {new}",
        "stepped down as {old}|step down as {old}",
        "switched from being {old} to {new}|switch from {old} to {new}",
    ],
    ["am {v}|am still {v}", "work as {v}|still work as {v}"],
)
CITY = [
    "Leeds",
    "Lisbon",
    "Denver",
    "Toronto",
    "Bristol",
    "Osaka",
    "Austin",
    "Glasgow",
    "Porto",
    "Boise",
    "Utrecht",
    "Hobart",
]
att(
    "home",
    CITY,
    [
        "moved to {new}|move to {new}",
        "relocated to {new}|relocate to {new}",
        "moved out of {old}|move out of {old}",
        "sold {poss} house in {old}|sell {poss} house in {old}",
        "signed a lease in {new}|sign a lease in {new}",
        "packed up and left {old}|pack up and leave {old}",
        "bought a flat in {new}|buy a flat in {new}",
        "settled in {new}|settle in {new}",
    ],
    ["live in {v}|still live in {v}", "am based in {v}|am still based in {v}"],
)
att(
    "phone",
    ["07700 900123", "555-0142", "a new number", "06 12 34 56 78", "0412 555 019"],
    [
        "changed {poss} number to {new}|change {poss} number to {new}",
        "got a new phone number, {new}|get a new phone number",
        "ported {poss} number over, it's {new} now|port {poss} number",
        "dropped {poss} old number|drop {poss} old number",
    ],
    ["can be reached on {v}|can still be reached on {v}"],
)
CARS = [
    "a Jazz",
    "a Tucson",
    "a Golf",
    "an old Corolla",
    "a Model 3",
    "a Fiesta",
    "a camper van",
    "a Leaf",
]
att(
    "car",
    CARS,
    [
        "sold {old}|sell {old}",
        "traded in {old} for {new}|trade in {old} for {new}",
        "bought {new}|buy {new}",
        "picked up {new}|pick up {new}",
        "got rid of {old}|get rid of {old}",
        "scrapped {old}|scrap {old}",
        "replaced {old} with {new}|replace {old} with {new}",
        "wrote off {old}|write off {old}",
    ],
    ["drive {v}|still drive {v}"],
)
att(
    "pet",
    ["Toffee", "Biscuit", "Rex", "Luna", "Pepper", "Max", "a rescue greyhound", "two kittens"],
    [
        "lost {old}, the vet couldn't save her|lose {old}",
        "had to put {old} down|put {old} down",
        "adopted {new}|adopt {new}",
        "rehomed {old}|rehome {old}",
        "brought home {new}|bring home {new}",
        "said goodbye to {old}|say goodbye to {old}",
    ],
    ["have {v}|still have {v}"],
)
att(
    "partner",
    ["Dev", "Marcus", "Priya", "Jonas", "Elena", "Sam", "Tariq", "Hana"],
    [
        "broke up with {old}|break up with {old}",
        "married {new}|marry {new}",
        "got engaged to {new}|get engaged to {new}",
        "split from {old}|split from {old}",
        "started seeing {new}|start seeing {new}",
        "divorced {old}|divorce {old}",
        "moved in with {new}|move in with {new}",
    ],
    ["am with {v}|am still with {v}", "am dating {v}|am still dating {v}"],
)
att(
    "diet",
    ["vegan", "vegetarian", "keto", "gluten-free", "pescatarian", "dairy-free"],
    [
        "went {new}|go {new}",
        "gave up meat|give up meat",
        "stopped eating dairy|stop eating dairy",
        "started eating meat again|start eating meat again",
        "quit being {old}|quit being {old}",
        "switched to a {new} diet|switch to a {new} diet",
    ],
    ["am {v}|am still {v}", "eat {v}|still eat {v}"],
)
att(
    "studies",
    [
        "sociology",
        "geography",
        "chemistry",
        "nursing",
        "history",
        "law",
        "computer science",
        "biology",
    ],
    [
        "switched {poss} major to {new}|switch {poss} major to {new}",
        "dropped out of {old}|drop out of {old}",
        "transferred into {new}|transfer into {new}",
        "graduated in {old}|graduate in {old}",
        "enrolled in {new}|enroll in {new}",
        "changed courses from {old} to {new}|change courses from {old} to {new}",
    ],
    ["study {v}|still study {v}", "am majoring in {v}|am still majoring in {v}"],
)
att(
    "language",
    ["Portuguese", "Korean", "German", "Arabic", "Mandarin", "French", "Italian"],
    [
        "dropped {old}|drop {old}",
        "started {new} lessons|start {new} lessons",
        "gave up on {old}|give up on {old}",
        "signed up for {new} classes|sign up for {new} classes",
        "swapped {old} for {new}|swap {old} for {new}",
    ],
    ["am learning {v}|am still learning {v}", "take {v} classes|still take {v} classes"],
)
att(
    "gym",
    [
        "FitHub",
        "the climbing wall",
        "Gymbox",
        "the YMCA",
        "a boxing club",
        "the pool on Elm Street",
    ],
    [
        "cancelled {poss} membership at {old}|cancel {poss} membership at {old}",
        "joined {new}|join {new}",
        "switched gyms to {new}|switch gyms to {new}",
        "stopped going to {old}|stop going to {old}",
        "signed up at {new}|sign up at {new}",
    ],
    ["go to {v}|still go to {v}", "train at {v}|still train at {v}"],
)
att(
    "hobby",
    ["pottery", "chess", "running", "painting", "the guitar", "knitting", "salsa", "birdwatching"],
    [
        "gave up {old}|give up {old}",
        "took up {new}|take up {new}",
        "quit {old}|quit {old}",
        "got into {new}|get into {new}",
        "stopped doing {old}|stop doing {old}",
        "picked up {new}|pick up {new}",
    ],
    ["do {v} on weekends|still do {v} on weekends", "am into {v}|am still into {v}"],
)
att(
    "doctor",
    ["Dr. Park", "Dr. Mensah", "Dr. Ruiz", "Dr. Lund", "Dr. Haddad"],
    [
        "switched to {new}|switch to {new}",
        "registered with {new}|register with {new}",
        "left {old}'s practice|leave {old}'s practice",
        "changed doctors to {new}|change doctors to {new}",
    ],
    ["see {v}|still see {v}"],
)
att(
    "bank",
    ["Lloyds", "Starling", "Wells Fargo", "a credit union", "ING", "Nationwide"],
    [
        "closed {poss} account at {old}|close {poss} account at {old}",
        "moved {poss} savings over to {new}|move {poss} savings over to {new}",
        "opened an account with {new}|open an account with {new}",
        "switched banks to {new}|switch banks to {new}",
    ],
    ["bank with {v}|still bank with {v}"],
)
att(
    "provider",
    ["Sky", "Comcast", "BT", "Vodafone", "a local fibre company", "T-Mobile"],
    [
        "switched {poss} internet to {new}|switch {poss} internet to {new}",
        "cancelled {old}|cancel {old}",
        "moved {poss} phone plan to {new}|move {poss} phone plan to {new}",
        "dumped {old}|dump {old}",
        "signed up with {new}|sign up with {new}",
    ],
    ["am with {v} for internet|am still with {v} for internet"],
)
att(
    "schedule",
    ["Tuesdays at 9", "10:30", "Friday mornings", "Mondays at 11", "3pm", "every other Thursday"],
    [
        "moved {poss} standup to {new}|move {poss} standup to {new}",
        "rescheduled {poss} lessons to {new}|reschedule {poss} lessons to {new}",
        "pushed {poss} weekly call to {new}|push {poss} weekly call to {new}",
        "switched {poss} shift to {new}|switch {poss} shift to {new}",
        "changed {poss} class to {new}|change {poss} class to {new}",
    ],
    ["have standup at {v}|still have standup at {v}", "meet the team {v}|still meet the team {v}"],
)
att(
    "appointment",
    ["April 2nd", "next Tuesday", "the 22nd", "Friday at 4", "June 3rd"],
    [
        "moved {poss} dentist appointment to {new}|move {poss} dentist appointment to {new}",
        "rebooked {poss} check-up for {new}|rebook {poss} check-up for {new}",
        "cancelled {poss} appointment on {old}|cancel {poss} appointment on {old}",
        "had {poss} surgery date changed to {new}|have {poss} surgery date changed to {new}",
    ],
    ["am booked in for {v}|am still booked in for {v}"],
)
att(
    "medication",
    ["5mg", "40mg", "citalopram", "amlodipine", "metformin", "a lower dose"],
    [
        "had {poss} dose raised to {new}|have {poss} dose raised to {new}",
        "came off {old}|come off {old}",
        "got switched to {new}|get switched to {new}",
        "stopped taking {old}|stop taking {old}",
        "started on {new}|start on {new}",
        "cut {poss} dose down to {new}|cut {poss} dose down to {new}",
    ],
    ["take {v}|still take {v}", "am on {v}|am still on {v}"],
)
att(
    "hair",
    ["a bob", "long hair", "jet black", "a buzz cut", "red hair", "curls"],
    [
        "dyed {poss} hair {new}|dye {poss} hair {new}",
        "cut off {poss} {old}|cut off {poss} {old}",
        "went {new}|go {new}",
        "shaved {poss} head|shave {poss} head",
    ],
    ["have {v}|still have {v}"],
)
att(
    "name",
    ["Adeyemi", "Smith", "Kowalski", "Moreau", "my maiden name"],
    [
        "took {new} as {poss} surname|take {new} as {poss} surname",
        "changed {poss} name to {new}|change {poss} name to {new}",
        "went back to {old}|go back to {old}",
        "dropped {old} from {poss} name|drop {old} from {poss} name",
    ],
    ["go by {v}|still go by {v}"],
)
att(
    "commute",
    ["the tram", "the train", "my bike", "the bus", "the car", "an e-scooter"],
    [
        "switched to taking {new}|switch to taking {new}",
        "sold {poss} car and now take {new}|sell {poss} car and take {new}",
        "stopped driving in|stop driving in",
        "started cycling in|start cycling in",
        "gave up on {old}|give up on {old}",
    ],
    ["take {v} to work|still take {v} to work"],
)
att(
    "manager",
    ["Fiona", "Kwame", "Bruno", "Ines", "Marta", "Tom"],
    [
        "got moved to {new}'s team|get moved to {new}'s team",
        "now report to {new}|report to {new}",
        "got a new boss, {new}|get a new boss",
        "transferred out of {old}'s team|transfer out of {old}'s team",
    ],
    ["report to {v}|still report to {v}"],
)
att(
    "salary",
    ["44k", "57k", "$60,000", "a 10% raise", "minimum wage"],
    [
        "got a raise to {new}|get a raise to {new}",
        "took a pay cut to {new}|take a pay cut to {new}",
        "negotiated {poss} pay up to {new}|negotiate {poss} pay up to {new}",
    ],
    ["earn {v}|still earn {v}", "make {v}|still make {v}"],
)
att(
    "instrument",
    ["the cello", "drums", "the violin", "the piano", "bass guitar"],
    [
        "sold {poss} {old}|sell {poss} {old}",
        "switched from {old} to {new}|switch from {old} to {new}",
        "quit {old}|quit {old}",
        "started learning {new}|start learning {new}",
    ],
    ["play {v}|still play {v}"],
)
att(
    "school",
    ["Hillcrest Primary", "Elmfield School", "St. Anne's", "the Montessori", "Riverside High"],
    [
        "moved {poss} daughter to {new}|move {poss} daughter to {new}",
        "took {poss} son out of {old}|take {poss} son out of {old}",
        "enrolled {poss} kids at {new}|enroll {poss} kids at {new}",
    ],
    ["send {poss} kids to {v}|still send {poss} kids to {v}"],
)
att(
    "family",
    ["a baby girl", "a baby boy", "twins"],
    [
        "had {new}|have {new}",
        "welcomed {new}|welcome {new}",
        "became a parent|become a parent",
        "adopted a child|adopt a child",
    ],
    ["have {v}|still have {v}"],
)
att(
    "project",
    ["the Atlas migration", "the new app", "the grant proposal", "the kitchen remodel"],
    [
        "finished {old}|finish {old}",
        "shipped {old}|ship {old}",
        "handed off {old}|hand off {old}",
        "got pulled off {old}|get pulled off {old}",
        "wrapped up {old}|wrap up {old}",
        "abandoned {old}|abandon {old}",
    ],
    ["am working on {v}|am still working on {v}"],
)
att(
    "team",
    ["the Rovers", "the Lakers", "my five-a-side team", "the book club", "the choir"],
    [
        "left {old}|leave {old}",
        "quit {old}|quit {old}",
        "joined {new}|join {new}",
        "got kicked out of {old}|get kicked out of {old}",
    ],
    ["am in {v}|am still in {v}", "play for {v}|still play for {v}"],
)

WHEN = [
    "",
    "",
    "",
    " last week",
    " yesterday",
    " today",
    " this morning",
    " in March",
    " a few days ago",
    " over the weekend",
    " on Friday",
]
OPEN = [
    "",
    "",
    "",
    "So, ",
    "Big news: ",
    "Update: ",
    "Well, ",
    "Guess what, ",
    "Quick update, ",
    "FYI ",
    "Finally ",
    "Ok so ",
]
TAIL = [
    "",
    "",
    "",
    " Pretty excited.",
    " Still getting used to it.",
    " Feels weird.",
    " Long story.",
    " Best decision ever.",
    " It was time.",
    " Bit sad about it.",
    " Can't believe it.",
]
REL = [
    "sister",
    "brother",
    "cousin",
    "mum",
    "dad",
    "best friend",
    "roommate",
    "neighbour",
    "colleague",
    "girlfriend",
    "boyfriend",
    "husband",
    "wife",
    "son",
    "daughter",
    "boss",
]
PLAN = [
    "I'm thinking about whether to {b}",
    "I might {b}",
    "I'm planning to {b} at some point",
    "I want to {b}",
    "I'd love to {b}",
    "Maybe I'll {b} next year",
    "I was going to {b}, but I changed my mind",
    "I almost decided to {b}, but no",
    "I'm not going to {b} after all",
    "I decided not to {b}",
    "Someday I'll {b}",
    "If the money works out I'll {b}",
    "I keep saying I'll {b}",
    "Part of me wants to {b}",
    "I considered trying to {b}, but it's not happening",
    "My plan is to {b} eventually",
    "I was offered the chance to {b}, still deciding",
    "I dreamt that I {p}",
]
QUESTION = [
    "Should I {b}?",
    "Do you think I should {b}?",
    "Would it be crazy to {b}?",
    "What if I {p}?",
    "Is it too late to {b}?",
    "Any tips if I want to {b}?",
    "How hard is it to {b}?",
]
TEMP = [
    "Just for this week, I {s}",
    "Only today, because of the strike, I {s}",
    "For the next two weeks I {s}, then back to normal",
    "While {old} is closed for repairs I {s}",
    "Temporarily, I {s}",
    "Just this Friday I {s}",
    "Until the end of the month I {s}",
    "I'm covering for a colleague, so this week I {s}",
    "For now, while things settle, I {s}, but it's not permanent",
]
CONFIRM = [
    "Still the same: I {st}.",
    "Nothing's changed, I {st}.",
    "Yep, I {st}, as always.",
    "To answer your question, I {st}.",
    "No news really, I {st}.",
    "Honestly I {st} and I'm happy with that.",
    "People keep asking, but I {st}.",
]
REACT = [
    "Congrats on your news!",
    "That's amazing, how's it going?",
    "Oh wow, tell me more!",
    "Haha, love that.",
    "Sounds great!",
    "Good for you!",
    "Sorry to hear that.",
    "How are you feeling about it?",
    "That's a big step!",
    "Keep me posted!",
    "I'm so happy for you.",
    "Really? When did that happen?",
    "Thanks! It's been great so far.",
    "Thanks, it's been a busy week.",
]


def _poss(subj: str) -> str:
    return {"I": "my", "We": "our"}.get(subj, "their")


def example(rng: random.Random) -> tuple[str, int]:
    """One (utterance, label): an attribute, two of its values, an event and a frame."""
    name = rng.choice(list(A))
    a = A[name]
    old, new = rng.sample(a["values"], 2)
    past, base = rng.choice(a["events"])
    state, still = rng.choice(a["states"])
    kind = rng.choices(
        ["pos", "pos", "pos", "other", "plan", "question", "temp", "confirm", "react"],
        [3, 1, 1, 2, 2, 1, 1.5, 1.5, 1],
    )[0]
    subj = "We" if rng.random() < 0.15 else "I"
    poss = _poss(subj)
    f = dict(old=old, new=new, poss=poss, v=new)
    if kind == "pos":
        core = f"{subj} {past.format(**f)}{rng.choice(WHEN)}."
        if rng.random() < 0.25:
            core = f"{subj} {past.format(**f)}, so I {state.format(**{**f, 'v': new})} now."
        return rng.choice(OPEN) + core + rng.choice(TAIL), 1
    if kind == "other":
        rel = rng.choice(REL)
        hp = rng.choice(["her", "his", "their"])
        g = {**f, "poss": hp}
        who = rng.choice(
            [f"My {rel}", f"My {rel} just", rng.choice(["Jess", "Omar", "Dave", "Lina", "Kofi"])]
        )
        o = rng.choice(OPEN)
        who = who if not o else who[0].lower() + who[1:] if who.startswith("My") else who
        return o + f"{who} {past.format(**g)}{rng.choice(WHEN)}." + rng.choice(
            ["", " Wild.", " Good for them."]
        ), 0
    if kind == "plan":
        return rng.choice(PLAN).format(b=base.format(**f), p=past.format(**f)) + rng.choice(
            [".", ".", ". Not sure yet.", ". We'll see."]
        ), 0
    if kind == "question":
        return rng.choice(QUESTION).format(b=base.format(**f), p=past.format(**f)), 0
    if kind == "temp":
        return rng.choice(TEMP).format(s=state.format(**{**f, "poss": "my"}), old=old) + ".", 0
    if kind == "confirm":
        return rng.choice(CONFIRM).format(st=still.format(**{**f, "v": old, "poss": "my"})), 0
    return rng.choice(REACT), 0


def generate(n: int, seed: int) -> list[tuple[str, int]]:
    """``n`` (utterance, label) pairs; the same seed gives the same list."""
    rng = random.Random(seed)
    return [example(rng) for _ in range(n)]
