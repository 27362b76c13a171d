"""Transcript import (validation, idempotency, all-or-nothing) and export round trips."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from events import EventLog, ImportFailed
from events.transcript import export_lines, import_file

from .conftest import make_turns, write_transcript

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
