"""Consolidation: journals since the watermark + MEMORY.md → a new MEMORY.md; history."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from events import EventLog, Home
from events.types import (
    FactsExtracted,
    LongTermRewritten,
    MemoriesMerged,
    MemoriesMined,
    MemorySuperseded,
    Remembered,
    UserTurn,
)
from projections.long_term import CAP
from workers.consolidation.consolidate import TARGET, consolidate
from workers.consolidation.history import versions
from workers.mining.extract import MinerSpec

from .conftest import rules, run

HEURISTIC = MinerSpec()
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)


def note(log: EventLog, text: str, type_: str = "user_preference") -> str:
    return log.append(Remembered(text=text, type=type_), stream="memory", occurred_at=T0).id


def memory_md(home: Home) -> str:
    return (home.memory_dir / "MEMORY.md").read_text()


def test_journal_lines_join_their_sections_and_a_second_run_appends_nothing(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(LongTermRewritten(content="# Memory\n\n## Preferences\n- Ann likes tea\n\n"
                                             "## Pets\n- Rex is a dog\n"), stream="memory")
        note(log, "Ann likes tea")  # already said: not added twice
        note(log, "Ann works at Acme", "workspace_profile")
        note(log, "Deploys go through CI", "workflow")
        log.append(FactsExtracted(from_events=[], facts=["Ann is learning Rust"]),
                   stream="memory")
    report = consolidate(home, HEURISTIC)
    assert report.changed and report.added == 3 and report.model == "heuristic"
    assert memory_md(home) == ("# Memory\n\n## Profile\n- Ann works at Acme\n\n"
                               "## Preferences\n- Ann likes tea\n\n"
                               "## Workflows\n- Deploys go through CI\n\n"
                               "## Notes\n- Ann is learning Rust\n\n## Pets\n- Rex is a dog\n")
    with EventLog(home.events_db) as log:
        head = log.head()
        rewrite = log.read(types=["LongTermRewritten"])[-1]
    assert rewrite.payload["reviewed_upto"] == head - 1  # the watermark: the last entry read
    assert not consolidate(home, HEURISTIC).changed
    assert "Nothing to consolidate (0 new journal entries)." in run("consolidate").output
    with EventLog(home.events_db) as log:
        assert log.head() == head
        note(log, "Ann prefers dark mode")
    assert consolidate(home, HEURISTIC).added == 1
    assert "- Ann prefers dark mode" in memory_md(home)


def test_outdated_lines_leave_memory_md(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s", model="q", memories=[
            {"id": "old", "type": "workspace_profile", "content": "Ann lives in Oslo"},
            {"id": "new", "type": "workspace_profile", "content": "Ann lives in Rome"}]),
            stream="memory")
        log.append(LongTermRewritten(content="# Memory\n\n## Profile\n- Ann lives in Oslo\n",
                                     reviewed_upto=0), stream="memory")
    consolidate(home, HEURISTIC)
    assert "Oslo" in memory_md(home) and "Rome" in memory_md(home)
    with EventLog(home.events_db) as log:
        log.append(MemorySuperseded(ids=["old"], by="new", reason="moved"), stream="memory")
    report = consolidate(home, HEURISTIC)
    assert report.stale_dropped == 1 and "Oslo" not in memory_md(home)


def test_a_mined_line_that_needs_its_turns_leaves_memory_md(home: Home) -> None:
    """A line written before MEMORY.md left out what does not read on its own goes on the
    next run; the user's own note with the same words stays."""
    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s", model="heuristic", memories=[
            {"id": "m1", "type": "user_preference", "content": "Tim is a fan of this genre"},
            {"id": "m2", "type": "user_preference", "content": "Tim loves fantasy novels"}]),
            stream="memory")
        log.append(LongTermRewritten(content="# Memory\n\n## Preferences\n"
                                             "- Tim is a fan of this genre\n"
                                             "- Tim loves fantasy novels\n",
                                     reviewed_upto=0), stream="memory")
    report = consolidate(home, HEURISTIC)
    assert report.stale_dropped == 1
    assert "this genre" not in memory_md(home) and "- Tim loves fantasy novels" in memory_md(home)
    with EventLog(home.events_db) as log:
        note(log, "I love this genre")
    consolidate(home, HEURISTIC)
    assert "- I love this genre" in memory_md(home)


def test_a_current_value_that_only_mentions_its_person_leaves_memory_md(home: Home) -> None:
    """The classifier hears a pet in "Pets have a way of brightening Joanna's days": a
    line written before the profile asked for its person to be named goes on the next
    run, a current value that names her stays."""
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text="My turtles are Tilly and Shell.", name="Joanna"),
                   stream="s")
        log.append(MemoriesMined(session="s", model="heuristic", memories=[
            {"id": "m1", "type": "user_preference", "subject": "joanna|pet",
             "content": "Pets have a way of brightening Joanna's days."},
            {"id": "m2", "type": "user_preference", "subject": "joanna|pet",
             "content": "Joanna's turtles are Tilly and Shell."}]), stream="memory")
        log.append(LongTermRewritten(content="# Memory\n\n## Profile\n"
                                             "- Pets have a way of brightening Joanna's days\n",
                                     reviewed_upto=0), stream="memory")
    report = consolidate(home, HEURISTIC)
    assert report.stale_dropped == 1
    assert "Pets" not in memory_md(home) and "Joanna's turtles are Tilly and Shell" in \
        memory_md(home)


def test_a_mined_line_states_its_first_sentence_and_goes_when_superseded(home: Home) -> None:
    """What follows a mined like's first sentence is mostly its turn's chatter; a current
    value keeps its whole statement (its value may come later), and is dropped when
    superseded."""
    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s", model="heuristic", memories=[
            {"id": "old", "type": "user_preference", "subject": "ann|home",
             "content": "Ann lives in Oslo. The view is awesome."},
            {"id": "like", "type": "user_preference",
             "content": "The user loves hiking. So fun."},
            {"id": "job", "type": "user_preference", "subject": "ann|job",
             "content": "Career change done: Ann got hired as a nurse."},
            {"id": "move", "type": "user_preference", "subject": "user|home",
             "content": "Big news: the user moved from Porto to Lisbon."}]),
            stream="memory", occurred_at=T0)
    consolidate(home, HEURISTIC)
    assert "- Ann lives in Oslo. The view is awesome (said 1 May 2024)" in memory_md(home)
    assert "- The user loves hiking.\n" in memory_md(home) and "So fun" not in memory_md(home)
    assert "- Ann got hired as a nurse (since 1 May 2024)" in memory_md(home)   # no headline
    assert "- The user moved from Porto to Lisbon (since 1 May 2024)" in memory_md(home)
    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s1", model="heuristic", memories=[
            {"id": "bike", "type": "user_preference", "subject": "ann|vehicle",
             "content": "Ann got a new bike on 1 May 2024."},
            {"id": "dog", "type": "user_preference", "subject": "ann|dog",
             "content": "Ann got a puppy on February 10th."}]), stream="memory", occurred_at=T0)
    consolidate(home, HEURISTIC)
    assert "- Ann got a new bike on 1 May 2024.\n" in memory_md(home)   # said once
    # a day without a year gets the day it was said (which February), not a second beginning
    assert "- Ann got a puppy on February 10th (said 1 May 2024)\n" in memory_md(home)
    with EventLog(home.events_db) as log:   # a preference's value follows "prefers"
        log.append(MemoriesMined(session="s3", model="heuristic", memories=[
            {"id": "short", "type": "user_preference",
             "subject": "ann|prefers answers code essay first short skip way",
             "content": "Ann prefers short answers with code first, by the way. Skip the "
                        "essay."}]), stream="memory", occurred_at=T0)
    consolidate(home, HEURISTIC)
    assert "- Ann prefers short answers with code first (said 1 May 2024)\n" in \
        memory_md(home)
    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s2", model="heuristic", memories=[
            {"id": "new", "type": "user_preference", "subject": "ann|home",
             "content": "Ann lives in Rome now."}]), stream="memory", occurred_at=T0)
        log.append(MemorySuperseded(ids=["old"], by="new", reason="moved"), stream="memory")
        log.append(MemorySuperseded(ids=["like"], by="new", reason="a test"), stream="memory")
    consolidate(home, HEURISTIC)
    assert "Oslo" not in memory_md(home) and "Ann lives in Rome now (since" in memory_md(home)
    assert "hiking" not in memory_md(home)   # its line, cut, is still known as its


def test_a_value_told_in_passing_is_dated_by_the_day_it_was_said(home: Home) -> None:
    """A value told in passing ("Ann drives a red hatchback") is dated by the day it was
    said, even when dreaming found it replacing a value said before it (a conflict): it
    began after the blue estate was last said, on a day nobody told; "(since …)" would name
    one."""
    from workers.dreaming.dream import CONFLICT

    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s0", model="heuristic", memories=[
            {"id": "old", "type": "user_preference", "subject": "ann|car",
             "content": "Ann drives a blue estate."},
            {"id": "wed", "type": "user_preference", "subject": "ann|partner",
             "content": "Ann is married to Bea."}]),
            stream="memory", occurred_at=T0 - dt.timedelta(days=30))
        log.append(MemoriesMined(session="s", model="heuristic", memories=[
            {"id": "new", "type": "user_preference", "subject": "ann|car",
             "content": "Ann drives a red hatchback."},
            {"id": "baker", "type": "user_preference", "subject": "ann|job",
             "content": "Ann works as a baker."},
            {"id": "chef", "type": "user_preference", "subject": "ann|job",
             "content": "Ann works as a chef."},
            {"id": "cat", "type": "user_preference", "subject": "ann|cat",
             "content": "Ann's cat Luna sleeps on her new tower, which Ann got from Petco."},
            {"id": "a1", "type": "user_preference", "subject": "ann|allergy",
             "content": "Ann is allergic to shellfish."},
            {"id": "a2", "type": "user_preference", "subject": "ann|allergy",
             "content": "Ann is allergic to shellfish!"}]), stream="memory", occurred_at=T0)
        log.append(MemorySuperseded(ids=["old"], by="new",
                                    reason=f"{CONFLICT} 'ann|car': the fact said last wins"),
                   stream="memory")
        log.append(MemorySuperseded(ids=["baker"], by="chef", reason=f"{CONFLICT} 'ann|job'"),
                   stream="memory")
        log.append(MemoriesMerged(ids=["a2"], into="a1", reason="duplicates (same text)"),
                   stream="memory")
    consolidate(home, HEURISTIC)
    assert "- Ann drives a red hatchback (said 1 May 2024)\n" in memory_md(home)
    assert "- Ann is allergic to shellfish (said 1 May 2024)\n" in memory_md(home)
    assert "- Ann is married to Bea (said 1 April 2024)\n" in memory_md(home)   # no wedding
    assert "- Ann works as a chef (said 1 May 2024)\n" in memory_md(home)   # one turn's tie
    assert "which Ann got from Petco (said 1 May 2024)\n" in memory_md(home)  # not the cat
    assert "blue estate" not in memory_md(home) and "baker" not in memory_md(home)


def test_a_line_an_earlier_version_wrote_whole_is_restated(home: Home) -> None:
    """MEMORY.md written before lines kept only their main clause: the next run restates
    such a line (once, whatever the journals bring), and drops none."""
    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s", model="heuristic", memories=[
            {"id": "car", "type": "user_preference", "subject": "the user|vehicle",
             "content": "The user has a Honda Civic Si, and the user is looking to upgrade."},
            {"id": "milk", "type": "user_preference",
             "content": "The user loves drinking milk, so that's a plus."}]),
            stream="memory", occurred_at=T0)
    consolidate(home, HEURISTIC)
    assert "- The user has a Honda Civic Si (said 1 May 2024)\n" in memory_md(home)
    assert "- The user loves drinking milk.\n" in memory_md(home)
    with EventLog(home.events_db) as log:   # as an earlier version wrote it
        log.append(LongTermRewritten(content=(
            "# Memory\n\n## Profile\n- The user has a Honda Civic Si, and the user is looking "
            "to upgrade (since 1 May 2024)\n\n## Preferences\n- The user loves drinking "
            "milk, so that's a plus.\n- I keep my own line.\n"), reviewed_upto=10**6),
            stream="memory")
    report = consolidate(home, HEURISTIC)
    assert report.changed and report.stale_dropped == 0
    assert memory_md(home) == ("# Memory\n\n## Profile\n- The user has a Honda Civic Si "
                               "(said 1 May 2024)\n\n## Preferences\n- The user loves "
                               "drinking milk.\n- I keep my own line.\n")


@pytest.mark.parametrize(("memory", "written", "now"), [
    # written before a line referred back to the user ("their")
    ({"content": "The user loves cooking with the user's partner, so that's a plus."},
     "- The user loves cooking with the user's partner.",
     "- The user loves cooking with their partner."),
    # written before a line left out the words that lean on the conversation
    ({"content": "The user also loves cooking with the user's partner too."},
     "- The user also loves cooking with their partner too.",
     "- The user loves cooking with their partner."),
    # written before a value's line ended before a sentence that only comments
    ({"subject": "john|hobby",
      "content": "Anyway, John loves climbing. It's an awesome way to connect."},
     "- John loves climbing. It's an awesome way to connect (since 1 May 2024)",
     "- John loves climbing (said 1 May 2024)"),   # told, not begun: "said"
])
def test_a_line_an_earlier_version_wrote_otherwise_is_restated_once(
        home: Home, memory: dict, written: str, now: str) -> None:
    """The next run restates such a line, neither keeping the old one beside it nor
    dropping it."""
    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s", model="heuristic", memories=[
            {"id": "m", "type": "user_preference", **memory}]),
            stream="memory", occurred_at=T0)
        log.append(LongTermRewritten(content=f"# Memory\n\n## Preferences\n{written}\n",
                                     reviewed_upto=0), stream="memory")
    report = consolidate(home, HEURISTIC)
    assert report.stale_dropped == 0
    assert memory_md(home) == f"# Memory\n\n## Preferences\n{now}\n"


def test_the_cap_holds_by_dropping_the_oldest_lines(home: Home) -> None:
    with EventLog(home.events_db) as log:
        for i in range(400):
            note(log, f"Fact number {i} about a long and winding subject of little import")
    report = consolidate(home, HEURISTIC)
    text = memory_md(home)
    assert report.trimmed > 0 and len(text) <= TARGET < CAP
    assert "Fact number 399 " in text and "Fact number 0 " not in text


def test_a_model_rewrites_changed_sections_and_its_nonsense_is_refused(home: Home,
                                                                     tmp_path: Path) -> None:
    with EventLog(home.events_db) as log:
        note(log, "Ann likes green tea")
        note(log, "Ann really likes green tea in the morning")
        note(log, "My api key is sk-proj-abcdefghijklmnopqrstuvwxyz123456")
        note(log, "Deploys go through CI", "workflow")
        note(log, "Deploys need a green build", "workflow")
    script = rules(tmp_path,
                   {"match": "^Section: Preferences",
                    "reply": "- Ann likes green tea, mostly in the morning\n- api key [secret]"},
                   {"match": "^Section: Workflows", "reply": "- Ann owns a yacht"})
    report = consolidate(home, MinerSpec("scripted", script=str(script)))
    assert report.rewritten_sections == ["Preferences"] and report.failures == 1
    text = memory_md(home)
    assert "## Preferences\n- Ann likes green tea, mostly in the morning\n" in text
    assert "- Deploys go through CI\n- Deploys need a green build" in text  # the merge stands
    assert "yacht" not in text and "sk-proj" not in text
    with EventLog(home.events_db) as log:
        [failed] = log.read(types=["ConsolidationFailed"])
        prompts = json.dumps([e.payload for e in log.read()])
    assert failed.payload["section"] == "Workflows" and "not found" in failed.payload["error"]
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz123456" not in json.dumps(failed.payload)
    assert report.model == "scripted" and prompts


def test_history_shows_every_memory_md(home: Home) -> None:
    with EventLog(home.events_db) as log:
        note(log, "Ann likes tea")
    consolidate(home, HEURISTIC)
    with EventLog(home.events_db) as log:
        note(log, "Ann likes cake")
    consolidate(home, HEURISTIC)
    found = versions(home)
    assert [v.number for v in found] == [2, 1]
    assert "cake" in found[0].content and "cake" not in found[1].content
    out = run("memory", "history").output
    assert "   2  " in out and "heuristic" in out
    assert run("memory", "history", "1").output == found[1].content
    missing = run("memory", "history", "9", ok=False)
    assert missing.exit_code == 1 and "no MEMORY.md version '9'" in missing.output


def test_no_secret_reaches_the_model(home: Home) -> None:
    from .fake_llm import fake_llm

    with EventLog(home.events_db) as log:
        note(log, "My api key is sk-proj-abcdefghijklmnopqrstuvwxyz123456")
        note(log, "Ann likes tea")
    with fake_llm() as llm:
        report = consolidate(home, MinerSpec("openai", base_url=llm.url))
        bodies = json.dumps(llm.chat_calls())
    assert "Section: Preferences" in bodies and "[secret]" in bodies
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz123456" not in bodies
    assert report.failures == 1  # the fake answers with mining JSON: no bullets


def test_dry_run_shows_the_new_memory_md_and_changes_nothing(home: Home) -> None:
    with EventLog(home.events_db) as log:
        note(log, "Ann likes tea")
        head = log.head()
    out = run("consolidate", "--dry-run", "--heuristic").output
    assert out.startswith("Dry run: MEMORY.md 0 → ") and "1 line(s) added" in out
    assert "## Preferences\n- Ann likes tea\n" in out
    with EventLog(home.events_db) as log:
        assert log.head() == head and not log.read(types=["LongTermRewritten"])
    assert not (home.memory_dir / "MEMORY.md").exists()
    assert "1 line(s) added" in run("consolidate", "--heuristic").output
    assert "## Preferences\n- Ann likes tea\n" in memory_md(home)


def test_each_line_records_the_refs_of_the_memory_it_states(home: Home) -> None:
    """A line of MEMORY.md says its memory otherwise ("their", no "also", a theme's first
    clause), so the refs of the memory each line states are recorded with the rewrite, and
    recall gives them as MEMORY.md's provenance; a forgotten line's refs go with it, and a
    secret in a line is masked in the projection as in the file."""
    from events.types import MemoryForgotten
    from projections import open_store
    from projections.recall import recall

    with EventLog(home.events_db) as log:
        log.append(MemoriesMined(session="s", model="heuristic", memories=[
            {"id": "m1", "type": "user_preference", "refs": ["c:1"],
             "content": "The user also loves cooking with the user's partner too."},
            {"id": "m2", "type": "user_preference", "refs": ["c:2", "c:3"],
             "content": "The user loves the password hunter2 for everything."},
            {"id": "m3", "type": "user_preference", "refs": ["c:4"],
             "content": "The user enjoys long walks by the canal."}]),
            stream="memory", occurred_at=T0)
    consolidate(home, HEURISTIC)
    with EventLog(home.events_db) as log:
        refs = log.read(types=["LongTermRewritten"])[-1].payload["refs"]
    assert refs["The user loves cooking with their partner."] == ["c:1"]
    assert refs["The user enjoys long walks by the canal."] == ["c:4"]
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        shown = {line: json.loads(r) for line, r in
                 store.db.execute("SELECT line, refs FROM long_term_refs")}
        assert shown["The user loves the password [secret] for everything."] == ["c:2", "c:3"]
        assert all("hunter2" not in line for line in shown)
        (item,) = [i for i in recall(store.db, "", budget=400, k=5,
                                     whole_long_term=True).items if i.source == "long_term"]
        assert set(item.refs) >= {"c:1", "c:4"}
        log.append(MemoryForgotten(ids=["m3"], texts=["long walks by the canal"]),
                   stream="memory")
        store.catch_up_all()
        assert "The user enjoys long walks by the canal." not in {
            line for (line,) in store.db.execute("SELECT line FROM long_term_refs")}
        # a rewrite whose line carries a secret: the projection keeps it masked, as the file
        line = "Ann's token is ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        log.append(LongTermRewritten(content=f"# Memory\n\n## Notes\n- {line}\n",
                                     refs={line: ["c:9"]}), stream="memory")
        store.catch_up_all()
        assert list(store.db.execute("SELECT line, refs FROM long_term_refs")) == [
            ("Ann's token is [secret]", '["c:9"]')]
