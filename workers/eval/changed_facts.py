"""The changed-facts scenario generator: a development set for recency, written for diarist.

Each person (one conversation, one home) chats with an assistant over a number of sessions
weeks apart. Among chit-chat, the person says some facts once (a sister's name, an allergy)
and some facts change from session to session: moving house, a new job, a new pet, a pet
renamed, a changed preference or hobby. Questions:

- ``single-fact``: a fact said once; evidence = that turn.
- ``changed-fact``: what is true *now*, asked with a present cue ("Which city does Maya
  live in now?", "… these days?", "… most recently?"); evidence = the newest statement,
  ``stale`` = the older ones. Recency ranking should put the newest above every stale one.
- ``changed-state``: the same, asked as a plain present-tense question ("Where does Maya
  live?", "What is Maya's favourite drink?") — a third of them. Such a question says
  nothing of time, and most questions of that form (LoCoMo's) are about facts that never
  changed, so recall weighs freshness for them only lightly: measured separately.
- ``past-event``: "when did …" / "what … before …"; the answer is an OLD value, so its
  evidence is a statement that a later one replaced — recency work must not bury it.

Deterministic: the same ``seed`` (and sizes) always gives the same dataset, byte for byte;
only :mod:`random.Random` seeded with it is used. :func:`write_layout` of
:mod:`.dataset` writes it as a folder in the layout of ``../shared/bench/locomo``.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from .dataset import Conversation, Dataset, Question, turn

ASSISTANT = "Assistant"
STATE_SHARE = 1 / 3     # changed facts asked as a plain present-tense question
TURN_SPACING = dt.timedelta(seconds=40)
FIRST_DAY = dt.datetime(2024, 1, 8, tzinfo=dt.UTC)

NAMES = ["Maya", "Jonas", "Priya", "Tomasz", "Aisha", "Lucas", "Ingrid", "Kofi", "Elena",
         "Ravi", "Sofia", "Mateo"]


@dataclass(frozen=True)
class Attribute:
    """A fact that changes: its values, how it is first said and how a change is said, and
    the questions about it (``{name}``, ``{new}``, ``{old}``, ``{extra}`` are filled in)."""

    key: str
    values: tuple[str, ...]
    first: tuple[str, ...]
    change: tuple[str, ...]
    now: tuple[str, ...]     # ways to ask what is true now, with a cue ("… now?")
    state: tuple[str, ...]   # ... as a plain present-tense question ("Where does X live?")
    before: str
    when: str
    extra: tuple[str, ...] = ("",)
    adds: bool = False       # a new value is one more (another pet), the old one still holds


ATTRIBUTES = (
    Attribute(
        "city", ("Leeds", "Porto", "Lyon", "Tallinn", "Galway", "Bergen", "Krakow", "Valencia",
                 "Ghent", "Bologna"),
        ("I live in {v}, a short walk from the old market.",
         "Home for me is {v} these days; my flat looks over the river.",
         "Life in {v} is pretty quiet, which suits me."),
        ("Big news: we packed everything up and moved to {v} last weekend!",
         "I've relocated to {v} for good. The boxes are still everywhere.",
         "We finally made the move to {v}, the new place has a balcony."),
        ("Which city does {name} live in now?", "Where is {name} living these days?"),
        ("Where does {name} live?",),
        "Where did {name} live before moving to {new}?",
        "When did {name} move to {new}?"),
    Attribute(
        "job", ("nurse", "baker", "software tester", "librarian", "bus driver",
                "chemistry teacher", "architect", "translator", "park ranger"),
        ("I work as a {v} at the moment.",
         "My job? I'm a {v}, have been for a few years.",
         "Being a {v} keeps me busy most weeks."),
        ("I started a new job this week, I'm a {v} now!",
         "I handed in my notice and from Monday I'm working as a {v}.",
         "Career change done: I got hired as a {v}."),
        ("What is {name}'s job now?", "What is {name}'s current job?"),
        ("What does {name} do for a living?",),
        "What job did {name} have before becoming a {new}?",
        "When did {name} start working as a {new}?"),
    Attribute(
        "pet", ("Biscuit", "Juniper", "Pepper", "Otis", "Clementine", "Rocket", "Hazel",
                "Noodle"),
        ("We adopted a {extra} called {v} from the shelter.",
         "Our {extra}, {v}, chewed through a slipper again."),
        ("We brought home another animal, a {extra} named {v}!",
         "Say hello to {v}, the {extra} we adopted on Saturday."),
        ("What is the name of the newest pet {name} adopted?",
         "Which pet did {name} adopt most recently?"),
        (),
        "Which pet did {name} have before adopting {new}?",
        "When did {name} adopt {new}?",
        ("rabbit", "tortoise", "parrot", "guinea pig"), adds=True),
    Attribute(
        "pet_name", ("Pickle", "Bramble", "Waffles", "Ziggy", "Mochi", "Captain", "Fennel",
                     "Pudding"),
        ("My {extra} is called {v}, he runs the house.",
         "I have a {extra} named {v}, who sleeps all day."),
        ("We gave the {extra} a new name. Everyone calls him {v} now.",
         "The {extra} has been renamed {v}, the old name never stuck."),
        ("What is {name}'s {extra} called now?",),
        ("What is the name of {name}'s {extra}?",),
        "What was {name}'s {extra} called before he was renamed {new}?",
        "When was {name}'s {extra} renamed {new}?",
        ("dog", "cat", "hamster")),
    Attribute(
        "drink", ("black coffee", "green tea", "oat flat white", "hot chocolate",
                  "rooibos tea", "sparkling water", "chai latte"),
        ("My favourite drink is {v}, I have one every morning.",
         "I can't start the day without a {v}."),
        ("I've gone off my old order; these days it's {v} for me.",
         "New habit: I switched to {v} and I'm not going back."),
        ("What does {name} like to drink these days?",),
        ("What is {name}'s favourite drink?",),
        "What was {name}'s favourite drink before {new}?",
        "When did {name} switch to {new}?"),
    Attribute(
        "hobby", ("rock climbing", "pottery", "rowing", "birdwatching", "salsa dancing",
                  "chess", "trail running", "woodworking"),
        ("My evenings are for {v}, it clears my head.",
         "My main hobby is {v}, I do it twice a week."),
        ("I've taken up {v} instead, and I love it.",
         "Guess what I do on weekends now: {v}!"),
        ("Which hobby is {name} into now?", "What does {name} do for fun these days?"),
        ("What is {name}'s hobby?",),
        "What hobby did {name} have before {new}?",
        "When did {name} take up {new}?"),
)


@dataclass(frozen=True)
class OnceFact:
    key: str
    values: tuple[str, ...]
    said: tuple[str, ...]
    question: str


ONCE_FACTS = (
    OnceFact("sister", ("Lena", "Marta", "Yuki", "Noor", "Beatriz", "Hanna"),
             ("My sister {v} is visiting next month.",
              "I had lunch with my sister {v}, we laughed for hours."),
             "What is the name of {name}'s sister?"),
    OnceFact("allergy", ("peanuts", "shellfish", "cats", "pollen", "penicillin"),
             ("Careful with recipes for me, I'm allergic to {v}.",
              "Reminder to self: my allergy to {v} flared up again."),
             "What is {name} allergic to?"),
    OnceFact("instrument", ("cello", "ukulele", "trumpet", "piano", "banjo"),
             ("I've been practising the {v} in the evenings.",
              "I played the {v} at a friend's wedding once."),
             "Which instrument does {name} play?"),
    OnceFact("car", ("a red hatchback", "a green van", "an old blue estate", "a silver scooter"),
             ("I drive {v}, it's noisy but reliable.",
              "My ride is {v}, bought it second hand."),
             "What vehicle does {name} drive?"),
    OnceFact("birthday", ("March", "July", "October", "December", "May"),
             ("My birthday is in {v}, I never plan anything.",
              "Since my birthday falls in {v}, I usually take a day off."),
             "In which month is {name}'s birthday?"),
)

CHIT_CHAT = (
    "It rained the whole morning here.", "Any tips for a quick weeknight dinner?",
    "I watched a documentary about octopuses last night.",
    "Do you know a good stretch for a stiff neck?", "The bus was late again today.",
    "I'm trying to read more before bed.", "What's a good board game for four people?",
    "My neighbour's garden is full of sunflowers.", "Can you suggest a podcast about history?",
    "I burned the toast this morning, classic.", "How long should I boil an egg?",
    "The sunset yesterday was unreal.", "I need a name for my new houseplant.",
    "Is it worth learning to touch type?", "I found an old photo album in a drawer.",
    "What's the difference between a lake and a pond?", "I finally fixed my squeaky door.",
    "I'm thinking about a weekend trip somewhere quiet.",
)

REPLIES = (
    "That sounds nice, tell me more.", "Good to know!", "Thanks for sharing that.",
    "Interesting, I'll keep that in mind.", "Oh, how lovely.", "Fair enough!",
    "Sounds like a busy week.", "I hope it goes well.", "Ha, that happens to everyone.",
)


def _date_text(moment: dt.datetime) -> str:
    return f"{moment.day} {moment.strftime('%B %Y')}"


@dataclass
class _Statement:
    session: int
    text: str
    ref: str = ""


class _Person:
    """One conversation under construction: who says what in which session."""

    def __init__(self, rng: random.Random, conv: str, name: str, sessions: int) -> None:
        self.rng, self.conv, self.name, self.sessions = rng, conv, name, sessions
        self.said: dict[int, list[_Statement]] = {n: [] for n in range(sessions)}
        self.questions: list[tuple[str, str, str, list[_Statement], list[_Statement]]] = []

    def say(self, session: int, text: str) -> _Statement:
        statement = _Statement(session, text)
        self.said[session].append(statement)
        return statement

    def ask(self, category: str, query: str, answer: str, evidence: list[_Statement],
            stale: list[_Statement] | None = None) -> None:
        self.questions.append((category, query, answer, evidence, stale or []))


def _changing(person: _Person, attribute: Attribute, days: list[dt.datetime]) -> None:
    rng = person.rng
    count = rng.choice((2, 3)) if person.sessions >= 3 else 2
    values = rng.sample(attribute.values, count)
    extra = rng.choice(attribute.extra)
    # strictly increasing sessions, the first value said early
    first = rng.randrange(0, max(1, person.sessions // 3))
    later = sorted(rng.sample(range(first + 1, person.sessions), count - 1))
    where = [first] + later
    statements = [person.say(where[0], rng.choice(attribute.first).format(v=values[0],
                                                                          extra=extra))]
    for session, value in zip(where[1:], values[1:], strict=True):
        statements.append(person.say(session, rng.choice(attribute.change).format(
            v=value, extra=extra)))
    fill = {"name": person.name, "extra": extra}
    plain = bool(attribute.state) and rng.random() < STATE_SHARE
    person.ask("changed-state" if plain else "changed-fact",
               rng.choice(attribute.state if plain else attribute.now).format(**fill),
               values[-1], [statements[-1]], statements[:-1])
    person.ask("past-event", attribute.before.format(new=values[-1], **fill), values[-2],
               [statements[-2]])
    moved = rng.randrange(1, count)  # a change, possibly an old one
    person.ask("past-event", attribute.when.format(new=values[moved], **fill),
               _date_text(days[where[moved]]), [statements[moved]])


def _once(person: _Person, fact: OnceFact) -> None:
    value = person.rng.choice(fact.values)
    statement = person.say(person.rng.randrange(person.sessions),
                           person.rng.choice(fact.said).format(v=value))
    person.ask("single-fact", fact.question.format(name=person.name), value, [statement])


def _session_days(rng: random.Random, sessions: int) -> list[dt.datetime]:
    day = FIRST_DAY + dt.timedelta(days=rng.randrange(0, 60), hours=rng.randrange(8, 21))
    out = []
    for _ in range(sessions):
        out.append(day)
        day += dt.timedelta(days=rng.randrange(9, 40), minutes=rng.randrange(0, 600))
    return out


def _turns(person: _Person, days: list[dt.datetime], chit_chat: int) -> list[dict[str, str]]:
    rng = person.rng
    out: list[dict[str, str]] = []
    for number in range(person.sessions):
        lines: list[_Statement | str] = [*person.said[number],
                                         *rng.sample(CHIT_CHAT, chit_chat)]
        rng.shuffle(lines)
        session = f"{person.conv}/s{number + 1:02d}"
        at = days[number]
        index = 0
        for line in lines:
            for role, name, text in (("user", person.name, line),
                                     ("assistant", ASSISTANT, rng.choice(REPLIES))):
                index += 1
                ref = f"{person.conv}:s{number + 1}:{index}"
                if isinstance(text, _Statement):
                    text.ref = ref
                    text = text.text
                out.append(turn(session, at.strftime("%Y-%m-%dT%H:%M:%SZ"), role, name, text,
                                ref))
                at += TURN_SPACING
    return out


def generate_person(rng: random.Random, conv: str, name: str, *, sessions: int = 8,
                    changing: int = 4, once: int = 3, chit_chat: int = 3) -> Conversation:
    person = _Person(rng, conv, name, sessions)
    days = _session_days(rng, sessions)
    for attribute in rng.sample(ATTRIBUTES, min(changing, len(ATTRIBUTES))):
        _changing(person, attribute, days)
    for fact in rng.sample(ONCE_FACTS, min(once, len(ONCE_FACTS))):
        _once(person, fact)
    turns = _turns(person, days, chit_chat)
    questions = tuple(
        Question(f"{conv}:q{i}", query, answer, category, tuple(s.ref for s in evidence),
                 tuple(s.ref for s in stale), at=turns[-1]["at"])
        for i, (category, query, answer, evidence, stale) in enumerate(person.questions))
    return Conversation(conv, tuple(turns), questions)


def generate(seed: int = 0, *, people: int = 4, sessions: int = 8, changing: int = 4,
             once: int = 3, chit_chat: int = 3) -> Dataset:
    """``people`` conversations of ``sessions`` sessions each; every person has ``changing``
    facts that change and ``once`` facts said once, among ``chit_chat`` small-talk lines a
    session. The same arguments always give the same dataset."""
    if sessions < 2:
        raise ValueError("a changed fact needs at least 2 sessions")
    rng = random.Random(seed)
    names = rng.sample(NAMES, min(people, len(NAMES)))
    names += [f"{NAMES[i % len(NAMES)]}{i}" for i in range(len(names), people)]
    conversations = tuple(
        generate_person(rng, f"cf{seed}-{i + 1}", name, sessions=sessions, changing=changing,
                        once=once, chit_chat=chit_chat)
        for i, name in enumerate(names))
    return Dataset(f"changed-facts-{seed}", "changed-facts", conversations)
