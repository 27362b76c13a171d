"""Control characters stored in the log never reach the terminal raw (issue 14 item 8): every
human-readable output shows them escaped, and `--json` output stays valid JSON that decodes
to the stored text."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from cli.output import visible
from events import EventLog, Home
from events.types import LongTermRewritten, Remembered, UserTurn

from .conftest import run

TITLE = "\x1b]0;pwned\x07"   # OSC: retitles the terminal
CLEAR = "\x1b[2J"            # CSI: clears the screen
C1 = "\x9b31m"               # a C1 CSI, which some terminals obey too
BIDI = "\u202e"              # right-to-left override: shows text reversed
HOSTILE = f"hello {TITLE}world {CLEAR}pwned {C1}red{BIDI} bees"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def clean(output: str) -> None:
    assert not any(ch in output for ch in RAW), repr(output)


def strings(value: object) -> list[str]:
    """Every string in a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


@pytest.fixture
def hostile(home: Home) -> dict[str, str]:
    """A turn, a note (journal and memory) and a MEMORY.md holding control characters."""
    with EventLog(home.events_db) as log:
        turn = log.append(UserTurn(session="s1", text=HOSTILE, name="Ann"), stream="s1",
                          ref="r:hostile")
        note = log.append(Remembered(text=f"note {HOSTILE}"), stream="memory")
        log.append(LongTermRewritten(content=f"# Memory\n\n## Notes\n- {HOSTILE}\n"),
                   stream="memory")
    run("sync")
    return {"turn": turn.id, "note": note.id, "seq": str(turn.seq)}


def test_visible_escapes_only_what_controls_a_terminal() -> None:
    plain = "tab\tand\nnewline, café, 日本, emoji 🐝"
    assert visible(plain) == plain
    assert visible(TITLE) == "\\u001b]0;pwned\\u0007"
    assert visible(CLEAR + "\r\x00\x7f" + C1 + BIDI) == (
        "\\u001b[2J\\u000d\\u0000\\u007f\\u009b31m\\u202e")


@pytest.mark.parametrize("args", [
    ["recall", "pwned bees"], ["recall", "pwned bees", "--budget", "0"], ["events"],
    ["events", "tail"], ["journal", "today"], ["memory", "list"], ["memory", "history"],
    ["memory", "history", "1"], ["consolidate", "--dry-run", "--heuristic"]])
def test_human_output_shows_control_characters_escaped(hostile: dict[str, str],
                                                       args: list[str]) -> None:
    out = run(*args).output
    clean(out)
    if args[0] != "memory" or args[1:] != ["history"]:
        assert "\\u001b]0;pwned\\u0007" in out or "\\u001b[2J" in out, out


@pytest.mark.parametrize("show", ["events show", "memory show"])
def test_one_item_shown_in_full_is_escaped(hostile: dict[str, str], show: str) -> None:
    key = hostile["seq"] if show == "events show" else hostile["note"]
    out = run(*show.split(), key).output
    clean(out)
    assert "\\u001b]0;pwned\\u0007" in out
    assert any(HOSTILE in s for s in strings(json.loads(out)))  # valid JSON, the stored text


@pytest.mark.parametrize("args", [["recall", "pwned bees", "--json"], ["events", "--json"],
                                  ["memory", "list", "--json"]])
def test_json_output_is_valid_and_decodes_to_the_stored_text(hostile: dict[str, str],
                                                             args: list[str]) -> None:
    out = run(*args).output
    clean(out)
    decoded = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert any(HOSTILE in s for s in strings(decoded))


def test_errors_naming_hostile_input_are_escaped(home: Home, tmp_path: Path) -> None:
    """An error message quoting a file name that holds an escape sequence."""
    bad = tmp_path / f"chat{CLEAR}{TITLE}.jsonl"
    bad.write_text("not json\n")
    result = CliRunner().invoke(cli, ["import", str(bad)])
    assert result.exit_code == 1 and "not valid JSON" in result.output, result.output
    clean(result.output)
    assert "chat\\u001b[2J\\u001b]0;pwned\\u0007.jsonl:1:" in result.output


def test_the_chat_never_prints_control_characters(hostile: dict[str, str]) -> None:
    """The chat's memory commands, the echoed reply (a model can repeat what it was shown)
    and the memory tools' lines."""
    typed = f"say {CLEAR} {TITLE}"
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--no-tools"],
                                input=f"/recall pwned bees\n/journal\n/memory list\n{typed}\n"
                                      "/exit\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    clean(result.output.replace(f"you> {typed}\n", ""))  # the runner echoes what was typed
    assert "assistant> echo:" in result.output
    reply = result.output.split("assistant> echo:", 1)[1]
    assert "say \\u001b[2J \\u001b]0;pwned\\u0007" in reply  # the echoed reply, escaped
    assert "\\u001b]0;pwned\\u0007world" in result.output  # /recall showed the turn


def test_every_print_in_cli_goes_through_the_one_helper() -> None:
    """`cli/output.py` is the only place that calls click.echo (and export's raw data line,
    marked as such); a new command that printed stored text raw would fail here."""
    import re

    from .conftest import REPO

    raw = []
    for path in sorted((REPO / "cli").glob("*.py")):
        if path.name == "output.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"click\.(echo|secho)\(|\bprint\(|sys\.stdout\.write", line) \
                    and "not made visible (cli/output.py)" not in line:
                raw.append(f"{path.name}:{n}: {line.strip()}")
    assert raw == []
