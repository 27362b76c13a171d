"""Transcript import (validation, idempotency, all-or-nothing) and export round trips."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from events import EventLog, Home, ImportFailed
from events.transcript import export_lines, import_file

from .conftest import diarist_cmd, make_turns, subprocess_env, write_transcript

GOOD = {"session": "s1", "at": "2024-01-01T10:00:00Z", "role": "user", "name": "Ann",
        "text": "hello", "ref": "r1"}


def bad_file(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("line, message", [
    ("{not json", "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
    ('["a list"]', "expected a JSON object"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "text"} | {"ref": "r2"}),
     "missing field 'text'"),
    (json.dumps({k: v for k, v in GOOD.items() if k not in ("at", "ref")}),
     "missing field 'at', 'ref'"),
    (json.dumps(GOOD | {"ref": "r2", "role": "system"}),
     "unknown role 'system' (expected 'user' or 'assistant')"),
    (json.dumps(GOOD | {"ref": "r2", "at": "2024-01-01T10:00:00"}),
     "'at' '2024-01-01T10:00:00' has no UTC offset (add 'Z' or '+hh:mm')"),
    (json.dumps(GOOD | {"ref": "r2", "at": "yesterday"}),
     "'at' 'yesterday' is not an ISO-8601 time (e.g. 2024-05-01T09:30:00Z)"),
    (json.dumps(GOOD | {"ref": "r2", "text": "   "}), "empty 'text'"),
    (json.dumps(GOOD | {"ref": "r2", "session": ""}), "empty 'session'"),
    (json.dumps(GOOD | {"ref": "r2", "text": 5}), "field 'text' must be a string, got int"),
    (json.dumps(GOOD | {"ref": "r2", "mood": "ok"}),
     "unknown field 'mood' (allowed: session, at, role, name, text, ref)"),
    (json.dumps(GOOD), "duplicate ref 'r1' (first on line 1)"),
])
def test_malformed_line_fails_whole_import(tmp_path: Path, log: EventLog, line: str,
                                           message: str) -> None:
    path = bad_file(tmp_path, line)
    with pytest.raises(ImportFailed) as info:
        import_file(log, path)
    assert str(info.value) == f"{path}:2: {message}"
    assert log.count() == 0


def test_every_bad_line_is_reported(tmp_path: Path, log: EventLog) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("{\n" + json.dumps(GOOD) + "\n\n[]\n", encoding="utf-8")
    with pytest.raises(ImportFailed) as info:
        import_file(log, path)
    assert str(info.value).splitlines() == [
        f"{path}:1: not valid JSON (Expecting property name enclosed in double quotes at column 1)",
        f"{path}:4: expected a JSON object",
    ]


def test_missing_and_empty_files(tmp_path: Path, log: EventLog) -> None:
    with pytest.raises(ImportFailed, match="no such file"):
        import_file(log, tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(ImportFailed, match="no turns found"):
        import_file(log, tmp_path / "empty.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ImportFailed, match="not UTF-8"):
        import_file(log, tmp_path / "bin.jsonl")
    assert log.count() == 0


def test_import_makes_session_events_and_keeps_time_and_ref(tmp_path: Path, log: EventLog) -> None:
    turns = make_turns(3, "a") + make_turns(2, "b")
    turns[1]["at"] = "2024-01-01T02:00:01+02:00"
    result = import_file(log, write_transcript(tmp_path / "t.jsonl", turns))
    assert (result.turns, result.sessions, result.appended, result.skipped) == (5, 2, 9, 0)
    assert [e.type for e in log.read()] == [
        "SessionStarted", "UserTurn", "AssistantTurn", "UserTurn", "SessionEnded",
        "SessionStarted", "UserTurn", "AssistantTurn", "SessionEnded"]
    second = log.read()[2]
    assert second.occurred_at == "2024-01-01T00:00:01.000000Z" and second.ref == "t:a:1"
    assert second.payload == {"session": "a", "text": turns[1]["text"], "name": "Bot",
                              "prompt_tokens": None, "reply_tokens": None, "elapsed_ms": None,
                              "tokens_per_sec": None, "interrupted": False}
    ended = log.read()[4]
    assert ended.payload == {"session": "a", "turns": 3}
    assert ended.occurred_at == "2024-01-01T00:00:02.000000Z"


def test_import_twice_appends_nothing(tmp_path: Path, log: EventLog) -> None:
    path = write_transcript(tmp_path / "t.jsonl", make_turns(10))
    import_file(log, path)
    again = import_file(log, path)
    assert again.appended == 0 and again.skipped == 12 and log.count() == 12


def test_locomo_round_trip_is_byte_identical(locomo26: Path, log: EventLog) -> None:
    import_file(log, locomo26)
    import_file(log, locomo26)
    lines = list(export_lines(log))
    assert lines == locomo26.read_text(encoding="utf-8").splitlines()


def test_export_then_import_elsewhere_is_lossless(tmp_path: Path, log: EventLog) -> None:
    turns = make_turns(6)
    turns[0]["text"] = "ünïcode ✓ and \"quotes\"\nnew line"
    turns[2]["at"] = "2024-01-01T00:00:02.250000-05:00"
    import_file(log, write_transcript(tmp_path / "t.jsonl", turns))
    exported = tmp_path / "out.jsonl"
    exported.write_text("\n".join(export_lines(log)) + "\n", encoding="utf-8")
    with EventLog(tmp_path / "other.db") as other:
        import_file(other, exported)
        assert list(export_lines(other)) == exported.read_text(encoding="utf-8").splitlines()
        mine = [(e.type, e.payload, e.occurred_at, e.ref) for e in log.read()]
        theirs = [(e.type, e.payload, e.occurred_at, e.ref) for e in other.read()]
        assert mine == theirs


def test_import_dash_reads_standard_input(home: Home, tmp_path: Path) -> None:
    data = "".join(json.dumps(t) + "\n" for t in make_turns(4)).encode()
    first = subprocess.run([*diarist_cmd(), "import", "-"], input=data, capture_output=True,
                           env=subprocess_env(home), timeout=120)
    assert first.returncode == 0, first.stderr
    assert b"Imported standard input: 4 turns in 1 sessions; 6 events appended" in first.stdout
    again = subprocess.run([*diarist_cmd(), "import", "-"], input=data, capture_output=True,
                           env=subprocess_env(home), timeout=120)
    assert b"0 events appended, 6 already in the log" in again.stdout
    with EventLog(home.events_db) as log:
        assert [e.ref for e in log.read(types=["UserTurn", "AssistantTurn"])] == \
            [t["ref"] for t in make_turns(4)]


def test_a_ref_reused_for_another_turn_fails_the_whole_import(tmp_path: Path,
                                                             log: EventLog) -> None:
    import_file(log, write_transcript(tmp_path / "a.jsonl", [GOOD]))
    count = log.count()
    changed = [GOOD | {"session": "s2", "ref": "new-1"},
               GOOD | {"session": "s2", "text": "hello again", "name": "Bo"}]
    with pytest.raises(ImportFailed) as info:
        import_file(log, write_transcript(tmp_path / "b.jsonl", changed))
    assert str(info.value) == (
        f"{tmp_path / 'b.jsonl'}:2: ref 'r1' is already in the log (seq 2) for a different "
        "turn: its session and text and name differ")
    assert "new ref" in info.value.hint
    assert log.count() == count  # all or nothing: no turn, and no empty session "s2"
    assert not log.read(stream="s2")
    # the same turn again (same ref, same content) is still only skipped
    assert import_file(log, write_transcript(tmp_path / "c.jsonl", [GOOD])).appended == 0


def test_a_ref_reused_with_another_time_is_named(tmp_path: Path, log: EventLog) -> None:
    import_file(log, write_transcript(tmp_path / "a.jsonl", [GOOD]))
    moved = GOOD | {"at": "2024-01-01T11:00:00+01:00"}  # the same instant: the same turn
    assert import_file(log, write_transcript(tmp_path / "b.jsonl", [moved])).appended == 0
    later = GOOD | {"at": "2024-01-01T10:00:01Z"}
    with pytest.raises(ImportFailed, match="its time differs"):
        import_file(log, write_transcript(tmp_path / "c.jsonl", [later]))


def test_every_bad_line_is_counted_the_first_twenty_shown(tmp_path: Path, log: EventLog) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + "[]\n" * 2500, encoding="utf-8")
    with pytest.raises(ImportFailed) as info:
        import_file(log, path)
    lines = str(info.value).splitlines()
    assert lines[0] == f"{path}:2: expected a JSON object"
    assert lines[19] == f"{path}:21: expected a JSON object"
    assert lines[20:] == ["… and 2,480 more"]
    assert log.count() == 0


def test_a_line_over_the_limit_is_never_read_whole(tmp_path: Path, log: EventLog) -> None:
    """The reader reads an over-long line in pieces and names it; the lines after it are
    still checked."""
    from events.jsonl import MAX_LINE_BYTES

    path = tmp_path / "t.jsonl"
    near = json.dumps(GOOD | {"ref": "near", "text": "x" * (MAX_LINE_BYTES - 200)})
    path.write_text(near + "\n" + "y" * (MAX_LINE_BYTES + 1) + "\n" + json.dumps(GOOD) + "\n"
                    + "z" * 3 * MAX_LINE_BYTES, encoding="utf-8")
    with pytest.raises(ImportFailed) as info:
        import_file(log, path)
    assert str(info.value).splitlines() == [
        f"{path}:2: line too long ({MAX_LINE_BYTES + 1:,} bytes; at most {MAX_LINE_BYTES:,})",
        f"{path}:4: line too long ({3 * MAX_LINE_BYTES:,} bytes; at most {MAX_LINE_BYTES:,})"]
