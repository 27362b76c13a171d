"""The projection engine (atomic position, catch-up, rebuild, digest) and the turns projection."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from events import EventLog, Home, RecordedEvent
from events.transcript import import_file
from events.types import Remembered, SessionStarted, UserTurn
from projections import ProjectionStore, TurnsProjector, all_projectors, items
from projections.passages import passages
from projections.turns import search_turns

from .conftest import make_turns, write_transcript


def rows(store: ProjectionStore) -> list[tuple]:
    return store.db.execute("SELECT seq, role, name, text, ref FROM turns ORDER BY seq").fetchall()


def test_catch_up_projects_turns_and_advances_over_ignored_events(log: EventLog,
                                                                  store: ProjectionStore) -> None:
    log.append(SessionStarted(session="s"), stream="s")
    log.append(UserTurn(session="s", text="the cat sat", name="Ann"), stream="s", ref="r1")
    log.append(Remembered(text="not a turn"), stream="memory")
    assert store.catch_up("turns") == 3
    assert store.position("turns") == 3  # ignored events advance the position
    assert rows(store) == [(2, "user", "Ann", "the cat sat", "r1")]
    assert store.catch_up("turns") == 0


def test_catch_up_resumes_after_the_stored_position(log: EventLog, store: ProjectionStore,
                                                    tmp_path: Path) -> None:
    import_file(log, write_transcript(tmp_path / "t.jsonl", make_turns(50)))
    store.catch_up("turns", upto=20, batch_size=7)
    assert store.position("turns") == 20
    applied: list[int] = []
    projector = store.projector("turns")
    original = projector.apply
    projector.apply = lambda db, e: (applied.append(e.seq), original(db, e))[1]  # type: ignore[method-assign]
    store.catch_up("turns", batch_size=7)
    assert applied == list(range(21, 52))  # 21..51: the turns after 20, each once
    assert len(rows(store)) == 50


class Boom(Exception):
    pass


def test_a_failed_batch_leaves_output_and_position_untouched(log: EventLog, store,  # type: ignore[no-untyped-def]
                                                             tmp_path) -> None:
    import_file(log, write_transcript(tmp_path / "t.jsonl", make_turns(30)))
    store.catch_up("turns", upto=10)
    before = (rows(store), store.position("turns"))
    projector = store.projector("turns")
    original = projector.apply

    def apply(db: sqlite3.Connection, event: RecordedEvent) -> None:
        if event.seq == 25:
            raise Boom()
        original(db, event)

    projector.apply = apply  # type: ignore[method-assign]
    with pytest.raises(Boom):
        store.catch_up("turns", batch_size=100)
    # rows 11..24 were written inside the failed transaction: none of them remain
    assert (rows(store), store.position("turns")) == before
    projector.apply = original  # type: ignore[method-assign]
    store.catch_up("turns")
    assert len(rows(store)) == 30


def test_rebuild_and_digest_are_deterministic(log: EventLog, store: ProjectionStore,
                                              tmp_path: Path, home: Home) -> None:
    import_file(log, write_transcript(tmp_path / "t.jsonl", make_turns(40)))
    store.catch_up_all()
    live = store.digest("turns")
    store.rebuild("turns", batch_size=3)
    assert store.digest("turns") == live
    with ProjectionStore(Home(tmp_path / "scratch"), log, all_projectors()) as scratch:
        scratch.catch_up_all(batch_size=11)
        assert scratch.digest("turns") == live
    store.db.execute("UPDATE turns SET text = 'tampered' WHERE seq = 5")
    assert store.digest("turns") != live


def test_catching_all_up_reads_each_batch_of_the_log_once(
        log: EventLog, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All projections catch up a batch each in turn, those at the same position sharing one
    read of the log: 8 projections over 3 batches read it 4 times (the last finds nothing),
    not 32; and a turn's passages, which the search and the vector index both take, are cut
    once. The result is what each catching up on its own makes."""
    import_file(log, write_transcript(tmp_path / "t.jsonl", make_turns(25)))
    cut: list[str] = []
    monkeypatch.setattr(items, "passages", lambda text: cut.append(text) or passages(text))
    items.scrubbed_passages.cache_clear()
    total = len(log.read())     # the turns, and the import's session events
    assert 20 < total <= 30
    reads: list[int] = []
    original = log.read

    def read(after: int = 0, limit: int | None = None, **kw):  # type: ignore[no-untyped-def]
        reads.append(after)
        return original(after, limit, **kw)

    log.read = read  # type: ignore[method-assign]
    with ProjectionStore(Home(tmp_path / "together"), log, all_projectors()) as together:
        moved = together.catch_up_all(batch_size=10)
        assert reads == [0, 10, 20, total] and set(moved.values()) == {total}
        assert len(cut) == len(set(cut)) == 25
        log.read = original  # type: ignore[method-assign]
        with ProjectionStore(Home(tmp_path / "apart"), log, all_projectors()) as apart:
            for name in apart.projectors:
                apart.catch_up(name, batch_size=10)
            for name in apart.projectors:
                assert together.digest(name) == apart.digest(name), name


def test_a_new_projector_version_rebuilds_on_catch_up(log: EventLog, store: ProjectionStore,
                                                      tmp_path: Path) -> None:
    import_file(log, write_transcript(tmp_path / "t.jsonl", make_turns(5)))
    store.catch_up("turns")
    store.db.execute("DELETE FROM turns WHERE seq = 2")  # stale output of "an older version"
    store.db.execute("UPDATE projection_state SET version = 0 WHERE name = 'turns'")
    store.catch_up("turns")
    assert len(rows(store)) == 5
    assert next(s for s in store.status() if s.name == "turns").version == TurnsProjector.version


def test_status_reports_position_and_lag(log: EventLog, store: ProjectionStore) -> None:
    for i in range(5):
        log.append(UserTurn(session="s", text=f"t{i}"), stream="s")
    store.catch_up("turns", upto=2)
    status = next(s for s in store.status() if s.name == "turns")
    assert (status.name, status.position, status.head, status.lag) == ("turns", 2, 5, 3)


@pytest.mark.parametrize("query, found", [
    ('"', False), ("*", False), ("AND(", True), ("a:b", False), ("NEAR(x y)", False),
    ("-", False), ("^start", True), ("(((", False), ("col:value OR", True),
    ("'; DROP TABLE turns; --", False), ("", False)])
def test_fts_syntax_is_searched_as_words(log: EventLog, store: ProjectionStore, query: str,
                                         found: bool) -> None:
    """FTS5 operators and SQL metacharacters never raise: the query's words are searched as
    words (a word of the turn is found, punctuation alone finds nothing)."""
    log.append(UserTurn(session="s", text="AND value start col"), stream="s", ref="r:1")
    store.catch_up("turns")
    hits = search_turns(store.db, query)
    assert [h.ref for h in hits] == (["r:1"] if found else [])
    assert store.db.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 1  # nothing dropped


def test_search_finds_turns_with_their_refs(locomo26: Path, log: EventLog,
                                            store: ProjectionStore) -> None:
    import_file(log, locomo26)
    store.catch_up_all()
    hits = search_turns(store.db, "When did Caroline go to the LGBTQ support group?", k=5)
    assert "conv-26:D1:3" in [h.ref for h in hits]
    assert all(h.ref and h.event_id for h in hits)


def test_the_projections_are_read_through_a_memory_map_and_the_log_is_not(
        home: Home, log: EventLog, store: ProjectionStore) -> None:
    """Recall reads hundreds of pages a question: the projections database (rebuildable from
    the log) is mapped, read-write and read-only; the event log keeps plain reads."""
    from projections.engine import MMAP_BYTES

    log.append(Remembered(text="mapped"), stream="memory")
    store.catch_up_all()
    assert MMAP_BYTES >= 1 << 28
    assert store.db.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES
    reader = ProjectionStore(home, log, all_projectors(), readonly=True)
    try:
        assert reader.db.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES
    finally:
        reader.db.close()
    assert log.db.execute("PRAGMA mmap_size").fetchone()[0] == 0


def test_tables_are_built_inside_the_open_transaction(tmp_path: Path) -> None:
    """sqlite-utils' statements join the engine's transaction: a build rolled back leaves no
    table; a built one has its key, its defaults and NOT NULL where no default is given."""
    from projections.schema import create_table

    db = sqlite3.connect(tmp_path / "p.db", isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    create_table(db, "t", {"id": str, "n": int, "note": str}, "id", defaults={"n": 0},
                 indexes=[("t_n", ("n",))])
    db.execute("ROLLBACK")
    assert not db.execute("SELECT name FROM sqlite_master").fetchall()
    db.execute("BEGIN IMMEDIATE")
    create_table(db, "t", {"id": str, "n": int, "note": str}, "id", defaults={"n": 0},
                 indexes=[("t_n", ("n",))])
    db.execute("INSERT INTO t (id, note) VALUES ('a', 'x')")
    db.execute("COMMIT")
    assert db.execute("SELECT * FROM t").fetchall() == [("a", 0, "x")]
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO t (id) VALUES ('b')")
    assert {r[0] for r in db.execute("SELECT name FROM sqlite_master")} >= {"t", "t_n"}
