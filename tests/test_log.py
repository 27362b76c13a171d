"""The EventLog: append-only enforcement, optimistic concurrency, idempotency, upcasting."""
from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from events import ConcurrencyError, Event, EventLog, Home, NewEvent, NotFound, Registry, clock
from events.errors import UnknownEventType
from events.ids import is_ulid, new_ulid
from events.log import migrations
from events.types import Remembered, SessionStarted, UserTurn


def turn(text: str = "hi", session: str = "s1") -> UserTurn:
    return UserTurn(session=session, text=text, name="Ann")


# --- append-only, enforced by the database itself -------------------------------------------


@pytest.fixture
def raw(log: EventLog) -> sqlite3.Connection:
    log.append(turn("first"), stream="s1")
    log.append(turn("second"), stream="s1", idempotency_key="k2")
    return sqlite3.connect(log.path)


@pytest.mark.parametrize("sql", [
    "UPDATE events SET payload = '{}' WHERE seq = 1",
    "UPDATE events SET seq = 99 WHERE seq = 1",
    "DELETE FROM events WHERE seq = 1",
    "DELETE FROM events",
    "INSERT OR REPLACE INTO events (seq, id, stream, stream_version, type, schema_version,"
    " occurred_at, recorded_at, payload, meta)"
    " VALUES (1, 'X', 's9', 1, 'UserTurn', 1, 'a', 'b', '{}', '{}')",
    "REPLACE INTO events (seq, id, stream, stream_version, type, schema_version, occurred_at,"
    " recorded_at, payload, meta) SELECT seq, id, stream, stream_version, type, schema_version,"
    " occurred_at, recorded_at, '{}', meta FROM events WHERE seq = 1",
    # replaces by (stream, stream_version), by id, and by idempotency key
    "INSERT OR REPLACE INTO events (id, stream, stream_version, type, schema_version,"
    " occurred_at, recorded_at, payload, meta)"
    " VALUES ('NEW', 's1', 1, 'UserTurn', 1, 'a', 'b', '{}', '{}')",
    "INSERT OR REPLACE INTO events (id, stream, stream_version, type, schema_version,"
    " occurred_at, recorded_at, payload, meta) SELECT id, 'other', 1, type, 1, 'a', 'b', '{}', '{}'"
    " FROM events WHERE seq = 2",
    "INSERT OR REPLACE INTO events (id, stream, stream_version, type, schema_version,"
    " occurred_at, recorded_at, payload, meta) VALUES ('NEW2', 'other', 1, 'UserTurn', 1, 'a', 'b',"
    " '{}', '{\"idempotency_key\":\"k2\"}')",
])
def test_raw_sql_cannot_change_history(raw: sqlite3.Connection, log: EventLog, sql: str) -> None:
    before = [e.to_json() for e in log.read()]
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute(sql)
    raw.rollback()
    assert [e.to_json() for e in log.read()] == before


def test_raw_sql_rejected_by_the_sqlite3_shell(raw: sqlite3.Connection, log: EventLog) -> None:
    import shutil
    import subprocess

    if not shutil.which("sqlite3"):
        pytest.skip("no sqlite3 shell")
    for sql in ("UPDATE events SET type='x';", "DELETE FROM events;",
                "INSERT OR REPLACE INTO events SELECT * FROM events;",
                "REPLACE INTO events SELECT * FROM events;"):
        done = subprocess.run(["sqlite3", str(log.path), sql], capture_output=True, text=True)
        assert done.returncode != 0 and "append-only" in done.stderr, sql
    assert log.count() == 2


def test_plain_insert_is_still_allowed(raw: sqlite3.Connection, log: EventLog) -> None:
    raw.execute(
        "INSERT INTO events (id, stream, stream_version, type, schema_version, occurred_at,"
        " recorded_at, payload, meta) VALUES ('Z1', 's2', 1, 'UserTurn', 1, 'a', 'b',"
        " '{\"session\":\"s2\",\"text\":\"x\",\"name\":\"\"}', '{}')"
    )
    raw.commit()
    assert log.head() == 3


def test_wal_and_full_sync(log: EventLog) -> None:
    assert log.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert log.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


# --- appending -----------------------------------------------------------------------------


def test_append_assigns_seq_ulid_versions_and_times(log: EventLog) -> None:
    at = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    with clock.frozen(dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)):
        a = log.append(turn("a"), stream="s1", occurred_at=at, ref="r1",
                       causation_id="C", correlation_id="K")
        b = log.append(turn("b"), stream="s2")
        c = log.append(turn("c"), stream="s1")
    assert (a.seq, b.seq, c.seq) == (1, 2, 3)
    assert (a.stream_version, b.stream_version, c.stream_version) == (1, 1, 2)
    assert is_ulid(a.id) and a.id < b.id < c.id
    assert a.occurred_at == "2024-05-01T10:00:00.000000Z"  # kept, normalised to UTC
    assert a.recorded_at == b.occurred_at == "2025-01-02T03:04:05.000000Z"
    assert a.meta == {"causation_id": "C", "correlation_id": "K", "ref": "r1"}
    assert log.get(a.id) == a == log.get("1") == log.get("r1")
    assert log.get(a.id).data == turn("a")


def test_stale_expected_version_raises_and_appends_nothing(log: EventLog) -> None:
    log.append(turn(), stream="s1", expected_version=0)
    log.append(turn(), stream="s1", expected_version=1)
    with pytest.raises(ConcurrencyError, match=r"stream 's1' is at version 2, expected 1"):
        log.append(turn(), stream="s1", expected_version=1)
    assert log.count() == 2


def test_two_writers_same_expected_version_one_wins(log: EventLog) -> None:
    other = EventLog(log.path)
    log.append(turn(), stream="s1", expected_version=0)
    with pytest.raises(ConcurrencyError):
        other.append(turn(), stream="s1", expected_version=0)
    other.close()


def test_failed_batch_appends_nothing(log: EventLog) -> None:
    log.append(turn(), stream="s1")
    batch = [NewEvent("s2", turn("ok")), NewEvent("s1", turn("stale"), expected_version=0)]
    with pytest.raises(ConcurrencyError):
        log.append_many(batch)
    assert log.count() == 1 and log.stream_version("s2") == 0


def test_idempotency_key_returns_the_original(log: EventLog) -> None:
    first = log.append(turn("a"), stream="s1", idempotency_key="once")
    again = log.append(turn("different"), stream="s1", idempotency_key="once")
    assert again == first and log.count() == 1
    batch = log.append_many([NewEvent("s1", turn("x"), idempotency_key="two"),
                             NewEvent("s1", turn("y"), idempotency_key="two"),
                             NewEvent("s1", turn("z"), idempotency_key="once")])
    assert batch.new == 1 and batch[0] == batch[1] and batch[2] == first
    assert log.count() == 2


def test_a_batch_check_runs_under_the_write_lock(log: EventLog) -> None:
    """``append_many(check=...)`` checks what is in the log while no one else can append, so
    a conflict cannot slip in between the check and the append; raising appends nothing."""
    other = sqlite3.connect(log.path, timeout=0)
    seen: list[int] = []

    def check() -> None:
        seen.append(log.count())
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("INSERT INTO events (id, stream, stream_version, type,"
                          " schema_version, occurred_at, recorded_at, payload, meta)"
                          " VALUES ('X', 'z', 1, 'UserTurn', 1, 'a', 'b', '{}', '{}')")

    log.append_many([NewEvent("s1", turn())], check=check)
    assert seen == [0] and log.count() == 1

    def refuse() -> None:
        raise ConcurrencyError("no")

    with pytest.raises(ConcurrencyError):
        log.append_many([NewEvent("s1", turn("two"))], check=refuse)
    assert log.count() == 1
    other.close()


def test_events_by_idempotency_keys(log: EventLog) -> None:
    a = log.append(turn("a"), stream="s1", idempotency_key="ka")
    log.append(turn("b"), stream="s1", idempotency_key="kb")
    assert log.by_idempotency_keys(["ka", "nope"]) == {"ka": a}
    assert log.by_idempotency_keys([]) == {}


def test_text_that_is_not_unicode_is_refused_clearly(log: EventLog) -> None:
    from events import DiaristError

    with pytest.raises(DiaristError, match="UserTurn holds text that is not valid Unicode"):
        log.append(turn("broken \ud800 text"), stream="s1")
    assert log.count() == 0


def test_times_before_year_1000_are_stored_zero_padded() -> None:
    """glibc's strftime("%Y") writes year 1 as "1": stored times must sort as text."""
    early = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
    assert clock.to_iso(early) == "0001-01-01T00:00:00.000000Z"
    assert clock.to_display(early) == "0001-01-01T00:00:00Z"
    assert clock.to_iso(early) < clock.to_iso(dt.datetime(999, 1, 1, tzinfo=dt.UTC)) < \
        clock.to_iso(dt.datetime(2024, 1, 1, tzinfo=dt.UTC))


def test_unregistered_event_type_is_refused(log: EventLog) -> None:
    @dataclass(frozen=True)
    class Stray(Event):
        x: int

    with pytest.raises(UnknownEventType, match="Stray"):
        log.append(Stray(1), stream="s1")
    assert log.count() == 0


def test_get_unknown_raises_not_found(log: EventLog) -> None:
    with pytest.raises(NotFound, match="no event 'nope'"):
        log.get("nope")


def test_read_filters(log: EventLog) -> None:
    log.append(SessionStarted(session="s1"), stream="s1")
    log.append(turn(), stream="s1")
    log.append(Remembered(text="x"), stream="memory")
    assert ([e.type for e in log.read(types=["UserTurn", "Remembered"])]
            == ["UserTurn", "Remembered"])
    assert [e.seq for e in log.read(stream="memory")] == [3]
    assert [e.seq for e in log.read(1, upto=2)] == [2]
    assert [e.seq for e in log.read(descending=True, limit=2)] == [3, 2]


def test_ulids_are_monotonic_and_unique() -> None:
    ids = [new_ulid() for _ in range(5000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


# --- upcasting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Note(Event):
    """v2 of a test type: v1 had one `body` field, v2 splits title and text."""

    schema_version = 2
    title: str
    text: str


def test_v1_payload_is_upcast_to_v2_on_read(home: Home) -> None:
    reg = Registry()
    reg.register(Note)

    @reg.upcaster("Note", 1)
    def note_v1_to_v2(payload: dict) -> dict:
        title, _, text = payload.pop("body").partition("\n")
        return {**payload, "title": title, "text": text}

    with EventLog(home.events_db, registry=reg) as log:
        # a row written by an older diarist, at schema_version 1
        log.db.execute(
            "INSERT INTO events (id, stream, stream_version, type, schema_version, occurred_at,"
            " recorded_at, payload, meta) VALUES (?, 'n', 1, 'Note', 1, 'a', 'b', ?, '{}')",
            (new_ulid(), '{"body":"Shopping\\nmilk, eggs"}'),
        )
        log.append(Note(title="Now", text="v2 body"), stream="n")
        old, new = log.read()
        assert (old.schema_version == 2
                and old.payload == {"title": "Shopping", "text": "milk, eggs"})
        assert old.data == Note(title="Shopping", text="milk, eggs")
        assert new.data == Note(title="Now", text="v2 body")
        # the stored row itself is never rewritten
        stored = log.db.execute("SELECT schema_version, payload FROM events WHERE seq=1").fetchone()
        assert stored == (1, '{"body":"Shopping\\nmilk, eggs"}')


def test_missing_upcaster_is_a_clear_error() -> None:
    reg = Registry()
    reg.register(Note)
    with pytest.raises(UnknownEventType, match="no upcaster for Note v1"):
        reg.upcast("Note", 1, {"body": "x"})


# --- migrations ----------------------------------------------------------------------------


def test_migrations_are_recorded_and_run_once(log: EventLog) -> None:
    rows = log.db.execute("SELECT migration_set, name FROM _migrations").fetchall()
    assert rows == [("events", "m001_events"), ("events", "m002_redaction_permit")]
    assert migrations.apply(log.db) == []
    EventLog(log.path).close()  # reopening applies nothing again
    assert log.db.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] == 2


def test_retry_busy_waits_out_a_lock_and_gives_up_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from events import db
    from events.db import retry_busy

    calls: list[int] = []
    waits: list[float] = []
    real_sleep = time.sleep

    def recorded_sleep(seconds: float) -> None:
        waits.append(seconds)
        real_sleep(seconds)

    def locked_twice() -> str:
        calls.append(len(calls))
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    # the waits asked for, not the wall time between calls: a loaded machine oversleeps
    monkeypatch.setattr(db.time, "sleep", recorded_sleep)
    assert retry_busy(locked_twice, timeout=5) == "done" and len(calls) == 3
    assert waits == [0.005, 0.01]  # backs off: twice as long each time
    monkeypatch.undo()

    def broken() -> None:
        raise sqlite3.OperationalError("no such table: x")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_busy(broken, timeout=5)  # not a lock: at once

    def always_locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_busy(always_locked, timeout=0.3)
    assert time.monotonic() - started < 1.0


def test_a_read_transaction_reads_one_snapshot(tmp_path: Path) -> None:
    """Recall reads its candidates, their neighbours and replies in one read transaction: a
    commit another connection makes meanwhile is not seen until it ends; inside a caller's
    transaction it opens none of its own."""
    from events.db import read_transaction
    from events.log import connect

    path = tmp_path / "x.db"
    reader, writer = connect(path), connect(path)
    writer.execute("CREATE TABLE t (n INTEGER)")
    writer.execute("INSERT INTO t VALUES (1)")
    with read_transaction(reader):
        assert reader.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1
        writer.execute("INSERT INTO t VALUES (2)")
        assert reader.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1
    assert not reader.in_transaction
    assert reader.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 2
    reader.execute("BEGIN")
    with read_transaction(reader):
        pass
    assert reader.in_transaction  # the caller's, left open
    reader.execute("COMMIT")
