"""A request to remember: "please remember that …", before what it asks to keep or after
it, is kept by the night with no model — the speaker's words as a statement, their own
note (source ``user``) that MEMORY.md keeps as it keeps a ``/remember``."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from events import EventLog, Home
from events.transcript import import_file
from projections import open_store
from projections.memories import list_memories
from workers.consolidation.consolidate import consolidate
from workers.mining.chunks import Chunk, Turn
from workers.mining.extract import MinerSpec, extract
from workers.mining.heuristic import heuristic_candidates
from workers.mining.mine import mine
from workers.mining.requests import request_in
from workers.sync.replay import verify

from .conftest import rules, write_transcript

HEURISTIC = MinerSpec()


def night(home: Home, tmp_path: Path, said: list[str], *, at: str, name: str = "user",
          session: str = "s") -> str:
    """MEMORY.md after ``said`` (one session by ``name``, a minute apart from ``at``) is
    imported, mined and consolidated as the default night does, with no model."""
    start = dt.datetime.fromisoformat(at)
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / f"{session}.jsonl", [
            {"session": session, "role": "user", "name": name, "text": text,
             "at": (start + dt.timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "ref": f"{session}:{i}"} for i, text in enumerate(said)]))
    mine(home, HEURISTIC)
    consolidate(home, HEURISTIC)
    return (home.memory_dir / "MEMORY.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("sentence", "kept", "to_do", "asked"), [
    ("I am allergic to penicillin, please remember that.", "I am allergic to penicillin",
     False, True),
    ("Please remember that my daughter's name is Ana.", "my daughter's name is Ana", False,
     True),
    ("Remember: I take my coffee black.", "I take my coffee black", False, True),
    ("Can you remember that my wife's birthday is on 3 May?", "my wife's birthday is on 3 May",
     False, True),
    ("I'd like you to remember that I'm training for a marathon.",
     "I'm training for a marathon", False, True),
    ("My doctor is Dr. Patel - don't forget that!", "My doctor is Dr. Patel", False, True),
    # for the task at hand, not for good: mined as any statement, no note of their own
    ("Keep in mind that I'm diabetic.", "I'm diabetic", False, False),
    ("What is my charisma modifier? Keep in mind I am a hot elf girl",
     "I am a hot elf girl", False, False),
    ("I use Neovim for everything, keep that in mind.", "I use Neovim for everything", False,
     False),
    ("Please note that I want the output in JSON.", "I want the output in JSON", False, False),
    # advice to the listener, a thing to do: no note of the speaker's
    ("Remember that staying positive is very important.", "staying positive is very important",
     False, False),
    ("Please remember to run make lint before pushing.", "run make lint before pushing", True,
     False),
    # mining reads scrubbed turns: a secret is no note of the speaker's
    ("My API key is [secret], please remember that.", "My API key is [secret]", False, False),
    # asked outright, anything is the speaker's note; a bare "Remember, …" is the task's brief
    ("Can you remember that the movers come on 12 December?", "the movers come on 12 December",
     False, True),
    ("The spare key is under the blue pot, please remember that.",
     "The spare key is under the blue pot", False, True),
    ("Remember that the target persona is a Developer.", "the target persona is a Developer",
     False, False),
])
def test_a_request_to_remember_says_what_it_keeps(sentence: str, kept: str, to_do: bool,
                                                  asked: bool) -> None:
    request = request_in(sentence.split("? ")[-1])
    assert request is not None
    assert (request.kept, request.to_do, request.asked) == (kept, to_do, asked)


@pytest.mark.parametrize("sentence", [
    "Remember that epic block in Game 7 of the '16 Finals?",   # a question
    "Remember when we volunteered together last year?",
    "I remember when I did my first play, I was so nervous.",  # the speaker remembers
    "This is all going into my game, remember?",
    "I always keep that in mind, trust me.",
    "Keep up the good work and don't forget your passion for dance.",
])
def test_what_is_no_request_to_remember(sentence: str) -> None:
    assert request_in(sentence) is None


def turn_of(text: str, speaker: str = "Sam") -> Turn:
    return Turn(1, 1, "e1", "r1", "user", speaker, text, "2026-11-10T10:00:00Z", True)


def mined(text: str) -> list[tuple[str, bool]]:
    return [(c.content, c.asked) for c in heuristic_candidates(Chunk("s", [turn_of(text)]))]


def test_the_heuristic_keeps_what_a_speaker_asked_to_keep_in_the_third_person() -> None:
    assert mined("I am allergic to penicillin, please remember that.") == [
        ("Sam is allergic to penicillin.", True)]
    assert mined("My doctor is Dr. Patel - don't forget that!") == [
        ("Sam's doctor is Dr. Patel.", True)]
    # once, not also as the statement the sentence makes without its request
    assert mined("Remember: I take my coffee black. I live in Porto.") == [
        ("Sam takes Sam's coffee black.", True), ("Sam lives in Porto.", False)]
    # kept in mind: a statement as any other, however short, without its request
    assert mined("Keep in mind that I'm diabetic.") == [("Sam is diabetic.", False)]
    assert mined("I use Neovim for everything, keep that in mind.") == [
        ("Sam uses Neovim for everything.", False)]
    assert mined("Keep in mind that the test for repudiation is applied objectively.") == []
    # talk to the listener stays out, request or not; what points back is no note
    assert mined("And remember, I'm always here for you.") == []
    assert mined("Please remember that I bought it for my sister.") == [
        ("Sam bought it for Sam's sister.", False)]
    # advice is kept as said, as before: no note of the speaker's
    assert mined("Remember that the deploy key lives in the vault.") == [
        ("The deploy key lives in the vault", False)]


def test_an_opening_to_the_listener_leaves_the_disclosure() -> None:
    assert mined("Just so you know, I'm vegetarian.") == [("Sam is vegetarian.", False)]
    assert mined("For the record, I hate cilantro.") == [("Sam hates cilantro.", False)]


def test_a_model_extraction_gets_what_was_asked_first(tmp_path: Path) -> None:
    chunk = Chunk("s", [turn_of("I like green tea."),
                        Turn(2, 2, "e2", "r2", "user", "Sam",
                             "I am allergic to penicillin, please remember that. Please "
                             "remember that I bought it for my sister.",   # reads not alone
                             "2026-11-10T10:01:00Z", True)])
    spec = MinerSpec("scripted", script=str(rules(tmp_path, {"reply": (
        '{"memories": [{"content": "Sam likes green tea", "type": "user_preference",'
        ' "subject": "", "turns": [1]}]}')})))
    found = extract(chunk, spec).candidates
    assert [(c.content, c.asked) for c in found] == [
        ("Sam is allergic to penicillin.", True), ("Sam likes green tea", False)]


def test_memory_md_keeps_what_was_asked_as_the_speakers_own_note(home: Home,
                                                                 tmp_path: Path) -> None:
    said = ["I am allergic to penicillin, please remember that.",
            "My doctor is Dr. Patel - don't forget that!",
            "My doctor is Dr. Patel.",    # the same fact, not asked: no line of its own
            "Please remember that my wife's birthday is on 3 May.",
            "My API key is sk-abc123def456ghi789jkl012mno345pq, please remember that."]
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / "t.jsonl", [
            {"session": f"s{i}", "at": f"2026-11-1{i}T10:00:00Z", "role": "user",
             "name": "Sam", "text": text, "ref": f"r{i}"} for i, text in enumerate(said)]))
    mine(home, HEURISTIC)
    with open_store(home) as store:
        kept = {m.content: m.source for m in list_memories(store.db)}
    assert {k: v for k, v in kept.items() if "[secret]" not in k} == {
        "Sam is allergic to penicillin.": "user", "Sam's doctor is Dr. Patel.": "user",
        "Sam's wife's birthday is on 3 May.": "user"}
    assert all(v == "heuristic" for k, v in kept.items() if "[secret]" in k)
    consolidate(home, HEURISTIC)
    text = (home.memory_dir / "MEMORY.md").read_text(encoding="utf-8")
    # a doctor is no like, value or relative: mined, MEMORY.md would leave it out
    assert "- Sam's doctor is Dr. Patel." in text
    # "my wife", said once, is Sam's: the family line names her first
    assert "## People\n- Sam's family: a wife.\n- Sam's wife's birthday is on 3 May." in text
    assert "- Sam is allergic to penicillin." in text
    assert "sk-abc123" not in text and "[secret]" not in text and "API key" not in text
    assert all(v.same for v in verify(home))   # replay rebuilds the same, with no model


@pytest.mark.parametrize("named", [False, True])
def test_what_a_person_noted_and_also_asked_in_a_chat_is_one_memory(home: Home, tmp_path: Path,
                                                                     named: bool) -> None:
    """A ``/remember`` (or the tool's) in the first person and the same asked in the chat:
    mining reinforces the note instead of writing it again in the third person — in the
    person's name too, when their imported chats give one (``named``)."""
    from workers.memory.remember import remember

    remember(home, "I'm allergic to penicillin")
    with EventLog(home.events_db) as log:
        if named:   # an earlier import names the person; nothing in it to mine
            import_file(log, write_transcript(tmp_path / "maya.jsonl", [
                {"session": "m", "at": "2026-11-01T10:00:00Z", "role": "user",
                 "name": "Maya", "text": "Hello!", "ref": "m1"}]))
        import_file(log, write_transcript(tmp_path / "t.jsonl", [
            {"session": "s", "at": "2026-11-10T10:00:00Z", "role": "user", "name": "user",
             "text": "I am allergic to penicillin, please remember that.", "ref": "r1"}]))
    report = mine(home, HEURISTIC)
    assert (report.new, report.reinforced) == (0, 1)
    with open_store(home) as store:
        [note] = list_memories(store.db)
    assert (note.content, note.source) == ("I'm allergic to penicillin", "user")
    assert "r1" in note.refs


def test_a_note_of_a_day_to_come_is_a_plan_until_that_day_is_gone_by(home: Home,
                                                                      tmp_path: Path) -> None:
    """What a person asked to remember that names a day to come is in Plans, not kept
    forever: a week past the day (by the log's time) it leaves MEMORY.md, its journal keeps
    it. A day that comes back every year stays."""
    # Tuesday 10 November 2026: Friday is the 13th
    night(home, tmp_path, ["Please remember that I have a dentist appointment on Friday."],
          at="2026-11-10T10:00:00+00:00", session="r1")
    text = night(home, tmp_path, ["Please remember that my wife's birthday is on 3 May."],
                 at="2026-11-10T10:05:00+00:00", session="r2")
    assert "## Plans\n- The user has a dentist appointment on Friday" in text
    text = night(home, tmp_path, ["I live in Porto."], at="2026-11-25T10:00:00+00:00",
                 session="r3")
    assert "dentist" not in text and "The user's wife's birthday is on 3 May" in text
    assert "dentist" in (home.memory_dir / "2026-11-10.md").read_text(encoding="utf-8")


def test_a_note_of_a_day_gone_by_is_a_note_unless_it_says_a_value(home: Home,
                                                                   tmp_path: Path) -> None:
    text = night(home, tmp_path, ["Please remember that I moved to Leeds in 2019.",
                                  "Please remember that I ran my first marathon on 3 May 2024."],
                 at="2026-11-10T10:00:00+00:00")
    assert "## Profile\n- The user moved to Leeds in 2019." in text
    assert "## Notes\n- The user ran the user's first marathon on 3 May 2024." in text


def test_what_a_person_asked_outright_to_remember_is_their_note(home: Home,
                                                               tmp_path: Path) -> None:
    """"Can you remember that the movers come on 12 December?" is about no one, yet it is
    what the person asked their assistant to keep: a note of theirs, a plan till its day."""
    text = night(home, tmp_path, ["Can you remember that the movers come on 12 December?",
                                  "Remember, the goal is to outrank the top three pages."],
                 at="2026-11-16T18:00:00+00:00", name="Dana")
    assert "## Plans\n- The movers come on 12 December" in text
    assert "outrank" not in text
