"""Each person's family, from the statements that mention them in passing: the first lines of
MEMORY.md's People section, written anew every night and never by the model."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from events import EventLog, Home, clock
from events.transcript import import_file
from projections import open_store
from projections.memories import list_memories
from workers.consolidation.consolidate import consolidate
from workers.consolidation.family import Family, family_lines
from workers.dreaming.dream import dream
from workers.mining.extract import MinerSpec
from workers.mining.mine import mine

from .conftest import rules, run, write_transcript
from .test_distill import night_over
from .test_mining import turn
from .test_night import NIGHT, memory

NAMES = frozenset({"the", "melanie", "maria", "john", "caroline", "nate"})


def sams(*texts: str) -> list[dict]:
    """Sam's turns r1, r2 … : the first two in one session on 1 March 2024, the third in a
    second a week later."""
    return [turn(f"f/{1 + (i >= 2)}", f"2024-03-0{1 if i < 2 else 8}T10:0{i}:00Z", "user",
                 "Sam", text, f"r{i + 1}") for i, text in enumerate(texts)]


def lines(*texts: str) -> list[str]:
    return family_lines(((str(i), text) for i, text in enumerate(texts)), NAMES)


def test_kin_said_twice_or_named_make_a_family_line() -> None:
    assert lines("Melanie's kids are so excited about summer break.",
                 "Melanie's two kids love the beach.",
                 "The user's sister Stella is visiting next week.",
                 "The user's cat, Luna, loves the new cat tower.",
                 "The user's husband's name is Michael, and he was born on August 12th.") == [
        "Melanie's family: kids.",
        "The user's family: a sister (Stella), a cat (Luna), a husband (Michael)."]


def test_kinds_said_in_one_statement_count_once_each() -> None:
    assert lines("John's daughter Sara and John's kids went to the park.",
                 "John's kids love the slide.", "John loves hiking.") == [
        "John's family: kids, a daughter (Sara)."]
    assert lines("John's kids and John's kids' friends went to the park.") == []


@pytest.mark.parametrize("texts", [
    # one unnamed mention may be everyone's: "Our kids are our future"
    ["Maria's kids are Maria's future; they should have the best."],
    # a parent only with a name: everyone has one
    ["The user's mom called on Monday.", "The user's mom loves gardening."],
    # gone or past
    ["Caroline's late grandma gave Caroline a necklace.", "Caroline's grandma Rose was kind."],
    ["The user's dog Rex passed away last spring.", "The user's dog Rex loved the beach."],
    ["The user's ex-husband Tom moved to Leeds."],
    # a speaker's name is no name of theirs; nor is a day
    ["Nate's friend Joanna came over."],
    ["The user's cousin Monday plans fell through."],
    # someone not in the conversation
    ["Sam's sister Ana is a nurse.", "Sam's sister Ana lives in Porto."],
    # a kind's word as half of another noun
    ["The user's dog walker Sam is late again.", "The user's dog walker Sam quit."],
    ["The user's sister-in-law Ana visited."],
])
def test_no_family_line_for_what_may_not_be_theirs(texts: list[str]) -> None:
    assert lines(*texts) == []


def own(*said: tuple[str, str]) -> list[str]:
    """The family lines of turns alone: (speaker, text) each, a turn of its own."""
    return Family((), NAMES, [(f"r{i}", who, text) for i, (who, text) in enumerate(said)]).lines()


def test_a_speaker_s_own_words_name_their_people_in_any_sentence() -> None:
    """A name said in a question, a reply to a photo or a sentence about something else,
    which no statement of the speaker's carries."""
    assert own(("John", "That picture was from a trip for my daughter Sara's birthday!"),
               ("Caroline", "And yup, I do- Oscar, my guinea pig. He's been great."),
               ("Melanie", "They're good- we got another cat named Bailey too."),
               ("The user", "Is it safe for my dog Max to eat grapes?"),
               ("The user", "What should I get my sister? My sister's name is Ana.")) == [
        "John's family: a daughter (Sara).", "Caroline's family: a guinea pig (Oscar).",
        "Melanie's family: a cat (Bailey).", "The user's family: a dog (Max), a sister (Ana)."]


@pytest.mark.parametrize("text", [
    "I'll see my mom Monday.",                # a day, and a parent only with a name
    "My friend Ana is a nurse.",              # no kin
    "My late dog Rex loved the beach.",       # gone
    "My dog walker Sam is late again.",       # half of another noun
    "Our kids are our future.",               # "our": maybe everyone's
])
def test_own_words_without_one_of_their_own_add_no_one(text: str) -> None:
    assert own(("The user", text)) == []


@pytest.mark.parametrize(("text", "line"), [
    ("I'm lucky to have my husband and kids; they keep me motivated.",
     "Melanie's family: a husband, kids."),
    ("My son, Thankfully he is fine now.", "Melanie's family: a son."),   # no name: a word
    ("Thankfully, my son's ok.", "Melanie's family: a son."),             # after a comma
    ("Is this game suitable for my sister, who hates strategy games?",
     "Melanie's family: a sister."),
])
def test_my_kind_said_once_in_their_own_turn_is_theirs(text: str, line: str) -> None:
    """Unnamed and said once, "my husband" is still the speaker's own ("our kids" may be
    everyone's), whatever the sentence is about; what follows a comma is no name."""
    assert own(("Melanie", text)) == [line]


@pytest.mark.parametrize("text", [
    "Here's a photo of my horse painting I did recently.",
    "I've been trying to improve my bird identification skills.",
    "I moved my snake plant to the window.",
])
def test_a_kind_s_word_as_half_of_another_noun_is_no_kind(text: str) -> None:
    assert own(("The user", text)) == []


def test_a_partner_by_any_word_is_one_person() -> None:
    """"My girlfriend" before the wedding, "my wife" after: one partner, the word said
    most."""
    assert own(("John", "My girlfriend and I had an amazing wedding ceremony last week."),
               ("John", "My wife and I went hiking."),
               ("John", "My wife loves the mountains.")) == ["John's family: a wife."]


def test_a_statement_that_they_got_one_names_it() -> None:
    assert lines("Maria got a puppy around 28 July 2023. Her name's Coco and she's adorable.",
                 "The user adopted a cat named Miso.") == [
        "Maria's family: a puppy (Coco).", "The user's family: a cat (Miso)."]


def test_more_names_than_one_make_the_kind_plural() -> None:
    assert own(("Maria", "My puppy Coco is asleep."), ("Maria", "Shadow, my puppy, ran off.")) == [
        "Maria's family: puppies (Coco, Shadow)."]
    assert Family([("r1", "Maria's puppy Coco is asleep."), ("r2", "Maria's puppy Shadow ran.")],
                  NAMES).lines() == ["Maria's family: puppies (Coco, Shadow)."]


def test_statements_of_one_turn_are_one_mention() -> None:
    """Two statements mined from one turn, keyed by it, are said once: not a family line."""
    assert Family([("r1", "Melanie's kids are so excited."),
                   ("r1", "Melanie's kids love the beach.")], NAMES).lines() == []
    assert Family([("r1", "Melanie's kids are so excited."),
                   ("r2", "Melanie's kids love the beach.")], NAMES).lines() == [
        "Melanie's family: kids."]


def test_a_relative_s_own_people_tell_of_the_relative() -> None:
    assert lines("The user's brother's wife Eva is a nurse.", "The user's brother's kids.") == [
        "The user's family: a brother."]


def test_pets_said_beside_a_kind_of_pet_are_that_kind() -> None:
    assert lines("Nate's pets always cheer Nate up.", "Nate's turtles are low-maintenance.",
                 "Nate's turtles love strawberries.", "Nate's pets are calm.") == [
        "Nate's family: turtles."]


def test_a_night_writes_the_family_anew_and_keeps_the_model_away_from_it(
        model_home: Home, tmp_path: Path) -> None:
    """Through the whole night (import, mine, dream, consolidate): the family line opens
    People; a second night over more turns rewrites it rather than adding a second one."""
    first = night_over(model_home, tmp_path, sams(
        "My sister Ana is coming over on Saturday, so I'm cleaning the flat.",
        "My kids are so excited about the beach trip.",
        "My kids loved the aquarium more than the beach."))
    people = first.partition("## People\n")[2]
    assert people.startswith("- Sam's family: kids, a sister (Ana).\n"), first
    second = night_over(model_home, tmp_path, [
        turn("f/3", "2024-03-15T10:00:00Z", "user", "Sam",
             "My dog Biscuit chewed my favourite shoes.", "r4")])
    people = second.partition("## People\n")[2]
    assert people.startswith("- Sam's family: kids, a sister (Ana), a dog (Biscuit).\n"), second
    assert second.count("'s family:") == 1, second


def test_the_model_rewrites_people_without_the_family_line(home: Home, tmp_path: Path) -> None:
    """With a model configured (the scripted backend, on the real backends' path), People's
    other lines go to the model; the family line is not sent, and stays first. Were it sent,
    the first rule would answer for the section, and the line would be lost."""
    path = write_transcript(tmp_path / "t.jsonl", [
        dict(session="s1", at=at, role="user", name="Sam", text=text, ref=ref)
        for at, text, ref in (
            ("2024-03-01T09:00:00Z", "My sister Ana is a nurse in Porto.", "c:1"),
            ("2024-03-01T09:01:00Z", "My brother Luis is married to Eva.", "c:2"))])
    with EventLog(home.events_db) as log:
        import_file(log, path)
    script = rules(
        tmp_path,
        {"match": "My sister Ana", "reply": json.dumps({"memories": [
            memory("Sam's sister Ana is a nurse in Porto.", "user_preference", "", [1]),
            memory("Sam's brother Luis is married to Eva.", "user_preference", "", [2])]})},
        {"match": "'s family:", "reply": "- Sam's sister Ana is a nurse in Porto"},
        {"match": "^Section: People", "reply": "- Sam's brother Luis is married to Eva\n"
                                               "- Sam's sister Ana is a nurse in Porto"},
        {"reply": json.dumps({"memories": []})})
    spec = MinerSpec("scripted", script=str(script))
    with clock.frozen(NIGHT):
        mine(home, spec)
        dream(home)
        report = consolidate(home, spec)
    assert "People" in report.rewritten_sections, report.content
    people = (home.memory_dir / "MEMORY.md").read_text().partition("## People\n")[2]
    family, rewritten, _ = people.split("\n", 2)
    assert family.startswith("- Sam's family: ") and "a sister (Ana)" in family \
        and "a brother (Luis)" in family, people
    assert rewritten == "- Sam's brother Luis is married to Eva", people


@pytest.mark.parametrize("by", ["turn ref", "memory id"])
def test_a_forgotten_relative_leaves_memory_md_at_once(model_home: Home, tmp_path: Path,
                                                       by: str) -> None:
    """Forgetting a turn, or the memory mined from it, takes from MEMORY.md at once the
    line that states it in other words (a cut: "Sam's sister Ana is coming over on
    Saturday"), and the family line that names Ana (it repeats no statement). Forgetting
    anything else leaves the family line; the next consolidation writes it again from
    what is still remembered, and does not bring Ana back."""
    night_over(model_home, tmp_path, sams(
        "My sister Ana is coming over on Saturday, so I'm cleaning the flat.",
        "My cat Miso loves the new scratching post.",
        "I'm training for a half marathon in May."))
    memory_md = model_home.memory_dir / "MEMORY.md"
    before = memory_md.read_text()
    assert "- Sam's family: a sister (Ana), a cat (Miso).\n" in before
    assert "- Sam's sister Ana is coming over on Saturday" in before
    run("memory", "forget", "r3")
    assert "- Sam's family: a sister (Ana), a cat (Miso).\n" in memory_md.read_text()
    with open_store(model_home) as store:
        [sister] = [m.id for m in list_memories(store.db) if "Ana" in m.content]
    run("memory", "forget", "r1" if by == "turn ref" else sister)
    assert "Ana" not in memory_md.read_text() and "family:" not in memory_md.read_text()
    assert "- Sam's cat Miso loves the new scratching post.\n" in memory_md.read_text()
    run("consolidate")
    assert "- Sam's family: a cat (Miso).\n" in memory_md.read_text()
    assert "Ana" not in memory_md.read_text()


@pytest.mark.parametrize("again", [False, True])
def test_a_relative_said_once_unnamed_is_no_people_line(model_home: Home, tmp_path: Path,
                                                        again: bool) -> None:
    """"Our kids are our future" is mined as Sam's kids, yet may be said of all children:
    as the family line leaves such kids out, People leaves the line out too (its journal
    keeps it). Said of kids Sam mentions again, it is Sam's, and joins."""
    said = ["Our kids are our future, they deserve the best.",
            "My sister Ana is a nurse in Porto."]
    if again:
        said.append("My kids loved the aquarium more than the beach.")
    people = night_over(model_home, tmp_path, sams(*said)).partition("## People\n")[2]
    assert "- Sam's sister Ana is a nurse in Porto.\n" in people, people
    assert ("- Sam's kids are Sam's future" in people) is again, people
    assert people.startswith("- Sam's family: kids, a sister (Ana).\n" if again
                             else "- Sam's family: a sister (Ana).\n"), people


def test_a_night_reads_a_name_said_in_a_question_and_none_the_model_said(
        model_home: Home, tmp_path: Path) -> None:
    """Through the whole night: a dog named only in a question (no statement is mined from
    it) joins the family line; a cat an exported chat's assistant names does not: the model
    is no source, as in mining."""
    memory_md = night_over(model_home, tmp_path, [
        turn("g/1", "2024-03-01T10:00:00Z", "user", "user",
             "Is it safe for my dog Biscuit to eat grapes?", "q1"),
        turn("g/1", "2024-03-01T10:01:00Z", "assistant", "assistant",
             "No. My cat Whiskers knows: grapes are toxic to dogs.", "q2")])
    assert "- The user's family: a dog (Biscuit).\n" in memory_md, memory_md
    assert "Whiskers" not in memory_md, memory_md


def test_a_story_pasted_in_names_no_one_of_the_speaker_s(model_home: Home,
                                                          tmp_path: Path) -> None:
    """A long turn (an essay's passages: a story pasted in to be analysed) says "my little
    sister Stella" in someone else's voice; a short one says the speaker's own."""
    story = " ".join(["Here is the next passage to analyse.",
                      "“Rain, rain, go away,” my little sister Stella sang."]
                     + [f"She watched drop number {i} slide down the cold window glass, and"
                        " the street outside grew darker as the storm rolled in." for i in
                        range(14)])
    memory_md = night_over(model_home, tmp_path, [
        turn("h/1", "2024-03-01T10:00:00Z", "user", "user", story, "s1"),
        turn("h/1", "2024-03-01T10:02:00Z", "user", "user",
             "Is it safe for my dog Biscuit to eat grapes?", "s2")])
    assert "- The user's family: a dog (Biscuit).\n" in memory_md, memory_md
    assert "Stella" not in memory_md.partition("## People")[2].split("\n## ")[0], memory_md
