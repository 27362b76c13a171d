"""Attributes: the things about a person that have one value at a time and change — where
they live, their job, a pet, a partner, a favourite drink, a hobby, a car, an editor … — so
that a newer statement of one supersedes the older (dreaming, by subject key).

**The registry** (:data:`ATTRIBUTES`): each attribute's key, its label and example
statements about "Someone". A new attribute is one entry here, then
``python scripts/train_attributes.py`` (it needs ``../shared/bench/locomo`` beside the
checkout and writes :data:`WEIGHTS`).

**The classifier** reads MiniLM vectors of a statement's clauses (split at commas,
semicolons and "and/but/so/because", a part with no subject read only on from the
person's clause or in the whole statement, which is read when it has several parts; the
person's name replaced by "Someone": :func:`clauses`) and gives
each clause a probability per attribute and for *none*: a multinomial logistic regression
trained on the registry's examples (the attributes) and on the statements mining draws
from LoCoMo's dev conversations (*none*: a year of two people's lives, where almost nothing
is a changing state). A statement's attribute is that of its likeliest clause among
those that may be said of the person (not "… who moved to Porto": :func:`names_them`)
when the probability is at least the trained threshold, else it has none. Without the
embedding model, or without the weights file, nothing is classified (the pattern subject
keys of :func:`.text.subject_key` still apply).
"""
from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from events.memory_types import PREFERENCE, PROFILE
from projections.relative_time import DAY_NAME, MONTH_NAME

from .candidates import Candidate
from .statements import display_name
from .text import names_something, speaker_key

WEIGHTS = Path(__file__).with_name("attributes.npz")
SOMEONE = "Someone"


REPLACES = "replaces"    # one value at a time: the value said last is the current one
ANNOUNCED = "announced"  # several at once: a newer value replaces the older ones only when
#                          its statement announces a change (:func:`announces_change`)
ADDS = "adds"            # several at once, never replaced by a newer one


@dataclass(frozen=True)
class Attribute:
    """``kinds``: for an attribute a person can hold several of at once (pets, vehicles),
    the kind words that tell one from another; each kind then has its own current value
    (a new rabbit replaces the rabbit, not the cat). ``change``: how a newer statement
    relates to the older ones (:data:`REPLACES`, :data:`ANNOUNCED`, :data:`ADDS`): a person
    lives in one place and has one job, but takes up a second hobby beside the first, and
    a new allergy is one more, not one instead (dropping a true allergy on a guess would
    be the worst mistake memory could make). ``dated``: the value is a day, so a statement
    that names none sets none ("some of the user's tasks have deadlines"). ``named``: the
    value is a place, so a statement that names none besides its person — no proper name,
    no number — sets none ("… is in the city centre", "… has been renting a small apartment
    for years": :func:`names_a_place`).
    ``says``: words one of which a statement of the attribute says of its person
    (:func:`says_its_word`), for an attribute the classifier hears in what is about someone
    else. ``also``: examples of the attribute said another way — a state held ("Someone is
    in Denver") where ``examples`` mostly say a change ("Someone moved to Madrid") —, trained
    as a class of their own (:data:`ALSO`) whose probability adds to the attribute's: one
    linear class spreads its weight between two such ways, and each way then scores low."""

    key: str
    label: str
    examples: tuple[str, ...]
    kinds: tuple[tuple[str, tuple[str, ...]], ...] = ()
    change: str = REPLACES
    dated: bool = False
    named: bool = False
    says: tuple[str, ...] = ()
    also: tuple[str, ...] = ()


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("home", "home", (
        "Someone lives in Oslo.", "Someone moved to Madrid last month.",
        "Someone's new flat is in Glasgow.", "Someone relocated to the coast.",
        "Home is Dublin now for Someone.", "Someone has settled in a village near York.",
        "Someone's family moved house to Lisbon.", "Someone is living in Toronto these days.",
        "Someone left Paris and now lives in Nice.", "Someone's address is in Hamburg.",
        "Someone is based in Leipzig.", "Someone found a flat in Cork and moved in.",
        "Someone's town is Bath.", "Someone is back in Munich for good.",
        "Someone's place is near the harbour in Kiel.", "Someone is moving to Perth next week.",
        "Someone just bought a house in Bristol.",
        "Someone's flat overlooks the canal in Utrecht.", "Someone moved back to the countryside.",
        "Someone now rents a cottage in Cornwall."),
        named=True,
        also=("Someone is in Denver.", "Someone is located in Ottawa.",
              "Someone is in the Phoenix area.", "Someone's zip code is 80205.",
              "Someone is in postcode LS6.", "Someone is currently living in Leeds.",
              "Someone is from Austin and still lives there.",
              "Someone has lived in Vancouver for six years.")),
    Attribute("job", "job", (
        "Someone works as a nurse.", "Someone is a software engineer.",
        "Someone got a new job as a teacher.", "Someone's job is driving trucks.",
        "Someone became a pharmacist.", "Someone is employed as an accountant.",
        "Someone quit and is now a carpenter.", "Someone's profession is law.",
        "Someone started working as a chef.", "Someone does marketing for a living.",
        "Someone has been a paramedic for years.", "Someone is training to be a pilot.",
        "Someone was promoted to head nurse.", "Someone changed careers and is a plumber now.",
        "Someone resigned to work as an electrician.",
        "Someone is a junior doctor now.", "Someone teaches maths at a secondary school.",
        "Someone retrained and works as a dental hygienist now.",
        "Someone's day job is in logistics.", "Someone got a position as a lab technician.",
        "Someone left the café to become a postman.",
        "Someone earns a living as a freelance illustrator.", "Someone is a firefighter now.",
        "Someone is a vet.", "Someone has worked as a mechanic for ten years.",
        "Someone is a barista at a café in town.", "Someone is a social worker.",
        "Someone works nights as a security guard.", "Someone is a journalist at the paper.",
        "Someone runs the front desk at a hotel.", "Someone is a civil engineer.",
        "Someone has been an estate agent for years.", "Someone is a bookseller.",
        "Someone works as a midwife.", "Someone is a data analyst.",
        "Someone guides tours at the castle for a living.", "Someone is a receptionist."),
        also=("Someone is a project manager now.", "Someone leads a team of developers.",
              "Someone has been teaching for over a decade.",
              "Someone runs a landscaping business.",
              "Someone was promoted to operations manager.", "Someone is a tax lawyer.",
              "Someone is still getting used to being a team lead.")),
    Attribute("employer", "employer", (
        "Someone works at Siemens.", "Someone joined a startup called Brightlane.",
        "Someone's employer is the city council.", "Someone got hired by Google.",
        "Someone left Acme for a job at Initech.", "Someone now works for a bank.",
        "Someone accepted an offer from Spotify.", "Someone's company is a small design agency.")),
    Attribute("pet", "pet", (
        "Someone has a dog called Rex.", "Someone adopted a cat named Luna.",
        "Someone's pet rabbit is Thumper.", "Someone got a puppy.",
        "Someone renamed the cat Miso.", "Someone's parrot is called Kiwi.",
        "Someone brought home a kitten.", "The family's new pet is a tortoise.",
        "Someone's hamster sleeps all day.", "The dog is called Bruno now.",
        "Someone named the new puppy Olive.", "Someone's cat knocked the vase over again.",
        "Someone's dog has a new name, Pip.", "Someone rescued a greyhound from a shelter."),
        kinds=(("dog", ("dog", "dogs", "puppy", "puppies", "pup", "greyhound", "terrier",
                        "spaniel", "labrador", "retriever", "collie", "poodle", "beagle")),
               ("cat", ("cat", "cats", "kitten", "kittens", "kitty")),
               ("rabbit", ("rabbit", "rabbits", "bunny")),
               ("hamster", ("hamster", "hamsters")),
               ("guinea pig", ("guinea pig", "guinea pigs")),
               ("bird", ("parrot", "parrots", "budgie", "budgies", "canary", "bird",
                         "birds", "cockatiel")),
               ("tortoise", ("tortoise", "tortoises", "turtle", "turtles")),
               ("fish", ("fish", "goldfish")),
               ("horse", ("horse", "horses", "pony")),
               ("reptile", ("snake", "lizard", "gecko", "iguana")),
               ("ferret", ("ferret", "ferrets"))),
        change=ANNOUNCED),
    Attribute("partner", "partner", (
        "Someone's partner is called Sam.", "Someone is dating Alex.",
        "Someone got married to Jordan.", "Someone's girlfriend is Mia.",
        "Someone and Chris broke up, and Someone now sees Robin.",
        "Someone's husband is Tom.", "Someone has a new boyfriend, Leo.",
        "Someone moved in with Dana.", "Someone's wife is Ana."),
        # two people named together read as a couple to the classifier: "… bumped into Alex,
        # a software engineer", "… create a bond between her and Alex" (a story's outline),
        # "… brother's name is Alex", "Joanna named her Tilly" (a turtle) — every partner
        # value without such a word on the dev sets' night homes
        says=("partner", "wife", "husband", "spouse", "girlfriend", "boyfriend", "fiancé",
              "fiancée", "fiance", "fiancee", "married", "marry", "marrying", "marriage",
              "engaged", "dating", "significant other", "other half", "been together",
              "got together", "moved in with", "moving in with", "move in with",
              "lives with", "living with", "broke up", "split up", "divorced")),
    Attribute("drink", "favourite drink", (
        "Someone's favourite drink is espresso.", "Someone drinks green tea every morning.",
        "Someone switched from coffee to tea.", "Someone's usual order is a latte.",
        "Someone only drinks oat milk cappuccinos now.", "Someone loves a cold lemonade.",
        "Someone needs a strong coffee to wake up.", "These days Someone orders a mocha.",
        "Someone gave up coffee for herbal tea.", "Someone's morning coffee is a double espresso.",
        "Someone stopped drinking cola.", "Someone prefers a cortado now.",
        "Someone drinks a matcha latte most mornings.", "Someone's go-to drink is iced coffee.",
        "Someone switched to decaf.", "Someone has a peppermint tea before bed.",
        "Someone's first drink of the day is always an americano.",
        "Someone drinks kombucha now instead of soda.", "Someone switched to soy lattes.",
        "Someone has gone back to builder's tea.", "Someone drinks hot water with lemon.",
        "Someone's coffee order is a cappuccino with an extra shot.",
        "Someone likes iced tea in the afternoon.", "Someone's drink of choice is a cold brew.")),
    Attribute("food", "favourite food", (
        "Someone's favourite food is sushi.", "Someone's favourite dish is lasagne.",
        "Someone went vegetarian.", "Someone eats porridge for breakfast every day.")),
    Attribute("hobby", "hobby", (
        "Someone's hobby is knitting.", "Someone took up climbing.",
        "Someone spends weekends gardening.", "Someone's pastime is chess.",
        "In the evenings Someone paints watercolours.", "Someone got into baking bread.",
        "Someone's new hobby is photography.", "Someone is really into board games lately.",
        "Someone spends free time restoring old bikes.", "Someone has been learning salsa.",
        "Someone goes fishing most Sundays.", "Someone has taken up archery.",
        "Someone's favourite pastime is sailing.", "Someone dropped painting and now does yoga.",
        "Someone's free evenings are for crochet.", "Someone picked up knitting this winter.",
        "Someone is learning the guitar in the evenings.",
        "Someone's weekends now go to kayaking.", "Someone has started doing jigsaw puzzles.",
        "Someone joined a choir and sings every Tuesday.", "Someone plays the piano for fun.",
        "Someone goes stargazing on clear nights.", "Someone has gotten into calligraphy.",
        "Someone plays bridge with friends every Thursday.", "Someone collects stamps.",
        "Someone does origami to unwind.", "Someone has been into geocaching lately.",
        "Someone took up the ukulele instead.", "Someone forages for mushrooms at weekends.",
        "Someone does the crossword every night.", "Someone builds model railways.",
        "Someone's spare time goes to beekeeping now.", "Someone has taken up fencing."),
        change=ANNOUNCED),
    Attribute("sport", "sport", (
        "Someone plays tennis.", "Someone runs marathons.", "Someone swims every week.",
        "Someone switched from football to basketball.", "Someone's sport is cycling.",
        "Someone joined a rowing club.", "Someone gave up squash and plays padel now.",
        "Someone trains for triathlons."),
        change=ANNOUNCED),
    Attribute("vehicle", "vehicle", (
        "Someone drives a Volvo.", "Someone bought a new car, an electric Kia.",
        "Someone's car is a red Fiat.", "Someone sold the old van.",
        "Someone rides a motorbike to work.", "Someone's sailing boat is named Osprey.",
        "Someone sold the dinghy and got a bigger yacht.", "Someone cycles on a new e-bike."),
        kinds=(("boat", ("boat", "boats", "yacht", "dinghy", "sailboat", "canoe", "kayak")),
               ("bike", ("bike", "bicycle", "e-bike", "motorbike", "motorcycle", "scooter")),
               ("car", ("car", "cars", "van", "truck", "suv", "hatchback", "estate",
                        "pickup"))),
        change=ANNOUNCED),
    Attribute("editor", "code editor", (
        "Someone uses Vim as an editor.", "Someone switched to VS Code.",
        "Someone's editor is Emacs.", "Someone writes code in Neovim now.",
        "Someone moved from Sublime Text to Zed.", "Someone codes in PyCharm.")),
    Attribute("language", "programming language", (
        "Someone programs in Python.", "Someone's main language at work is Go.",
        "Someone is rewriting the service in Rust.", "Someone codes mostly in TypeScript.",
        "Someone switched the backend from Java to Kotlin.",
        "Someone writes most things in C++."),
        change=ANNOUNCED),
    Attribute("database", "database", (
        "Someone's project uses PostgreSQL.", "Someone moved the app's data to SQLite.",
        "The team's database is MySQL.", "Someone stores everything in MongoDB.",
        "Someone migrated the database from Oracle to MariaDB.", "Someone's app runs on Redis.")),
    Attribute("allergy", "allergy", (
        "Someone is allergic to peanuts.", "Someone has a shellfish allergy.",
        "Someone can't eat gluten.", "Someone found out they are allergic to cats.",
        "Someone's allergy turned out to be to sesame, not nuts.",
        "Someone is lactose intolerant."),
        change=ADDS),
    Attribute("phone", "phone", (
        "Someone has an iPhone.", "Someone's phone is a Pixel.",
        "Someone bought a new phone.")),
    Attribute("school", "school", (
        "Someone studies biology at the university.", "Someone goes to Lincoln High.",
        "Someone enrolled in a nursing degree.", "Someone is a student at MIT.")),
    Attribute("deadline", "deadline", (
        "Someone's deadline is Friday.", "The project is due at the end of March.",
        "Someone's thesis deadline moved to June.", "Someone must submit the report by May.",
        "The launch date was pushed back two weeks.",
        "Someone's manuscript is due on the 3rd."),
        dated=True),
)
# Decoys: what a person says that reads like an attribute to the embedding but sets none —
# trained as classes of their own so that their statements go there rather than to the
# attribute they resemble ("went to Galway for a week" is no new home).
DECOYS: tuple[Attribute, ...] = (
    Attribute("trip", "", (
        "Someone went to Rome for a long weekend.", "Someone is visiting family in Lisbon.",
        "Someone's holiday in Crete was wonderful.", "Someone is planning a trip to Japan.",
        "Someone stayed in a little hotel by the sea.", "Someone took a road trip along the coast.",
        "Someone spent a week camping in the Alps.", "Someone flew to New York for a conference.",
        "Someone explored the old town during the trip.", "Someone is going on vacation to Mexico.",
        "Vienna is on Someone's list of places to visit.", "Someone toured the castles of Wales.",
        "Someone is back from a city break in Prague.",
        "Someone saw a museum in Berlin on the trip.",
        "Someone's family spent the day at the beach.", "Someone has never been to Iceland.",
        "Someone found a lovely bookshop while travelling.",
        "Someone will stay a few nights in Seville.")),
    Attribute("occasion", "", (
        "Someone is organizing a surprise party for a friend.",
        "Someone painted a mural for the school fundraiser.",
        "Someone spent the afternoon cleaning the garage.",
        "Someone is taking some time to rest this week.", "Someone went to a concert last night.",
        "Someone baked a cake for the neighbour's birthday.",
        "Someone is hoping the interview goes well.", "Someone finished a big project at work.",
        "Someone tried a yoga class once and didn't like it.",
        "Someone is using a planner to stay organised.",
        "Someone watched a documentary about whales.", "Someone helped a friend move house.",
        "Someone entered a competition and is waiting for the results.",
        "Someone made a photo album for a friend.", "Someone read a good book over the weekend.",
        "Someone put a lot of work into the presentation.")),
)
NONE = "none"
# The probability from which a statement whose likeliest clause says a replacement is of
# an attribute its person already has a value of (:func:`with_attributes`), below the
# trained threshold. Measured on such clauses, whatever their person holds: on LoCoMo's
# dev conversations the wrong ones score 0.40 at most but one ("Joanna is tempted to try
# dairy-free flavors now", a drink, 0.52: taken only were a drink of hers known), the
# right ones 0.50 ("John is now part of the fire-fighting brigade", a job) and up; on the
# changed-facts generator's, every one a change, the lowest scores 0.49 ("… these days
# it's oat flat white", a drink).
CHANGE_THRESHOLD = 0.45
# the class of an attribute's examples said another way (:attr:`Attribute.also`): its key and
# this mark ("home~")
ALSO = "~"
LABELS: tuple[str, ...] = (*(a.key for a in ATTRIBUTES),
                           *(a.key + ALSO for a in ATTRIBUTES if a.also),
                           *(d.key for d in DECOYS), NONE)


def examples_by_label() -> list[tuple[str, str]]:
    """(example, label) for every example the classifier is trained on: each attribute's
    and decoy's under its key, an attribute's :attr:`~Attribute.also` under its ALSO
    class."""
    return [*((e, a.key) for a in (*ATTRIBUTES, *DECOYS) for e in a.examples),
            *((e, a.key + ALSO) for a in ATTRIBUTES for e in a.also)]
_SPLIT = re.compile(r"([,;]|(?<!\d):|:(?!\d)|\s(?:and|but|so|because|while|though)\s)",
                    re.IGNORECASE)


_DATE = re.compile(rf"\s*\b(?:on|in|around|since|from|until|by)?\s*(?:the (?:weekend|week) of )?"
                   rf"(?:\d{{1,2}} )?{MONTH_NAME}\b(?: \d{{4}})?|\s*\bin \d{{4}}\b"
                   rf"|\s*\b(?i:on|since|from|until|by|last|next|this)?\s*{DAY_NAME}s?\b")


# a day or a span a dated value may be: "Friday", "3 June", "the 3rd", "the end of March",
# "tomorrow", "in two weeks", "6/15"
_A_DAY = re.compile(rf"{_DATE.pattern}|\b(?:\d{{1,2}}(?:st|nd|rd|th)|tomorrow|tonight|midnight"
                    r"|noon|(?:days?|weeks?|months?|years?)\b|\d{1,2}/\d{1,2})", re.IGNORECASE)


def clauses(statement: str, who: str) -> list[str]:
    """A statement's clauses of three words or more and, when it has several parts of three
    words, the whole statement; ``who`` written as "Someone" and dates left out (when a
    thing was said is no part of what it is about).

    A part with no subject of its own is not read alone: "and" and a comma join nouns as
    often as verbs, and cut off, "big dogs with loud barks" reads as a pet (of "Someone
    is terrified of wasps and big dogs with loud barks"), "so many different coffee
    options" as a drink. After "and" or "but" it is read on from a clause naming the
    person, as a predicate of theirs ("Someone sold the dinghy and bought a new boat");
    elsewhere ("especially …", "like …") only in the whole statement, when it is read.
    """
    text = statement
    if who:  # "Lucas' evenings" → "Someone's evenings"; as mining names them ("The user")
        name = re.escape(display_name(who))
        name = f"(?i:{name[0]}){name[1:]}"       # "the user" where it opens no sentence
        text = re.sub(rf"\b{name}'(?!\w)", f"{SOMEONE}'s", text)
        text = re.sub(rf"\b{name}\b", SOMEONE, text)
    text = _DATE.sub("", text)
    pieces = _SPLIT.split(text)             # part, separator, part, …
    parts, chain = [pieces[0]], pieces[0]
    for separator, part in zip(pieces[1::2], pieces[2::2], strict=True):
        if _has_subject(part) or not any(p.strip() for p in parts):
            parts.append(part)
            chain = part
        elif SOMEONE in chain and separator.strip().casefold() in ("and", "but"):
            chain += separator + part
            parts.append(chain)
        else:
            chain = ""
    kept = list(dict.fromkeys(p for p in (" ".join(p.split()) for p in parts)
                              if len(p.split()) >= 3))
    several = sum(len(p.split()) >= 3 for p in pieces[::2]) > 1
    whole = " ".join(text.split())
    return kept + [whole] if several and whole not in kept else kept or [text]


def _has_subject(part: str) -> bool:
    """Whether a part of a statement has a subject: it opens with one, or names the person
    other than as an owner ("… since Someone is allergic"; not "… leadership positions in
    Someone's company", which is no job of theirs)."""
    return bool(_OWN_SUBJECT.match(part.strip()) or _THE_PERSON.search(part))


_THE_PERSON = re.compile(rf"\b{SOMEONE}\b(?!['’])")


# A clause that opens with one of these, or with a name, has a subject of its own
_OWN_SUBJECT = re.compile(r"(?:(?:he|she|they|it|we|you|who|whose|which|that|this|these"
                          r"|those|the|a|an|his|her|their|its|there|one)\b|[A-Z])")


def names_a_place(statement: str, who: str) -> bool:
    """Whether a statement names something besides its person (``who``:
    :func:`.text.names_something`), as a place a person lives in has one ("… is located in
    95123", "… found a flat in Carlton"; "… is in the downtown area" says where in no
    town)."""
    return names_something(clauses(statement, who)[-1], besides=SOMEONE)


def names_them(clause: str, who: str) -> bool:
    """Whether a clause of :func:`clauses` may be said of the person ("Someone"): it names
    them, or it has no subject of its own ("… and bought a new boat" is theirs), or no one
    is named. "… because he got a job as a teacher", "… who moved to Porto" or "… and the
    new flat is in Bristol" says nothing of where Someone works or lives."""
    return not who or SOMEONE in clause or not _OWN_SUBJECT.match(clause)


class Classifier:
    """The trained weights (:data:`WEIGHTS`) over an embedder's vectors."""

    def __init__(self, embedder: Any, weights: Path = WEIGHTS) -> None:
        import numpy as np

        data = np.load(weights)
        self.embedder = embedder
        self.w, self.b = data["w"], data["b"]
        self.labels = [str(x) for x in data["labels"]]
        self.threshold = float(data["threshold"])

    def attributes(self, statements: Sequence[tuple[str, str]]) -> list[str]:
        """For each (statement, who): its attribute's key, or "" when none."""
        return [label if p >= self.threshold else ""
                for p, label, _ in self.scored(statements)]

    def scored(self, statements: Sequence[tuple[str, str]]) -> list[tuple[float, str, str]]:
        """For each (statement, who): the probability and key of its likeliest attribute
        over its clauses said of them (:func:`names_them`), *none* aside, and that clause;
        (0.0, "", "") when that is a decoy or no clause is theirs."""
        index, flat, probs = self._clauses(statements)
        best: list[tuple[float, str, str]] = [(0.0, "", "")] * len(statements)
        if probs is None:  # no statement has a clause said of its person
            return best
        none = self.labels.index(NONE)
        for i, clause, row in zip(index, flat, probs, strict=True):
            row = row.copy()
            row[none] = -1
            k = int(row.argmax())
            if row[k] > best[i][0]:
                best[i] = (float(row[k]), self.labels[k], clause)
        decoys = {d.key for d in DECOYS}
        return [(0.0, "", "") if b[1] in decoys else b for b in best]

    def sureness(self, statements: Sequence[tuple[str, str, str]]) -> list[float]:
        """For each (statement, who, attribute key): how surely it says that attribute of
        them — the attribute's highest probability over its clauses said of them; 0.0 when
        the key is none the classifier knows or no clause is theirs."""
        index, flat, probs = self._clauses([(s, who) for s, who, _ in statements])
        out = [0.0] * len(statements)
        if probs is None:
            return out
        for i, row in zip(index, probs, strict=True):
            key = statements[i][2]
            if key in self.labels:
                out[i] = max(out[i], float(row[self.labels.index(key)]))
        return out

    def _clauses(self, statements: Sequence[tuple[str, str]]) -> tuple[list[int], list[str],
                                                                          Any]:
        """The clauses of each (statement, who) said of them (:func:`names_them`): their
        statements' indexes, the clauses, and the probabilities of each (None when
        there are none)."""
        import numpy as np

        index: list[int] = []
        flat: list[str] = []
        for i, (statement, who) in enumerate(statements):
            for clause in clauses(statement, who):
                if names_them(clause, who):
                    index.append(i)
                    flat.append(clause)
        if not flat:
            return index, flat, None
        probs = softmax(np.asarray(self.embedder.embed(flat)) @ self.w + self.b)
        for k, label in enumerate(self.labels):   # a way of saying it adds to its attribute
            if label.endswith(ALSO) and label[:-len(ALSO)] in self.labels:
                probs[:, self.labels.index(label[:-len(ALSO)])] += probs[:, k]
                probs[:, k] = 0.0
        return index, flat, probs


def softmax(z: Any) -> Any:
    import numpy as np

    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def load_classifier(embedder: Any) -> Classifier | None:
    if embedder is None or not WEIGHTS.exists():
        return None
    return Classifier(embedder)


def with_attributes(candidates: list[Candidate], speakers: list[str],
                    classifier: Classifier | None,
                    held: Collection[str] = ()) -> list[Candidate]:
    """``candidates`` with the subject key of the attribute each sets, where the
    classifier finds one (it names attributes alike whoever said them, so it goes before
    the patterns' or a model's subject, which stay where it finds none). The type stays:
    recall puts every profile memory first, and only the patterns' identity facts are sure
    enough for that. A candidate that ``needs_attribute`` and sets none is left out.

    ``held``: the subject keys of the current values already known ("lucas|hobby",
    "maya|rabbit"). A statement whose likeliest clause says a replacement (:data:`_REPLACING`:
    "I've taken up birdwatching instead") about an attribute its person already has a
    value of is that attribute's from :data:`CHANGE_THRESHOLD` on, below the trained
    threshold: a change is news about something known, so the known attributes are the
    likely ones."""
    candidates = [replace(c, subject=named_kind(c.subject)) for c in candidates]
    if classifier is None:
        return [c for c in candidates if not c.needs_attribute]
    open_ = [i for i, c in enumerate(candidates)
             if c.type in (PREFERENCE.name, PROFILE.name)]
    found = classifier.scored([(candidates[i].content, speakers[i]) for i in open_])
    known = {(who, attribute_of(label)) for who, _, label in
             (subject.rpartition("|") for subject in held)}
    out: list[Candidate | None] = list(candidates)
    by_key = {a.key: a for a in ATTRIBUTES}
    for i, (p, key, clause) in zip(open_, found, strict=True):
        who = speaker_key(speakers[i])
        if not key or p < classifier.threshold and not (
                p >= CHANGE_THRESHOLD and (who, key) in known and _REPLACING.search(clause)):
            continue
        if by_key[key].dated and not _A_DAY.search(candidates[i].content):
            continue      # "… wants to start tracking the delivery date": no day
        if by_key[key].named and not names_a_place(candidates[i].content, speakers[i]):
            continue      # "… is in the city centre": no place
        label = label_of(by_key[key], candidates[i].content)
        out[i] = replace(candidates[i], subject=f"{who}|{label}", needs_attribute=False)
    return [c for c in out if c is not None and not c.needs_attribute]


_KIND_OF = {word: kind for attribute in ATTRIBUTES for kind, words in attribute.kinds
            for word in words}


# another's: "… brother proposed to his girlfriend"
_ANOTHERS = re.compile(r"\b(?:his|her|their|its)\s+$", re.IGNORECASE)


def says_its_word(subject: str, statement: str) -> bool:
    """Whether ``statement`` says one of the :attr:`Attribute.says` words of its subject
    key's attribute, not as someone else's ("his girlfriend"); true for an attribute
    without such words."""
    attribute = _BY_LABEL.get(subject.rpartition("|")[2])
    if attribute is None or not attribute.says:
        return True
    words = "|".join(re.escape(word) for word in attribute.says)
    return any(not _ANOTHERS.search(statement[:found.start()])
               for found in re.finditer(rf"\b(?:{words})\b", statement, re.IGNORECASE))


def names_the_attribute(subject: str, statement: str) -> bool:
    """Whether ``statement`` says the word of its subject key's label ("sofia|allergy":
    "… allergy …") or of one of its kinds ("elena|pet": "… parrot …")."""
    label = subject.rpartition("|")[2]
    attribute = _BY_LABEL.get(label)
    kinds = attribute.kinds if attribute else ()
    whole = attribute is not None and label == attribute.label
    words = {label, *(w for kind, kind_words in kinds if whole or label == kind
                      for w in (kind, *kind_words))}
    low = statement.casefold()
    return any(re.search(rf"\b{re.escape(word)}s?\b", low) for word in words if word)


def named_kind(subject: str) -> str:
    """A pattern's naming subject ("maya|boat name": "my boat is called Curlew") as the kind
    it names ("maya|boat"), the label the classifier gives a statement about that kind ("I
    sold Curlew and bought a new boat, Petrel"), so the newer one supersedes the older;
    any other subject as it is."""
    who, _, label = subject.rpartition("|")
    thing = label.removesuffix(" name")
    if not who or thing == label or thing not in _KIND_OF:
        return subject
    return f"{who}|{_KIND_OF[thing]}"


def label_of(attribute: Attribute, statement: str) -> str:
    """The subject label a statement sets: the attribute's, or for one with kinds the kind
    the statement names first ("… the rabbit …" → "rabbit")."""
    low = statement.casefold()
    found = [(m.start(), kind) for kind, words in attribute.kinds for word in words
             if (m := re.search(rf"\b{re.escape(word)}\b", low))]
    return min(found)[1] if found else attribute.label


# the attribute a subject label names: its own label, or one of its kinds
_BY_LABEL = {**{a.label: a for a in ATTRIBUTES},
             **{kind: a for a in ATTRIBUTES for kind, _ in a.kinds}}


def attribute_of(label: str) -> str:
    """The attribute key a subject label names ("favourite drink" → "drink", "rabbit" →
    "pet"), or "" for a label of no attribute here."""
    found = _BY_LABEL.get(label)
    return found.key if found else ""


def change_of(subject: str) -> str:
    """How a newer statement on ``subject`` ("who|label") relates to the older ones: its
    attribute's :attr:`Attribute.change`; a subject of no attribute here (a pattern's "my
    X is …", a subject a model named) holds one value at a time."""
    found = _BY_LABEL.get(subject.rpartition("|")[2])
    return found.change if found else REPLACES


# The words English announces a replacement with: a new value in place of an old one.
# Narrower than recall's projections.recency._CHANGE, which also counts news that adds
# ("adopted", "took up", "bought a new"): lifting the newer turn is right for those, but
# superseding the older fact would drop one still true. :data:`_REPLACING`, what tells
# that a statement the classifier is unsure of replaces a known value, leaves out
# "changed", whose object may be anything ("changed the game for John").
# "now" after a span of time is how long, not a change ("for four months now")
_NOW = "".join(rf"(?<!\b{unit} )" for unit in ("day", "days", "week", "weeks", "month",
                                                 "months", "year", "years", "while", "ages"))
_REPLACING_WORDS = (rf"{_NOW}now|nowadays|these days|instead|any ?more|no longer|switched"
                    r"|renamed|quit|gave up|given up|stopped|dropped|replaced|sold")
_REPLACING = re.compile(rf"\b(?:{_REPLACING_WORDS})\b", re.IGNORECASE)
_CHANGE = re.compile(rf"\b(?:{_REPLACING_WORDS}|changed)\b", re.IGNORECASE)


# The attributes a person holds by doing or liking something again and again: one happening
# sets none of them ("attended a cocktail-making class" is no favourite drink, "twisted an
# ankle playing basketball" no sport), taking one up does ("took up climbing").
TASTES = frozenset({"drink", "food", "hobby", "sport"})
_TAKING_UP = re.compile(r"\b(?:took up|taken up|got into|gotten into|picked up|started|began"
                        r"|joined|became|went (?:vegetarian|vegan))\b", re.IGNORECASE)


def is_taste(subject: str) -> bool:
    """Whether a subject key ("who|label") is of a :data:`TASTES` attribute or a pattern's
    preference ("maya|prefers …", "maya|favourite …")."""
    label = subject.rpartition("|")[2]
    return attribute_of(label) in TASTES or label.startswith(("prefers ", "favourite"))


def takes_up(statement: str) -> bool:
    """Whether a statement tells of a taste begun, dropped or changed ("took up archery",
    "got into baking", "switched to decaf"): the happenings that set one."""
    return bool(_TAKING_UP.search(statement)) or announces_change(statement)


def announces_change(statement: str) -> bool:
    """Whether a statement says that something changed ("… now", "… instead", "switched
    to", "gave up", "sold"), rather than adding one more ("took up archery", "adopted a
    cat"): what an :data:`ANNOUNCED` attribute's newer value needs to replace the older."""
    return bool(_CHANGE.search(statement))
