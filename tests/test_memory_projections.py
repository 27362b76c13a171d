"""Journal, MEMORY.md, typed memories and the search index: projected from events,
rebuildable, crash-safe files, and forgetting."""
from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

import projections.engine as engine
from events import EventLog, Home
from events.types import (
    FactsExtracted,
    LongTermRewritten,
    MemoriesMerged,
    MemoriesMined,
    MemoryFlagged,
    MemoryForgotten,
    MemorySuperseded,
    ProfileSet,
    Remembered,
    UserTurn,
)
from projections import ProjectionStore
from projections.long_term import CAP, MARKER, cap
from projections.memories import get_memory, list_memories
from projections.search import _selective_terms, indexed_items, search

UTC = dt.UTC


def at(day: int, hour: int = 10) -> dt.datetime:
    return dt.datetime(2024, 3, day, hour, 15, 30, tzinfo=UTC)


def test_journal_files_per_utc_day(home: Home, log: EventLog, store: ProjectionStore) -> None:
    log.append(Remembered(text="Use uv for installs"), stream="memory", occurred_at=at(1))
    log.append(FactsExtracted(from_events=["E1"], facts=["Ann lives in Oslo", " "],
                              model="qwen", refs=["c:1"]), stream="memory", occurred_at=at(1, 11))
    late = dt.datetime(2024, 3, 2, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=5)))  # 1 Mar UTC
    log.append(Remembered(text="late note", source="agent"), stream="memory", occurred_at=late)
    log.append(Remembered(text="next day"), stream="memory", occurred_at=at(2))
    store.catch_up_all()
    assert (home.memory_dir / "2024-03-01.md").read_text() == (
        "# Journal 2024-03-01\n\n"
        "- 10:15:30 [user] Use uv for installs\n"
        "- 11:15:30 [qwen] Ann lives in Oslo\n"
        "- 20:00:00 [agent] late note\n")
    assert (home.memory_dir / "2024-03-02.md").read_text().endswith("- 10:15:30 [user] next day\n")


def test_a_days_journal_reads_in_the_order_things_happened(
        home: Home, log: EventLog, store: ProjectionStore) -> None:
    """An import mines a day's sessions in the order it found them: the evening's session
    first here. The journal tells the day as it went."""
    for hour, text in ((20, "Ann cooked ribs for the family."), (9, "Ann went for a run.")):
        log.append(MemoriesMined(session=f"s{hour}", model="heuristic", memories=[
            {"id": f"m{hour}", "type": "user_preference", "content": text,
             "refs": [f"c:{hour}"], "at": at(1, hour).isoformat()}]), stream="memory")
    store.catch_up_all()
    assert (home.memory_dir / "2024-03-01.md").read_text() == (
        "# Journal 2024-03-01\n\n"
        "- 09:15:30 [heuristic] Ann went for a run.\n"
        "- 20:15:30 [heuristic] Ann cooked ribs for the family.\n")


def test_a_days_journal_keeps_the_mined_lines_that_read_on_their_own(
        home: Home, log: EventLog, store: ProjectionStore) -> None:
    """A mined statement that points at what only its turn names ("It's gonna be Nate's 4th
    one") is no line of the day's journal; its memory stays, and recall finds it there."""
    said = ["Nate won a video game tournament in Chicago.", "It's gonna be Nate's 4th one.",
            "Nate loves it."]
    log.append(MemoriesMined(session="s", model="heuristic", memories=[
        {"id": f"m{i}", "type": "user_preference", "content": text, "refs": [f"c:{i}"],
         "at": at(1).isoformat()} for i, text in enumerate(said)]), stream="memory")
    store.catch_up_all()
    assert (home.memory_dir / "2024-03-01.md").read_text() == (
        "# Journal 2024-03-01\n\n"
        "- 10:15:30 [heuristic] Nate won a video game tournament in Chicago.\n")
    assert [m.content for m in list_memories(store.db)] == said


def test_a_journal_line_names_the_user_once(home: Home, log: EventLog,
                                            store: ProjectionStore) -> None:
    """A line about the user says "their" after its opening "The user", as MEMORY.md does;
    the memory keeps what mining wrote."""
    said = "The user set up the user's new router and it means a lot to the user."
    log.append(MemoriesMined(session="s", model="heuristic", memories=[
        {"id": "m0", "type": "user_preference", "content": said, "refs": ["c:0"],
         "at": at(1).isoformat()}]), stream="memory")
    store.catch_up_all()
    assert (home.memory_dir / "2024-03-01.md").read_text().endswith(
        "- 10:15:30 [heuristic] The user set up their new router and it means a lot to them.\n")
    assert [m.content for m in list_memories(store.db)] == [said]


def test_other_files_in_the_memory_folder_are_never_touched(home: Home, log: EventLog,  # type: ignore[no-untyped-def]
                                                            store) -> None:
    home.memory_dir.mkdir(parents=True)
    mine = {"notes.md": "my own notes\n", "2024-3-1.md": "not a journal name\n",
            "2024-03-01.md.bak": "backup\n"}
    for name, text in mine.items():
        (home.memory_dir / name).write_text(text)
    log.append(Remembered(text="x"), stream="memory", occurred_at=at(1))
    store.catch_up_all()
    store.rebuild("journal")
    for name, text in mine.items():
        assert (home.memory_dir / name).read_text() == text
    assert (home.memory_dir / "2024-03-01.md").exists()


def test_a_stale_journal_file_is_replaced_on_rebuild(home: Home, log: EventLog,
                                                     store: ProjectionStore) -> None:
    log.append(Remembered(text="kept"), stream="memory", occurred_at=at(1))
    store.catch_up_all()
    (home.memory_dir / "2024-03-09.md").write_text("# stale day nobody wrote\n")
    (home.memory_dir / "2024-03-01.md").write_text("tampered\n")
    store.rebuild("journal")
    assert not (home.memory_dir / "2024-03-09.md").exists()
    assert "kept" in (home.memory_dir / "2024-03-01.md").read_text()


def test_a_file_write_that_crashes_is_redone_on_the_next_catch_up(
        home: Home, log: EventLog, store: ProjectionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    log.append(Remembered(text="survives a crash"), stream="memory", occurred_at=at(1))

    def crash(path: Path, content: str | None) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(engine, "write_file", crash)
    with pytest.raises(OSError):
        store.catch_up("journal")
    assert store.position("journal") == 1  # rows and position committed together...
    assert not (home.memory_dir / "2024-03-01.md").exists()  # ...the file not yet
    monkeypatch.undo()
    store.catch_up("journal")
    assert "survives a crash" in (home.memory_dir / "2024-03-01.md").read_text()


def test_memory_md_is_capped_at_a_line_boundary() -> None:
    content = "".join(f"- line {i:05d} with some words\n" for i in range(1000))
    capped = cap(content)
    assert len(capped) <= CAP and capped.endswith(MARKER.format(cap=CAP))
    body = capped[: -len(MARKER.format(cap=CAP))]
    assert body.endswith("\n") and content.startswith(body)
    assert cap("short\n") == "short\n"


def test_memory_md_follows_the_latest_rewrite(home: Home, log: EventLog,
                                              store: ProjectionStore) -> None:
    log.append(LongTermRewritten(content="# Old\n- a\n"), stream="memory")
    log.append(LongTermRewritten(content="# Facts\n- Ann uses vim\n\n# Projects\n- diarist\n"),
               stream="memory")
    store.catch_up_all()
    assert (home.memory_dir / "MEMORY.md").read_text() == (
        "# Facts\n- Ann uses vim\n\n# Projects\n- diarist\n")
    sections = [h.content for h in search(store.db, "vim diarist old", 10)]
    assert sorted(sections) == ["# Facts\n- Ann uses vim", "# Projects\n- diarist"]


def test_memory_lifecycle(log: EventLog, store: ProjectionStore) -> None:
    mined = [{"id": f"m{i}", "type": "tool_use", "content": f"tip {i}", "kind": "pattern",
              "action": "add", "confidence": 0.9, "tags": ["git"], "refs": [f"c:{i}"]}
             for i in range(4)]
    log.append(MemoriesMined(session="s", memories=mined, model="qwen"), stream="memory")
    log.append(MemorySuperseded(ids=["m0"], by="m1", reason="newer"), stream="memory")
    log.append(MemoriesMerged(ids=["m1", "m2"], into="m3"), stream="memory")
    for _ in range(7):
        log.append(MemoryFlagged(ids=["m3"]), stream="memory")
    log.append(ProfileSet(fields={"name": "Ann", "role": "dev"}), stream="profile")
    store.catch_up_all()
    m0, m1, m3 = (get_memory(store.db, i) for i in ("m0", "m1", "m3"))
    assert m0.status == "superseded" and m1.supersedes == ["m0"] and m1.status == "superseded"
    assert m3.supersedes == ["m1", "m2"] and m3.kind == "pattern" and m3.tags == ["git"]
    assert m3.status == "archived" and m3.confidence == pytest.approx(0.2)
    assert ([m.content for m in list_memories(store.db, "workspace_profile")]
            == ["name: Ann", "role: dev"])
    assert list_memories(store.db, "tool_use") == []


def test_flag_archives_only_at_point_two(log: EventLog, store: ProjectionStore) -> None:
    log.append(Remembered(text="maybe"), stream="memory")
    memory_id = log.read()[0].id
    for _ in range(7):
        log.append(MemoryFlagged(ids=[memory_id]), stream="memory")
    store.catch_up_all()
    assert get_memory(store.db, memory_id).status == "active"  # 0.3
    log.append(MemoryFlagged(ids=[memory_id]), stream="memory")
    store.catch_up_all()
    found = get_memory(store.db, memory_id)
    assert (found.status, found.confidence) == ("archived", pytest.approx(0.2))


def test_forget_removes_from_journal_memories_search_and_memory_md(
        home: Home, log: EventLog, store: ProjectionStore) -> None:
    note = log.append(Remembered(text="my locker code is zanzibar-42"), stream="memory",
                      occurred_at=at(1))
    log.append(Remembered(text="keep this"), stream="memory", occurred_at=at(1))
    log.append(LongTermRewritten(content="# Notes\n- my locker code is zanzibar-42\n- other\n"),
               stream="memory")
    store.catch_up_all()
    log.append(MemoryForgotten(ids=[note.id], texts=["my locker code is zanzibar-42"]),
               stream="memory")
    # a later rewrite by the LLM repeats it: still dropped
    log.append(LongTermRewritten(content="# Notes\n- My locker code is  Zanzibar-42\n- new\n"),
               stream="memory")
    store.catch_up_all()
    assert "zanzibar" not in (home.memory_dir / "2024-03-01.md").read_text()
    assert (home.memory_dir / "MEMORY.md").read_text() == "# Notes\n- new\n"
    assert (get_memory(store.db, note.id).content == ""
            and get_memory(store.db, note.id).status == "forgotten")
    assert search(store.db, "zanzibar locker", 10) == []
    for name in ("journal", "long_term", "memories", "search"):
        store.check(name)


def test_forgetting_a_turn_removes_what_derives_from_it(log: EventLog,
                                                        store: ProjectionStore) -> None:
    turn = log.append(UserTurn(session="s", text="I adopted a cat called Pixel"), stream="s",
                      ref="c:7")
    log.append(FactsExtracted(from_events=[turn.id], facts=["User has a cat named Pixel"],
                              refs=["c:7"]), stream="memory")
    store.catch_up_all()
    assert len(search(store.db, "Pixel cat", 10)) == 2
    log.append(MemoryForgotten(ids=[turn.id]), stream="memory")
    store.catch_up_all()
    assert search(store.db, "Pixel cat", 10) == []
    assert store.db.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 0
    assert store.db.execute("SELECT COUNT(*) FROM journal_entries").fetchone()[0] == 0


@pytest.mark.parametrize("query, found", [
    ('"', False), ("*", False), ("AND(", True), ("a:b", False), ("NEAR(x y)", True),
    ("^", False), ("(((", False), ("' OR 1=1 --", False), ("", False), ("   ", False),
    ("col:*", True), ('"unterminated', False)])
def test_search_takes_fts_syntax_as_words(log: EventLog, store: ProjectionStore, query: str,
                                          found: bool) -> None:
    """Operators, quotes and SQL never raise; the query's words are searched as words."""
    note = log.append(Remembered(text="AND near col value"), stream="memory")
    store.catch_up_all()
    hits = search(store.db, query, 5)
    assert bool(hits) == found
    assert all(note.id in h.id for h in hits), [h.id for h in hits]  # the note, nothing else


def test_a_query_searches_its_rare_words(log: EventLog, store: ProjectionStore) -> None:
    """A word in more than 2 % of the items (and more than 50) is left out of the query while
    a rarer one remains; with only common words, the rarest of them is searched — or none
    when cosine results stand beside the list (``common=False``). 50 items is still rare."""
    for i in range(200):
        words = ["common"] + (["zeta"] if i < 120 else []) + (["edge"] if i < 50 else []) \
            + (["ledge"] if i < 51 else []) + (["rare"] if i < 2 else [])
        log.append(Remembered(text=" ".join(words) + f" note{i}"), stream="memory")
    store.catch_up_all()
    assert _selective_terms(store.db, "common rare zeta") == ["rare"]
    assert _selective_terms(store.db, "common edge ledge") == ["edge"]
    assert _selective_terms(store.db, "common zeta") == ["zeta"]  # the rarest common word
    assert _selective_terms(store.db, "zeta common", common=False) == []
    assert _selective_terms(store.db, "common nowhere") == ["common"]
    assert {h.content for h in search(store.db, "common rare", 10)} == {
        "common zeta edge ledge rare note0", "common zeta edge ledge rare note1"}


def test_the_item_count_read_from_the_index_is_the_count(log: EventLog,
                                                        store: ProjectionStore) -> None:
    """Which query words are rare depends on how many items there are; recall reads that
    from FTS5's own record of it. It agrees with counting the items after adds (past one
    varint byte), a forget and a MEMORY.md rewrite, and inside a transaction."""
    def counted() -> int:
        return int(store.db.execute("SELECT COUNT(*) FROM search_items").fetchone()[0])

    assert indexed_items(sqlite3.connect(":memory:")) == 0  # no index built yet: none
    store.catch_up_all()
    assert indexed_items(store.db) == counted() == 0
    notes = [log.append(Remembered(text=f"note number {i}"), stream="memory") for i in range(300)]
    store.catch_up_all()
    before = counted()
    assert indexed_items(store.db) == before >= 300
    log.append(MemoryForgotten(ids=[n.id for n in notes[:180]]), stream="memory")
    log.append(LongTermRewritten(content="# Tools\n- uv\n\n# Food\n- tea\n"), stream="memory")
    store.catch_up_all()
    after = counted()
    assert indexed_items(store.db) == after and after < before - 100
    store.db.execute("BEGIN")
    try:
        store.db.execute("DELETE FROM search_items WHERE rowid = (SELECT MIN(rowid) FROM"
                         " search_items)")
        assert indexed_items(store.db) == counted() == after - 1
    finally:
        store.db.execute("ROLLBACK")


def test_secrets_never_reach_projections(home: Home, log: EventLog, store: ProjectionStore) -> None:
    key = "sk-proj-Zx81NvQ0aLm3pR7tY2uW9eK4"
    log.append(UserTurn(session="s", text=f"here is my key {key} and password: hunter2pass"),
               stream="s", ref="c:1")
    log.append(Remembered(text=f"the deploy token is {key}"), stream="memory", occurred_at=at(1))
    log.append(LongTermRewritten(content=f"- key {key}\n"), stream="memory")
    store.catch_up_all()
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for path in home.root.rglob("*"):
        if path.is_file() and not path.name.startswith("events.db"):
            data = path.read_bytes()
            assert key.encode() not in data and b"hunter2pass" not in data, path
    assert "[secret]" in (home.memory_dir / "2024-03-01.md").read_text()
