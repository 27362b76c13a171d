"""One bad row must not stop everything (issue 14, item 5).

A row this diarist cannot read — a payload that does not fit its type, a ``schema_version``
newer than it knows, a type it does not know — is put into the log by hand (a raw INSERT:
the append-only triggers reject only UPDATE, DELETE and REPLACE). Reading commands show it
raw with a marker; projecting stops just before it and names it (seq, id, type,
schema_version) — nothing skipped, nothing half-built; appends still work."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from events import EventLog, Home
from events.types import MemoriesMined
from projections import open_store

from .conftest import make_turns, run, write_transcript

BAD_ID = "01BADR0W000000000000000000"

# (name, type, schema_version, payload, what the marker says)
BAD_ROWS = [
    ("wrong field type", "UserTurn", 1, {"session": 5, "text": "hi"},
     "UserTurn.session should be str, not the number 5"),
    ("missing field", "UserTurn", 1, {"session": "s9"}, "the payload lacks UserTurn.text"),
    ("not an object", "Remembered", 1, ["just", "a", "list"],
     "the payload is a JSON list, not an object"),
    ("newer schema_version", "Remembered", 99, {"text": "from the future"},
     "Remembered v99 is newer than this diarist (v1)"),
    ("unknown type", "TurnFromTheFuture", 1, {"session": "s9", "text": "hi"},
     "unknown event type 'TurnFromTheFuture'"),
]


def insert_raw(home: Home, type_: str, schema_version: int, payload: object,
               stream: str = "s9", event_id: str = BAD_ID) -> int:
    """Insert one row by hand, as a damaged or newer writer would; returns its seq."""
    db = sqlite3.connect(home.events_db)
    try:
        version = db.execute("SELECT COALESCE(MAX(stream_version), 0) + 1 FROM events"
                             " WHERE stream = ?", (stream,)).fetchone()[0]
        cursor = db.execute(
            "INSERT INTO events (id, stream, stream_version, type, schema_version, occurred_at,"
            " recorded_at, payload, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}')",
            (event_id, stream, version, type_, schema_version, "2024-01-02T00:00:00.000000Z",
             "2024-01-02T00:00:00.000000Z", json.dumps(payload)))
        db.commit()
        assert cursor.lastrowid is not None
        return cursor.lastrowid
    finally:
        db.close()


def projection_rows(home: Home) -> tuple[dict[str, int], int, list[str]]:
    """(positions, turn rows, journal files) of the home's projections."""
    db = sqlite3.connect(home.projections_db)
    try:
        positions = dict(db.execute("SELECT name, position FROM projection_state").fetchall())
        turns = db.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    finally:
        db.close()
    return positions, turns, sorted(p.name for p in home.memory_dir.glob("*.md"))


@pytest.fixture
def synced(home: Home, tmp_path: Path) -> Home:
    """A home with 10 turns and a note, all projected."""
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(10))))
    run("remember", "I like green tea")
    run("sync")
    return home


@pytest.mark.parametrize(("kind", "type_", "version", "payload", "marker"), BAD_ROWS,
                         ids=[row[0] for row in BAD_ROWS])
def test_reading_commands_show_a_bad_row_raw_with_a_marker(synced: Home, kind: str, type_: str,
                                                          version: int, payload: object,
                                                          marker: str) -> None:
    seq = insert_raw(synced, type_, version, payload)

    listed = run("events", "-n", "3").output
    line = next(text for text in listed.splitlines() if text.strip().startswith(str(seq)))
    assert f"[unreadable v{version}: {marker}" in line and type_ in line
    assert json.dumps(payload, sort_keys=True)[:20] in line  # the raw payload, as stored
    as_json = [json.loads(text) for text in run("events", "--json").output.splitlines()]
    assert as_json[-1]["seq"] == seq and marker in as_json[-1]["problem"]
    assert as_json[-1]["payload"] == payload and as_json[-1]["schema_version"] == version
    assert all("problem" not in e for e in as_json[:-1])  # only the bad row is marked
    shown = json.loads(run("events", "show", str(seq)).stdout)
    assert shown["id"] == BAD_ID and marker in shown["problem"]

    exported = run("export")
    lines = [json.loads(text) for text in exported.stdout.splitlines()]
    assert [t["text"] for t in lines if "text" in t] == [t["text"] for t in make_turns(10)]
    marked = [t for t in lines if "unreadable" in t]
    if type_ == "Remembered":  # not a turn: export leaves it out, as any note
        assert marked == [] and "Warning" not in exported.stderr
    else:  # a turn (or maybe one: a type it does not know) is written raw, marked
        assert len(marked) == 1 and marked[0]["unreadable"]["seq"] == seq
        assert marker in marked[0]["problem"] and marked[0]["unreadable"]["payload"] == payload
        assert f"event seq {seq} (id {BAD_ID}" in exported.stderr


@pytest.mark.parametrize(("kind", "type_", "version", "payload", "marker"), BAD_ROWS,
                         ids=[row[0] for row in BAD_ROWS])
def test_projecting_stops_before_a_bad_row_and_names_it(synced: Home, tmp_path: Path,
                                                        kind: str, type_: str, version: int,
                                                        payload: object, marker: str) -> None:
    run("remember", "before the bad row")  # projected at once
    seq = insert_raw(synced, type_, version, payload)
    after = write_transcript(tmp_path / "after.jsonl", make_turns(4, session="late", prefix="a"))
    run("import", str(after))  # appends still work after a bad row
    before = projection_rows(synced)
    assert set(before[0].values()) == {seq - 1}

    for command in (["sync"], ["replay"]):
        result = run(*command, ok=False)
        assert result.exit_code == 1, result.output
        named = (f"event seq {seq} (id {BAD_ID}, type {type_}, schema_version {version}) "
                 "cannot be projected")
        assert named in result.output and marker in result.output
        assert f"the projections stay at seq {seq - 1}" in result.output
        assert f"diarist redact {BAD_ID}" in result.output and "upgrade diarist" in result.output
        assert "Traceback" not in result.output
        # nothing after it was projected, and a failed replay left everything as it was
        assert projection_rows(synced) == before
        assert not list(synced.root.glob(".replay-*"))

    status = run("status").output
    assert f"stuck: event seq {seq} (id {BAD_ID}, type {type_}" in status and marker in status

    remembered = run("remember", "still works")
    assert remembered.exit_code == 0 and "Remembered " in remembered.stdout
    assert f"memory is not up to date: event seq {seq}" in remembered.stderr
    with EventLog(synced.events_db) as log:
        assert log.read(descending=True, limit=1)[0].payload["text"] == "still works"


def test_a_failed_replay_leaves_the_previous_projections_intact(synced: Home) -> None:
    """The live projections are only replaced by a complete build: a replay that stops at a
    bad row keeps every row, file and digest (an in-place rebuild would leave the turns
    table empty)."""
    with open_store(synced) as store:
        digests = {name: store.digest(name) for name in store.projectors}
        store.log.close()
    insert_raw(synced, "Remembered", 99, {"text": "x"})
    assert run("replay", ok=False).exit_code == 1
    with open_store(synced) as store:
        assert {name: store.digest(name) for name in store.projectors} == digests
        assert store.db.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 10
        store.log.close()


def test_a_payload_the_projector_cannot_apply_is_named_and_nothing_is_half_applied(
        synced: Home) -> None:
    """A row that fits its type but not what a projector needs (a mined memory without an
    id): the batch is rolled back and re-applied up to the event before it."""
    run("remember", "first")
    good = {"id": "m1", "type": "user_preference", "content": "Ann likes tea", "at":
            "2024-01-01T00:00:00Z"}
    with EventLog(synced.events_db) as log:
        log.append(MemoriesMined(session="s1", memories=[good]), stream="mining")
        seq = log.append(MemoriesMined(session="s1", memories=[
            {**good, "id": "m2", "content": "Ann likes coffee"},
            {"type": "user_preference", "content": "no id here"}]), stream="mining").seq
    result = run("sync", ok=False)
    assert result.exit_code == 1
    assert f"event seq {seq} (id " in result.output and "type MemoriesMined" in result.output
    assert "the journal projection cannot apply it (KeyError: 'id')" in result.output
    positions, _turns, _files = projection_rows(synced)
    assert positions["journal"] == seq - 1  # the good MemoriesMined is in
    db = sqlite3.connect(synced.projections_db)
    try:
        contents = [r[0] for r in db.execute("SELECT content FROM journal_entries")]
    finally:
        db.close()
    assert "Ann likes tea" in contents and "Ann likes coffee" not in contents  # not half


def test_a_good_log_reads_without_problems(synced: Home) -> None:
    """The shape check has no false alarms on what diarist itself writes (every type the
    suite writes is covered by its own tests; here a mixed home)."""
    with EventLog(synced.events_db) as log:
        events = list(log.iter_all())
    assert events and all(e.problem is None for e in events)
    assert all(e.data is not None for e in events)


def test_the_chat_still_works_with_a_bad_row_in_the_log(synced: Home, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cli.main import cli

    from .conftest import rules

    seq = insert_raw(synced, "Remembered", 99, {"text": "from the future"})
    script = rules(tmp_path, {"match": "tea", "reply": "Green tea it is."})
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--script", str(script),
                                      "--no-tools"],
                                input="what tea do I like?\n/remember I like oolong\n/exit\n",
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "assistant> Green tea it is." in result.output
    warning = f"(warning: saved in the log, but memory is not up to date: event seq {seq} (id "
    assert result.output.count(warning) == 1  # shown once, not after every reply
    with EventLog(synced.events_db) as log:
        texts = [e.payload.get("text") for e in log.read(seq) if isinstance(e.payload, dict)]
    assert "what tea do I like?" in texts and "Green tea it is." in texts
    assert "I like oolong" in texts
