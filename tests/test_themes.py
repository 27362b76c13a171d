"""MEMORY.md's Themes: what each person keeps coming back to, session after session."""
from __future__ import annotations

from pathlib import Path

import pytest

from events import Home
from workers.consolidation.themes import Said, theme_statements, theme_words

from .test_distill import mined_line, night_over


def said(who: str, session: str, text: str, at: str = "2023-05-01T10:00:00Z") -> Said:
    return Said(f"{who}:{session}:{text[:12]}", who, session, at, text, text)


def test_a_theme_word_recurs_in_sessions_is_the_persons_own_and_uncommon() -> None:
    history = [
        said("cara", "s1", "Cara went to a counseling workshop and felt so excited."),
        said("cara", "s2", "Cara is looking into counseling as a career, so excited."),
        said("cara", "s3", "Cara talked to her counseling mentor, excited again."),
        said("cara", "s3", "Cara bought a kiln."),                # one session only
        said("mel", "s1", "Mel is so excited about the trip."),
        said("mel", "s2", "Mel took the kids to the beach, excited."),
    ]
    themes = theme_words(history, skip=frozenset({"cara", "mel"}))
    assert set(themes["cara"]) == {"counsel"}       # "counseling": Zipf 3.9, three sessions
    assert themes["mel"] == {}                      # "excited": common in English (4.7)
    assert themes["cara"]["counsel"] == pytest.approx(3 * (7 - 3.89), abs=0.05)


def test_a_word_the_other_speaker_uses_as_much_is_no_theme() -> None:
    history = [said(who, f"s{n}", f"{who.title()} talked about the tournament.")
               for who in ("nate", "joanna") for n in range(3)]
    themes = theme_words(history, skip=frozenset({"nate", "joanna"}))
    assert themes == {"nate": {}, "joanna": {}}


def test_theme_statements_take_the_heaviest_allowed_each_with_a_new_theme() -> None:
    history = [
        said("maria", "s1", "Maria volunteers at the homeless shelter.", "2023-01-01T00:00:00Z"),
        said("maria", "s2", "Maria is still volunteering at the homeless shelter.",
             "2023-03-01T00:00:00Z"),
        said("maria", "s3", "Maria organized a meal at the shelter.", "2023-04-01T00:00:00Z"),
        said("maria", "s3", "Maria is so happy at the homeless shelter.", "2023-04-01T00:00:00Z"),
        said("maria", "s4", "Maria loves aerial yoga.", "2023-05-01T00:00:00Z"),
        said("maria", "s5", "Maria did aerial yoga again.", "2023-06-01T00:00:00Z"),
        said("maria", "s6", "Maria teaches aerial yoga.", "2023-07-01T00:00:00Z"),
    ]
    chosen = theme_statements(history, lambda s: "happy" not in s.text,
                              skip=frozenset({"maria"}))
    # of the heaviest (the shelter and "homeless"; "aerial yoga"), the newest; the meal and
    # the other yoga lines add no theme word; the happy one is not allowed
    assert sorted(s.text for s in chosen) == ["Maria is still volunteering at the homeless"
                                              " shelter.", "Maria teaches aerial yoga."]
    assert len(theme_statements(history, lambda s: False, skip=frozenset({"maria"}))) == 0


@pytest.mark.parametrize(("statement", "lasting"), [
    ("Caroline mentors a transgender teen just like Caroline.", True),
    ("Maria is still volunteering at the homeless shelter.", True),
    ("Nate has been getting so stressed lately because of the tournament.", False),
    ("Joanna wishes Joanna could try it, but Joanna can't right now.", False),
    ("Joanna is tempted to try dairy-free flavors now.", False),
    ("John needs way better education and infrastructure.", False),
    ("The user has been feeling a bit down about social situations lately.", False),
    ("The user is curious to know more about how Emily paints a backdrop.", False),
    ("The user is also intrigued by the baked beans with a smoky twist.", False),
    ("The user is still reflecting on the project management workshop.", False),
    ("The user has been having a hard time getting motivated to go for a run.", False),
    ("The user has been reading a lot of heavy novels lately.", True),
    ("The user recalls sending 12 messages to an influencer on July 15th.", False),
    ("The user also remembers feeling a bit stuck to a schedule.", False),    # a recollection
    ("Caroline went to an LGBTQ+ counseling workshop last week.", False),           # an event
    ("Tim is going to write about fantasy novels.", False),                         # a plan
    ("The user likes the idea of tracking their reading.", False),                  # a reaction
])
def test_a_theme_statement_says_something_lasting(statement: str, lasting: bool) -> None:
    from workers.consolidation.consolidate import _lasting

    names = frozenset({"caroline", "maria", "nate", "joanna", "john", "tim", "the"})
    assert _lasting(mined_line(statement), names) is lasting


def test_a_theme_line_stops_where_another_clause_with_a_subject_begins() -> None:
    from workers.consolidation.consolidate import statement_of, theme_line

    assert theme_line(mined_line(
        "The user has been making a lot of salads lately, and the user just got a new set of"
        " reusable containers at Target.")) == "The user has been making a lot of salads lately."
    # "and the user" before a verb begins a clause, with a comma or without one
    assert theme_line(mined_line(
        "The user has been experimenting with sourdough bread lately and the user is having"
        " some trouble getting the starter to activate.")) \
        == "The user has been experimenting with sourdough bread lately."
    kept = "Caroline has been chasing her ambitions and had the chance to volunteer."
    assert theme_line(mined_line(kept)) == kept
    kept = mined_line("The user has been painting portraits of their sister and the user's dog.")
    assert theme_line(kept) == statement_of(kept)    # "and the user's …" begins no clause


def test_a_night_writes_what_a_person_keeps_coming_back_to(home: Home, tmp_path: Path) -> None:
    """Three sessions a week apart; Ann's pottery is in each, said in no like (nor as a
    routine: "every week" would put the line in Workflows, which Themes does not repeat)."""
    def turn(n: int, text: str, who: str = "Ann", role: str = "user") -> dict:
        return {"session": f"s{n}", "at": f"2023-05-{1 + 7 * n:02d}T10:00:00Z", "role": role,
                "name": who, "text": text, "ref": f"s{n}:{who}:{text[:9]}"}

    turns = [
        turn(0, "I teach a pottery class at the community center."),
        turn(0, "That's great, how many students?", "Bo", "assistant"),
        turn(1, "I fired a new batch of pottery in the kiln at the studio yesterday."),
        turn(1, "Sounds fun.", "Bo", "assistant"),
        turn(2, "I'm so excited about my pottery exhibition."),
        turn(2, "I sell my pottery at the Saturday market."),
        turn(2, "Nice!", "Bo", "assistant"),
    ]
    memory_md = night_over(home, tmp_path, turns)
    themes = memory_md.split("## Themes\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert themes == ["- Ann teaches a pottery class at the community center."] \
        or themes == ["- Ann sells their pottery at the Saturday market."], memory_md
    assert "excited" not in memory_md


def test_a_theme_line_that_tells_time_from_its_day_carries_the_day() -> None:
    """"lately" read months later means another time: the line says when it was said."""
    import datetime as dt

    from projections.memories import Memory
    from workers.consolidation.consolidate import theme_lines

    def said(n: int, text: str) -> Memory:
        at = f"2023-05-{1 + 7 * n:02d}T10:00:00Z"
        return Memory(f"m{n}", "user_preference", text, "fact", "", 0.7, 1.0, [], "active", [],
                      at, at, f"s{n}", ["r"], "heuristic", "", "")

    active = [said(0, "Ann taught a pottery class at the community center."),
              said(1, "Ann fired a new batch of pottery in the kiln at the studio."),
              said(2, "Ann has been selling a lot of pottery at the market lately.")]
    lines = theme_lines(active, frozenset({"ann"}), lambda m: "", dt.date(2023, 5, 20))
    assert lines == ["Ann has been selling a lot of pottery at the market lately"
                     " (said 15 May 2023)"]
