"""A night's run with the scripted backend playing the model (issue 11, "Done when"): mining
gives typed memories with refs and journals for their days, dreaming merges a planted
duplicate and supersedes a planted outdated fact, consolidation rewrites MEMORY.md; a second
night changes nothing; replay (no model) reproduces it all."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from freezegun import freeze_time

from events import EventLog, Home, clock
from events.transcript import import_file
from events.types import (
    AssistantTurn,
    MemoriesMined,
    Remembered,
    SessionEnded,
    SessionStarted,
    UserTurn,
)
from projections import open_store
from projections.inject import build_injection
from projections.memories import list_memories
from projections.recall import recall
from projections.speakers import person_name
from workers.consolidation.consolidate import consolidate
from workers.dreaming.dream import dream
from workers.mining.distribute import LocalExtractor
from workers.mining.extract import MinerSpec
from workers.mining.mine import mine
from workers.schedule import run_night
from workers.sync.replay import verify

from .conftest import rules, run, write_transcript

NIGHT = dt.datetime(2024, 3, 21, 2, 0, tzinfo=dt.UTC)


def memory(content: str, type_: str, subject: str, turns: list[int]) -> dict:
    return {"type": type_, "content": content, "subject": subject, "kind": "pattern",
            "confidence": 0.9, "turns": turns}


def setup_home(home: Home, tmp_path: Path) -> MinerSpec:
    turns = [
        ("s1", "2024-03-01T09:00:00Z", "user", "Maya", "I live in Berlin.", "c:1"),
        ("s1", "2024-03-01T09:00:30Z", "assistant", "Sam", "Cool city!", "c:2"),
        ("s1", "2024-03-01T09:01:00Z", "user", "Maya", "I prefer tea over coffee.", "c:3"),
        ("s2", "2024-03-10T18:00:00Z", "user", "Maya", "I moved to Lisbon last month.", "c:4"),
        ("s2", "2024-03-10T18:00:30Z", "user", "Maya", "And I adopted a greyhound called Juno!",
         "c:5"),
    ]
    path = write_transcript(tmp_path / "t.jsonl", [
        dict(zip(("session", "at", "role", "name", "text", "ref"), t, strict=True))
        for t in turns])
    with EventLog(home.events_db) as log:
        import_file(log, path)
        # planted duplicate: a memory an earlier night mined, and the user's own note
        log.append(MemoriesMined(session="old", model="heuristic", memories=[{
            "id": "m-old", "type": "user_preference", "content": "Sam loves hiking in the Alps.",
            "refs": ["old:1"]}]), stream="memory",
            occurred_at=dt.datetime(2024, 2, 1, tzinfo=dt.UTC))
        log.append(Remembered(text="sam loves hiking in the alps"), stream="memory",
                   occurred_at=dt.datetime(2024, 2, 2, tzinfo=dt.UTC))
    script = rules(
        tmp_path,
        {"match": "I live in Berlin", "reply": json.dumps({"memories": [
            memory("Maya lives in Berlin", "workspace_profile", "home city", [1]),
            memory("Maya prefers tea over coffee", "user_preference", "", [3])]})},
        {"match": "moved to Lisbon", "reply": json.dumps({"memories": [
            memory("Maya lives in Lisbon", "workspace_profile", "Home City", [1]),
            memory("Maya adopted a greyhound called Juno", "user_preference", "pet", [2])]})},
        {"match": "^Section: Preferences", "reply": "- Sam loves hiking in the Alps\n"
                                                     "- Maya prefers tea over coffee"},
        {"match": "^Section: Profile", "reply": "- Maya lives in Lisbon (said 10 March 2024)\n"
         "- Maya adopted a greyhound called Juno (since 10 March 2024)"},
        {"reply": json.dumps({"memories": []})})
    return MinerSpec("scripted", script=str(script))


def night(home: Home, spec: MinerSpec) -> None:
    with clock.frozen(NIGHT):
        mine(home, spec)
        dream(home)
        consolidate(home, spec)


def snapshot(home: Home) -> tuple[list, dict[str, str]]:
    with open_store(home) as store:
        store.catch_up_all()
        rows = store.db.execute("SELECT * FROM memories ORDER BY id").fetchall()
    files = {str(p.relative_to(home.memory_dir)): p.read_text()
             for p in sorted(home.memory_dir.rglob("*.md"))}
    return rows, files


def test_a_night_mines_merges_supersedes_and_rewrites_memory_md(home: Home,
                                                                 tmp_path: Path) -> None:
    spec = setup_home(home, tmp_path)
    night(home, spec)
    with open_store(home) as store:
        active = {m.content: m for m in list_memories(store.db)}
        superseded = {m.content: m for m in list_memories(store.db, None, ("superseded",))}
    # typed memories with refs to their turns
    assert active["Maya lives in Lisbon"].type == "workspace_profile"
    assert active["Maya lives in Lisbon"].refs == ["c:4"]
    assert active["Maya adopted a greyhound called Juno"].refs == ["c:5"]
    assert active["Maya prefers tea over coffee"].refs == ["c:3"]
    # journal files for the days the turns were said
    assert "[scripted] Maya lives in Berlin" in (home.memory_dir / "2024-03-01.md").read_text()
    assert "[scripted] Maya lives in Lisbon" in (home.memory_dir / "2024-03-10.md").read_text()
    # the planted duplicate merged into the user's note, keeping both refs
    kept = active["sam loves hiking in the alps"]
    assert "Sam loves hiking in the Alps." in superseded and kept.supersedes == ["m-old"]
    assert kept.refs == ["old:1"]
    # the planted outdated fact superseded by the newer one
    berlin = superseded["Maya lives in Berlin"]
    assert berlin.reason.startswith("conflict on 'maya|home city'")
    assert active["Maya lives in Lisbon"].supersedes == [berlin.id]
    # MEMORY.md rewritten: the newer fact in, the outdated one out
    memory_md = (home.memory_dir / "MEMORY.md").read_text()
    # current values with the day they were said; Maya's family line (the greyhound she
    # adopted) first in People; the model's rewrite of Preferences
    assert ("## Profile\n- Maya lives in Lisbon (said 10 March 2024)\n\n## People\n"
            "- Maya's family: a greyhound (Juno).\n"
            "- Maya adopted a greyhound called Juno (since 10 March 2024)\n") in memory_md
    assert "Berlin" not in memory_md
    assert ("## Preferences\n- Sam loves hiking in the Alps\n- Maya prefers tea over coffee\n"
            ) in memory_md
    with open_store(home) as store:
        with clock.frozen(NIGHT):
            found = recall(store.db, "Where does Maya live? Berlin or Lisbon?", 512)
            block = build_injection(store.db, "Where does Maya live?", 512, 10)
        ids = [i.id for i in found.items]
        cities = [i for i in found.items if "Lisbon" in i.content or "Berlin" in i.content]
        assert "Lisbon" in cities[0].content  # the newer value ranks first
        assert berlin.id not in ids and berlin.id not in [i.id for i in block.items]
        assert "Maya lives in Berlin" not in block.text
    with EventLog(home.events_db) as log:
        rewrites = log.read(types=["LongTermRewritten"])
        decays = log.read(types=["RelevancyDecayed"])
        assert log.read(types=["ConsolidationFailed", "MiningFailed"]) == []
    assert [r.payload["model"] for r in rewrites] == ["scripted"]
    assert rewrites[0].payload["journals"] == ["2024-02-01", "2024-02-02", "2024-03-01",
                                               "2024-03-10"]
    assert decays == []   # current values and lasting facts (likes, a pet) never fade


def test_a_second_night_changes_nothing_and_replay_needs_no_model(home: Home,
                                                                   tmp_path: Path) -> None:
    spec = setup_home(home, tmp_path)
    night(home, spec)
    with EventLog(home.events_db) as log:
        head = log.head()
    before = snapshot(home)
    night(home, spec)
    with EventLog(home.events_db) as log:
        assert log.head() == head
    assert snapshot(home) == before
    assert all(v.same for v in verify(home))
    run("replay")  # no model configured: the log alone rebuilds everything
    assert snapshot(home) == before


def test_run_night_without_a_model_uses_the_heuristic_extractor(home: Home,
                                                                tmp_path: Path) -> None:
    setup_home(home, tmp_path)
    with clock.frozen(NIGHT):
        report = run_night(home, lambda h, spec: LocalExtractor(spec))
    assert report.mined is not None and report.mined.model == "heuristic"
    assert report.dreamt is not None and report.dreamt.merged == 1
    # the heuristic subject keys: "I live in Berlin" / "I moved to Lisbon" set maya|home
    assert report.dreamt.superseded == 1
    assert report.consolidated is not None and report.consolidated.changed
    memory_md = (home.memory_dir / "MEMORY.md").read_text()
    # the statement in the third person, "last month" resolved from the turn's day
    assert "- Maya moved to Lisbon in February 2024.\n" in memory_md   # dated in its line
    assert "Berlin" not in memory_md


def test_the_workers_minute_tick_runs_the_night_through_the_queue(home: Home,
                                                                  tmp_path: Path) -> None:
    """`diarist worker`'s periodic `schedule.tick` queues `night.run` at 02:00 local time
    (here on an immediate Huey: the same task functions, run inline), once a night."""
    from workers.app import configure
    from workers.tasks import schedule_tick

    setup_home(home, tmp_path)
    configure(home, immediate=True)
    with EventLog(home.events_db) as log:
        start = log.head()
    with clock.frozen(dt.datetime(2024, 3, 21, 1, 0).astimezone()):
        schedule_tick()  # before the night: nothing but the first maintenance bookkeeping
    with EventLog(home.events_db) as log:
        assert log.head() == start
    with clock.frozen(dt.datetime(2024, 3, 21, 2, 30).astimezone()):
        schedule_tick()
    with EventLog(home.events_db) as log:
        kinds = {e.type for e in log.read(after=start)}
        head = log.head()
    assert {"MemoriesMined", "MemoriesMerged", "MemorySuperseded",
            "LongTermRewritten"} <= kinds  # mine → dream → consolidate (heuristic: no model)
    assert (home.memory_dir / "MEMORY.md").exists()
    with clock.frozen(dt.datetime(2024, 3, 21, 3, 30).astimezone()):
        schedule_tick()  # the same night: not again
    with EventLog(home.events_db) as log:
        assert log.head() == head


@pytest.mark.parametrize("zone, first_due_utc", [("Europe/Berlin", "2024-01-15 01:00"),
                                                 ("America/New_York", "2024-01-15 07:00"),
                                                 ("Asia/Kolkata", "2024-01-14 20:30")])
def test_the_night_starts_at_its_hour_of_local_time(zone: str, first_due_utc: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`mining.at` (02:00) is the machine's local time: under freezegun's clock, in three
    zones, the night is due from that local hour for six hours, and once a night."""
    import time

    from events.config import Config
    from workers.schedule import night_due

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        due = dt.datetime.fromisoformat(first_due_utc).replace(tzinfo=dt.UTC)
        config = Config()
        for offset, expected in ((-1, False), (0, True), (359, True), (360, False)):
            with freeze_time(due + dt.timedelta(minutes=offset)):
                local = clock.now().astimezone()
                assert night_due(config, local, None) is expected, (zone, offset)
        with freeze_time(due):
            night = clock.now().astimezone().date().isoformat()
            assert not night_due(config, clock.now().astimezone(), night)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def _chat(home: Home, session: str, at: dt.datetime, *texts: str) -> None:
    """A diarist chat session at ``at``: the person's messages (recorded as "user", as the
    chat records them), each answered, then ended."""
    with EventLog(home.events_db) as log:
        log.append(SessionStarted(session=session, backend="scripted", model="m"),
                   stream=session, occurred_at=at)
        for n, text in enumerate(texts):
            when = at + dt.timedelta(minutes=n + 1)
            log.append(UserTurn(session=session, text=text, name="user"), stream=session,
                       occurred_at=when)
            log.append(AssistantTurn(session=session, text="Noted.", name="m"), stream=session,
                       occurred_at=when)
        log.append(SessionEnded(session=session, turns=len(texts)), stream=session,
                   occurred_at=at + dt.timedelta(minutes=len(texts) + 1))


def test_what_the_person_says_in_a_chat_is_theirs_by_the_name_their_chats_give(
        home: Home, tmp_path: Path) -> None:
    """Imported chats name the person ("Maya"); the chat records them as "user". Mined as
    "the user", a move told in a chat would stand beside the old home instead of replacing
    it, and the family line would be written twice."""
    path = write_transcript(tmp_path / "t.jsonl", [
        {"session": "s1", "at": "2024-03-01T09:00:00Z", "role": "user", "name": "Maya",
         "text": "I live in Berlin.", "ref": "c:1"},
        {"session": "s1", "at": "2024-03-01T09:01:00Z", "role": "user", "name": "Maya",
         "text": "My partner Tom is a nurse.", "ref": "c:2"}])
    with EventLog(home.events_db) as log:
        import_file(log, path)
    _chat(home, "chat/1", dt.datetime(2024, 3, 10, 18, tzinfo=dt.UTC),
          "Big news: I moved to Lisbon, I live in Lisbon now.",
          "My sister Ana came to help with the boxes.")
    with clock.frozen(NIGHT):
        report = run_night(home, lambda h, spec: LocalExtractor(spec))
    assert report.dreamt is not None and report.dreamt.superseded == 1
    memory_md = (home.memory_dir / "MEMORY.md").read_text()
    assert "Maya lives in Lisbon now" in memory_md
    assert "Berlin" not in memory_md and "The user" not in memory_md
    assert memory_md.count("family: ") == 1 and "a sister (Ana)" in memory_md


def test_the_person_is_named_only_when_their_turns_give_one_name(home: Home,
                                                                  tmp_path: Path) -> None:
    with open_store(home) as store:
        store.catch_up_all()
        assert person_name(store.db) == ""       # an empty log
    turns = [{"session": "s1", "at": "2024-03-01T09:00:00Z", "role": role, "name": name,
              "text": "Hello.", "ref": f"c:{n}"}
             for n, (role, name) in enumerate([("user", "user"), ("assistant", "Sam"),
                                               ("user", "Me"), ("user", "Maya"),
                                               ("user", "maya")])]
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / "a.jsonl", turns))
    with open_store(home) as store:
        store.catch_up_all()
        assert person_name(store.db) == "Maya"   # "user", "Me", the other side's name aside
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / "b.jsonl", [
            {"session": "s2", "at": "2024-03-02T09:00:00Z", "role": "user", "name": "Tom",
             "text": "Hi.", "ref": "d:1"}]))
    with open_store(home) as store:
        store.catch_up_all()
        assert person_name(store.db) == ""       # two people: neither is assumed


def test_a_value_mined_as_the_users_is_the_persons_once_their_chats_are_imported(
        home: Home, tmp_path: Path) -> None:
    """The other order: a chat first (nothing names the person yet: "The user lives in
    Lisbon now"), then an import of older chats that names them ("Maya": "I live in
    Berlin"). The value said last still wins over the other's."""
    _chat(home, "chat/1", dt.datetime(2024, 3, 10, 18, tzinfo=dt.UTC),
          "Big news: I moved to Lisbon, I live in Lisbon now.")
    with clock.frozen(NIGHT):
        run_night(home, lambda h, spec: LocalExtractor(spec))
    assert "the user lives in Lisbon now" in (home.memory_dir / "MEMORY.md").read_text()
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / "t.jsonl", [
            {"session": "s1", "at": "2024-03-01T09:00:00Z", "role": "user", "name": "Maya",
             "text": "I live in Berlin.", "ref": "c:1"}]))
    with clock.frozen(NIGHT + dt.timedelta(days=1)):
        report = run_night(home, lambda h, spec: LocalExtractor(spec))
    assert report.dreamt is not None and report.dreamt.superseded == 1
    memory_md = (home.memory_dir / "MEMORY.md").read_text()
    assert "Lisbon" in memory_md and "Berlin" not in memory_md
