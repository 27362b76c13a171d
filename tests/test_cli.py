"""The CLI through click's CliRunner: messages, exit codes, and that bad input changes nothing."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from events import EventLog, Home
from projections import open_store

from .conftest import make_turns, run, write_transcript


def test_import_sync_verify_export_on_locomo(locomo26: Path, home: Home) -> None:
    first = run("import", str(locomo26))
    assert (f"Imported {locomo26}: 419 turns in 19 sessions; 457 events appended, 0 already"
            in first.output)
    second = run("import", str(locomo26))
    assert "0 events appended, 457 already in the log." in second.output
    assert "turns: at 457 (+457)" in run("sync").output
    verified = run("replay", "--verify")
    assert "turns: ok at 457" in verified.output
    assert run("export").stdout.splitlines() == locomo26.read_text(encoding="utf-8").splitlines()


def test_export_to_a_file(home: Home, tmp_path: Path) -> None:
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(4))))
    out = tmp_path / "out.jsonl"
    result = run("export", "-o", str(out))
    assert "Exported 4 turns" in result.output
    assert out.read_text(encoding="utf-8") == (tmp_path / "t.jsonl").read_text(encoding="utf-8")


def test_bad_import_is_a_clear_error_and_changes_nothing(home: Home, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(make_turns(1)[0]) + "\n" + '{"session": "s"}\n', encoding="utf-8")
    result = run("import", str(path), ok=False)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {path}:2: missing field 'at', 'role', 'text', 'ref'\n"
        "Hint: Fix the lines named above and run the import again; nothing was imported.\n"
    )
    with EventLog(home.events_db) as log:
        assert log.count() == 0


def test_replay_verify_fails_when_a_projection_differs(home: Home, tmp_path: Path) -> None:
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(8))))
    run("sync")
    with open_store(home) as store:
        store.db.execute("UPDATE turns SET text = 'tampered' WHERE seq = 3")
    result = run("replay", "--verify", ok=False)
    assert result.exit_code == 1
    assert "turns: DIFFERS at 10" in result.output
    assert "run `diarist replay` to rebuild them" in result.output
    assert "turns: rebuilt to 10" in run("replay").output
    assert "turns: ok at 10" in run("replay", "--verify").output


def test_replay_verify_compares_at_the_live_position(home: Home, tmp_path: Path) -> None:
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(8))))
    run("sync")
    run("import", str(write_transcript(tmp_path / "u.jsonl", make_turns(3, "s2"))))
    assert "turns: ok at 10" in run("replay", "--verify").output  # lagging is not differing


def test_events_list_show_and_filters(home: Home, tmp_path: Path) -> None:
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(3))))
    listing = run("events").output.splitlines()
    assert len(listing) == 5 and "SessionStarted" in listing[0] and "SessionEnded" in listing[-1]
    only = run("events", "--type", "AssistantTurn", "--json").output.splitlines()
    assert [json.loads(line)["meta"]["ref"] for line in only] == ["t:s1:1"]
    assert len(run("events", "-n", "2").output.splitlines()) == 2
    shown = json.loads(run("events", "show", "t:s1:2").output)
    assert shown["type"] == "UserTurn" and shown["seq"] == 4
    assert json.loads(run("events", "show", "4").output) == shown
    missing = run("events", "show", "nope", ok=False)
    assert "Error: no event 'nope'\nHint: List events with `diarist events`." in missing.output
    tail = run("events", "tail", "-n", "1").output.splitlines()
    assert len(tail) == 1 and "SessionEnded" in tail[0]


def test_status_shows_log_and_lag(home: Home, tmp_path: Path) -> None:
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(3))))
    out = run("status").output
    assert "log: 5 events, head 5" in out
    assert "projection turns: position 0, lag 5" in out
    assert "embeddings: no model chosen yet" in out
    assert re.search(r"queue: SqliteStorage at \S+queue\.db, [1-9]\d* pending", out)
    run("sync")
    assert "projection turns: position 5, lag 0" in run("status").output


def test_home_option_on_group_and_command(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", make_turns(2))
    run("--home", str(tmp_path / "a"), "import", str(transcript))
    run("import", "--home", str(tmp_path / "b"), str(transcript))
    for name in ("a", "b"):
        with EventLog(tmp_path / name / "events.db") as log:
            assert log.count() == 4


def test_bad_config_is_a_clear_error(home: Home) -> None:
    home.config_file.write_text("queue:\n  redis_urll: redis://x\n", encoding="utf-8")
    result = run("status", ok=False)
    assert "unknown key `queue.redis_urll`; allowed keys: redis_url" in result.output


def test_log_json_writes_json_lines_to_stderr(home: Home, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", make_turns(2))
    result = run("--log-json", "-v", "import", str(transcript))
    logged = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert any(entry["event"] == "import.done" and entry["appended"] == 4 for entry in logged)


def test_unexpected_errors_have_no_traceback(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import cli.main as main_module

    def explode(*_a, **_k):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(main_module.cli, "main", explode)
    monkeypatch.delenv("DIARIST_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exited:
        main_module.main()
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "Error: unexpected RuntimeError: disk on fire" in err and "Traceback" not in err


def test_structlog_is_imported_only_when_a_message_is_shown() -> None:
    """A one-shot command at the default level never pays for importing structlog; with -v
    the same command logs (and so imports it)."""
    probe = ("import sys; from cli.main import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('structlog' in sys.modules)")
    env = {**os.environ, "DIARIST_HOME": str(Path(tempfile.mkdtemp()) / "var")}
    quiet = subprocess.run([sys.executable, "-c", probe, "status"], capture_output=True,
                           text=True, env=env)
    assert quiet.stdout.strip().endswith("False"), quiet.stdout + quiet.stderr
    transcript = Path(tempfile.mkdtemp()) / "t.jsonl"
    write_transcript(transcript, make_turns(2))
    loud = subprocess.run([sys.executable, "-c", probe, "-v", "import", str(transcript)],
                          capture_output=True, text=True, env=env)
    assert loud.stdout.strip().endswith("True") and "import.done" in loud.stderr


def test_a_script_using_the_library_logs_warnings_to_stderr_only() -> None:
    """Library use without the CLI (a benchmark, a script): its stdout stays its own output;
    warnings and above reach stderr, information does not."""
    probe = ("from events.logger import get_logger\n"
             "log = get_logger('diarist.script')\n"
             "log.info('script.detail', n=1)\n"
             "log.warning('script.trouble', n=2)\n"
             "print('the table')")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.stdout == "the table\n", run.stdout
    assert "script.trouble" in run.stderr and "script.detail" not in run.stderr


def test_recall_imports_only_what_it_runs() -> None:
    """A one-shot `diarist recall` imports its own command's module only: not the chat, the
    model server, eval, the night's commands or the worker, nor PyYAML when the home has
    no config file, nor structlog and rich (nothing is logged at the default level)."""
    probe = ("import sys; from cli.main import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "names = ('cli.chat', 'cli.eval_command', 'cli.model_command',"
             " 'cli.night_commands', 'cli.worker_command', 'workers.chat', 'workers.tasks',"
             " 'yaml', 'structlog', 'rich')\n"
             "print(sorted(n for n in names if n in sys.modules))")
    env = {**os.environ, "DIARIST_HOME": str(Path(tempfile.mkdtemp()) / "var")}
    transcript = Path(tempfile.mkdtemp()) / "t.jsonl"
    write_transcript(transcript, make_turns(2))
    subprocess.run([sys.executable, "-c", probe, "import", str(transcript)], env=env,
                   check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-c", probe, "recall", "turn", "--json"],
                          capture_output=True, text=True, env=env)
    assert done.stdout.strip().endswith("[]"), done.stdout + done.stderr
    assert json.loads(done.stdout.splitlines()[0])["query"] == "turn"


def test_a_killed_verify_leaves_no_scratch_copy_behind(home: Home, tmp_path: Path) -> None:
    """`replay --verify` rebuilds into var/scratch/verify-*; kill -9 it there and the next
    verify removes the copy (and its own)."""
    import signal
    import time

    from events.transcript import import_file

    from .conftest import diarist_cmd, subprocess_env

    turns = [t for s in range(6) for t in make_turns(500, session=f"s{s}")]
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / "t.jsonl", turns))
    run("sync")
    scratch = home.root / "scratch"
    proc = subprocess.Popen([*diarist_cmd(), "replay", "--verify"], env=subprocess_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (scratch.is_dir() and any(scratch.glob("verify-*/projections.db"))):
        assert proc.poll() is None and time.monotonic() < deadline, "verify ended first"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = list(scratch.glob("verify-*"))
    assert len(left) == 1 and (left[0] / "projections.db").exists()

    assert "turns: ok at 3012" in run("replay", "--verify").output
    assert not scratch.exists()


def test_verify_leaves_a_scratch_copy_in_use_alone(home: Home, tmp_path: Path) -> None:
    import fcntl

    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(4))))
    busy = home.root / "scratch" / "verify-busy"
    busy.mkdir(parents=True)
    with open(busy / "in-use.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another verify, still running
        assert "turns: ok" in run("replay", "--verify").output
        assert busy.is_dir()
    assert "turns: ok" in run("replay", "--verify").output
    assert not (home.root / "scratch").exists()


@pytest.mark.parametrize("module", ["cli", "cli.main"])
def test_python_dash_m_runs_the_command(module: str, home: Home) -> None:
    """`python -m cli` (and `python -m cli.main`) is `diarist`, for a checkout without the
    console script on PATH."""
    env = {**os.environ, "DIARIST_HOME": str(home.root)}
    done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.startswith("diarist, version"), done
