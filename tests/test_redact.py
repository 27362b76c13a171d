"""`diarist redact`: the one audited change of history. The secret's bytes leave every file
under the home; the log says what was done and when, never what was masked."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from events import EventLog, Home
from events.types import Remembered, UserTurn

from .conftest import REPO, run, subprocess_env
from .test_secrets import SECRETS, files_with_secrets, leaks, pasted_transcript

DIARY = "tulip-seven-42-moonrise"   # a secret the scrubber cannot know: redacted by pattern


def head(home: Home) -> int:
    with EventLog(home.events_db) as log:
        return log.head()


def redacted_events(home: Home) -> list[dict]:
    with EventLog(home.events_db) as log:
        return [e.payload for e in log.read(types=["Redacted"])]


# --- the guard ------------------------------------------------------------------------------


def test_the_append_only_guard_has_one_narrow_exception(home: Home) -> None:
    with EventLog(home.events_db) as log:
        event = log.append(UserTurn(session="s", text="my key"), stream="s")
        log.append(UserTurn(session="s", text="another"), stream="s")
    db = sqlite3.connect(home.events_db, isolation_level=None)
    masked = json.dumps({"name": "", "session": "s", "text": "[redacted]"})
    with pytest.raises(sqlite3.IntegrityError, match="append-only: UPDATE rejected"):
        db.execute("UPDATE events SET payload = ? WHERE seq = ?", (masked, event.seq))
    db.execute("INSERT INTO events_redaction (seq, payload) VALUES (?, ?)", (event.seq, masked))
    with pytest.raises(sqlite3.IntegrityError, match="UPDATE rejected"):  # not the permitted text
        db.execute("UPDATE events SET payload = '{}' WHERE seq = ?", (event.seq,))
    with pytest.raises(sqlite3.IntegrityError, match="UPDATE rejected"):  # another column too
        db.execute("UPDATE events SET payload = ?, stream = 'x' WHERE seq = ?",
                   (masked, event.seq))
    with pytest.raises(sqlite3.IntegrityError, match="UPDATE rejected"):  # another row
        db.execute("UPDATE events SET payload = ? WHERE seq <> ?", (masked, event.seq))
    with pytest.raises(sqlite3.IntegrityError, match="DELETE rejected"):
        db.execute("DELETE FROM events")
    db.close()


def test_a_log_from_before_redact_gets_the_guarded_path_on_open(tmp_path: Path) -> None:
    """A log written before m002 (only m001's triggers): opening it adds the permit table and
    the narrowed trigger; its events are untouched and still append-only."""
    from events.log import m001_events, migrations

    path = tmp_path / "events.db"
    db = sqlite3.connect(path, isolation_level=None)
    migrations._ensure_table(db)
    m001_events(db)
    db.execute("INSERT INTO _migrations VALUES ('events', 'm001_events', 'then')")
    db.execute("INSERT INTO events (id, stream, stream_version, type, schema_version,"
               " occurred_at, recorded_at, payload, meta) VALUES ('01A', 's', 1, 'UserTurn', 1,"
               " 't', 't', '{\"session\": \"s\", \"text\": \"old\"}', '{}')")
    db.close()
    with EventLog(path) as log:
        assert log.get(1).payload["text"] == "old"
        with pytest.raises(sqlite3.IntegrityError, match="UPDATE rejected"):
            log.db.execute("UPDATE events SET payload = '{}'")
        assert log.db.execute("SELECT COUNT(*) FROM events_redaction").fetchone()[0] == 0


# --- end to end -----------------------------------------------------------------------------


def enqueue_chunk_with(home: Home, text: str) -> None:
    """What a mining pass over a Redis queue leaves while it runs: a queued `mine.extract`
    task carrying turn text, and a result under a `mine:` key."""
    from workers.app import configure, mining_queue
    from workers.tasks import mine_extract_task

    configure(home)
    mine_extract_task("pass1", {"key": "s1:1", "turns": [{"text": text}]}, {"backend": "h"})
    mining_queue.put("mine:pass1:s1:1:result", {"memories": [{"content": text}]})
    mining_queue.storage.close()


def test_redact_leaves_the_secret_in_no_file_under_the_home(
        model_home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets pasted into an import (the assistant echoing some), a `remember` and a note
    the scrubber cannot recognise; the home synced with the real embedder, mined, dreamt,
    consolidated, with a mining task queued. Three redactions — by the scrubber, by a
    literal pattern, by a regex — and no file under the home (the log, its -wal and -shm,
    projections, journals, MEMORY.md, vector files, the queue) holds a secret's bytes;
    `replay --verify` passes; `events show` and `export` show `[redacted]`."""
    home = model_home
    monkeypatch.delenv("DIARIST_NO_EMBED")
    run("import", str(pasted_transcript(tmp_path / "pasted.jsonl")))
    run("remember", f"the deploy token is {SECRETS['github']} and postgres://ann:"
                    f"{SECRETS['postgres']}@db.local:5432/app")
    run("remember", f"my diary code is {DIARY}, I like it")
    run("remember", f"my backup key:\n{long_key_block()}")  # long: overflow pages in the log
    run("sync")
    run("mine", "--heuristic")
    run("dream")
    run("consolidate", "--heuristic")
    enqueue_chunk_with(home, f"my diary code is {DIARY}")
    queue = b"".join(p.read_bytes() for p in home.root.glob("queue.db*"))
    assert DIARY.encode() in queue and leaks(queue) == []
    assert files_with_secrets(home.root) == {}  # the scrubber kept them out of projections
    assert set(leaks(b"".join(p.read_bytes() for p in home.root.glob("events.db*")))) == set(
        SECRETS)

    for i in range(12):  # every pasted turn: the scrubber finds what is in it
        result = run("redact", f"p:{i}", ok=False)
        assert result.exit_code in (0, 1), result.output
    note = next(e for e in read_all(home) if DIARY in json.dumps(e["payload"]))
    run("redact", note["id"], "--pattern", DIARY, "--reason", "diary code")
    for secret in ("postgres", "pgp"):
        remembered = next(e for e in read_all(home) if e["type"] == "Remembered"
                          and SECRETS[secret] in json.dumps(e["payload"]))
        run("redact", remembered["id"])
    # a regex too (nothing left to mask by then: it says so and appends nothing)
    before = head(home)
    out = run("redact", remembered["id"], "--pattern", r"ghp_\w+", "--regex").output
    assert "Nothing left to mask" in out and head(home) == before

    readers = [sqlite3.connect(home.root / name) for name in ("events.db", "projections.db")]
    try:  # with connections open, each database has its -wal and -shm on disk
        for reader in readers:
            reader.execute("SELECT 1 FROM sqlite_master").fetchall()
        names = {p.name for p in home.root.iterdir()}
        assert {"events.db-wal", "events.db-shm", "projections.db-wal"} <= names, names
        secrets = {**SECRETS, "diary": DIARY}
        found = {}
        for path in home.root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                hits = [k for k, v in secrets.items() if v.encode() in data
                        or json.dumps(v)[1:-1].encode() in data]
                if hits:
                    found[path.relative_to(home.root).as_posix()] = hits
        assert found == {}, found
    finally:
        for reader in readers:
            reader.close()
    assert list((home.root / "vectors").glob("*.f32")), "the vector files were looked at too"

    verify = run("replay", "--verify").output
    assert "DIFFERENT" not in verify.upper() and "ok at" in verify, verify
    shown = run("events", "show", "p:0").output
    assert "[redacted]" in shown and "Leeds" in shown
    exported = run("export").output
    assert "[redacted]" in exported and not leaks(exported) and DIARY not in exported
    records = redacted_events(home)
    assert records and not leaks(json.dumps(records)) and DIARY not in json.dumps(records)
    assert any(r["how"] == "pattern" and r["reason"] == "diary code" for r in records)
    assert {k for r in records for k in r["kinds"]} >= {"OpenAI key", "password", "private key"}


def long_key_block() -> str:
    """A 6 KB private key block whose first line holds SECRETS["pgp"]."""
    import base64
    import random

    body = SECRETS["pgp"] + base64.b64encode(random.Random(7).randbytes(4500)).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(lines)
            + "\n-----END PGP PRIVATE KEY BLOCK-----")


def read_all(home: Home) -> list[dict]:
    with EventLog(home.events_db) as log:
        return [e.to_json() for e in log.read()]


def test_an_echoed_secret_is_masked_in_every_event_that_repeats_it(home: Home) -> None:
    key = SECRETS["openai"]
    with EventLog(home.events_db) as log:
        said = log.append(UserTurn(session="s", text=f"my key is {key}"), stream="s", ref="a")
        log.append(UserTurn(session="s", text=f"I repeat: {key}!", name="Bot"), stream="s")
        log.append(Remembered(text=f"key{key}suffix stays: not a whole word"), stream="memory")
    out = run("redact", "a").output
    assert "Masked 2 span(s) (OpenAI key) found by the scrubber in 2 event(s)" in out, out
    texts = [e["payload"].get("text") for e in read_all(home)]
    assert texts[:2] == ["my key is [redacted]", "I repeat: [redacted]!"]
    (record,) = redacted_events(home)
    assert record["event_id"] == said.id and record["fields"] == ["text"]
    assert [e["seq"] for e in record["events"]] == [1, 2] and record["masked"] == 2


# --- refusals and idempotency ---------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["redact", "a"], "the scrubber finds no secret in event 1"),
    (["redact", "a", "--pattern", "nowhere"], "the pattern matches nothing in event 1"),
    (["redact", "a", "--pattern", ""], "--pattern is empty"),
    (["redact", "a", "--pattern", "(", "--regex"], "not a valid regular expression"),
    (["redact", "a", "--regex"], "--regex needs --pattern"),
    (["redact", "nope"], "no event 'nope'"),
])
def test_bad_requests_are_refused_and_change_nothing(home: Home, args: list[str],
                                                     message: str) -> None:
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text="I like tea"), stream="s", ref="a")
    before = home.events_db.read_bytes()
    result = run(*args, ok=False)
    assert result.exit_code in (1, 2) and message in result.output, result.output
    assert "Traceback" not in result.output
    assert home.events_db.read_bytes() == before and head(home) == 1


def test_redact_twice_appends_nothing_the_second_time(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text="DB_PASSWORD=hunter2pass"), stream="s", ref="a")
    assert "Masked 1 span(s) (password)" in run("redact", "a").output
    after = head(home)
    again = run("redact", "a").output
    assert "Nothing left to mask in event 1" in again and "redacted before" in again
    assert head(home) == after
    same = run("redact", "a", "--pattern", "[redacted]").output  # masking the mask: no change
    assert "Nothing left to mask" in same and head(home) == after
    dry = run("redact", "a", "--pattern", "DB_PASSWORD", "--dry-run").output
    assert "Would mask 1 span(s) found by the pattern" in dry and head(home) == after


def test_dry_run_changes_nothing(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text=f"token {SECRETS['github']}"), stream="s", ref="a")
    before = home.events_db.read_bytes()
    out = run("redact", "a", "--dry-run").output
    assert "Would mask 1 span(s) (GitHub token)" in out and "Projections" not in out
    assert home.events_db.read_bytes() == before


# --- crashes --------------------------------------------------------------------------------

# argv: the point to die at ("in-transaction" or "after-commit"), then redact's arguments.
DIE_AT = textwrap.dedent("""
    import os, signal, sys
    point, args = sys.argv[1], sys.argv[2:]
    from events.log import EventLog
    import workers.redaction.redact as redaction

    def die(*_a, **_k):
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "in-transaction":  # after the UPDATEs, before the Redacted append commits
        EventLog._append_one = die
    else:                          # the log committed, nothing cleaned up yet
        redaction.compact = die
    sys.argv = ["diarist", "redact", *args]
    from cli.main import main
    main()
""")


def test_a_redact_killed_in_its_transaction_changed_nothing(home: Home) -> None:
    key = SECRETS["openai"]
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text=f"my key is {key}"), stream="s", ref="a")
    run("sync")
    done = subprocess.run([sys.executable, "-c", DIE_AT, "in-transaction", "a"],
                          env=subprocess_env(home), capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with EventLog(home.events_db) as log:
        assert log.head() == 1 and key in log.get("a").payload["text"]
        assert log.db.execute("SELECT COUNT(*) FROM events_redaction").fetchone()[0] == 0
    assert "Masked 1 span(s)" in run("redact", "a").output  # and it can be done again


def test_a_redact_killed_after_its_commit_is_finished_by_running_it_again(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text=f"my diary code is {DIARY}"), stream="s", ref="a")
    run("sync")
    done = subprocess.run([sys.executable, "-c", DIE_AT, "after-commit", "a", "--pattern",
                           DIARY], env=subprocess_env(home), capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert head(home) == 2  # the rewrite and its Redacted are in the log ...
    assert DIARY.encode() in home.projections_db.read_bytes() + b"".join(
        p.read_bytes() for p in home.root.glob("projections.db-wal"))  # ... not yet cleaned
    out = run("redact", "a", "--pattern", DIARY).output
    assert "Nothing left to mask" in out and "Projections rebuilt" in out and head(home) == 2
    holding = [p.name for p in home.root.rglob("*") if p.is_file()
               and DIARY.encode() in p.read_bytes()]
    assert holding == []
    assert "ok at" in run("replay", "--verify").output


# --- the clean-up's parts -------------------------------------------------------------------


def test_vacuum_leaves_no_deleted_bytes_even_without_secure_delete(tmp_path: Path) -> None:
    """Some SQLite builds keep freed pages' bytes (this machine's is compiled with
    SECURE_DELETE, so the end-to-end test alone would not show it): VACUUM and a truncated
    WAL leave none."""
    from workers.redaction.compact import vacuum

    path = tmp_path / "x.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA secure_delete=OFF")
    db.execute("CREATE TABLE t (v TEXT)")
    db.execute("INSERT INTO t VALUES (?)", (DIARY * 400,))  # overflow pages
    db.execute("INSERT INTO t VALUES ('kept')")
    db.execute("DELETE FROM t WHERE v <> 'kept'")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    assert DIARY.encode() in path.read_bytes()  # the freed pages still hold it
    assert vacuum(path)
    assert DIARY.encode() not in path.read_bytes()
    assert not (tmp_path / "x.db-wal").exists() or (tmp_path / "x.db-wal").stat().st_size == 0


def test_copies_redact_cannot_rewrite_are_named(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text=f"my diary code is {DIARY}"), stream="s", ref="a")
    run("export", "-o", str(home.root / "my-export.jsonl"))
    result = run("redact", "a", "--pattern", DIARY)
    assert "still hold the masked text" in result.output and "my-export.jsonl" in result.output
    assert DIARY not in run("events", "show", "a").output


def test_a_reader_holding_the_log_is_reported(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="s", text=f"my diary code is {DIARY}"), stream="s", ref="a")
    reader = sqlite3.connect(home.events_db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM events").fetchone()  # a read transaction stays open
    try:
        result = run("redact", "a", "--pattern", DIARY)
    finally:
        reader.close()
    assert "another process holds events.db open" in result.output, result.output
    assert "run this command again" in result.output
    again = run("redact", "a", "--pattern", DIARY).output
    assert "vacuumed events.db" in again and "another process" not in again
    assert DIARY.encode() not in b"".join(p.read_bytes() for p in home.root.glob("events.db*"))
