"""The chat hands its after-reply work to a running `diarist worker`, and does it itself
(the shadow journal on a background thread) when none runs. Worker presence is a lock that
a killed worker cannot leave behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from events import EventLog, Home
from events.config import Config
from projections import open_store
from workers.app import configure, huey
from workers.chat.handoff import AfterReply
from workers.chat.session import ChatSession
from workers.chat.shadow_journal import EXTRACT_PROMPT
from workers.dispatch import QUEUE
from workers.llm import ScriptedBackend
from workers.presence import hold_worker_lock, worker_present
from workers.tasks import SHADOW_JOURNAL_TASK

from .conftest import diarist_cmd, stop_process, subprocess_env

EXTRACTION_RULE = {"match": "New facts \\(JSON list\\)", "reply": '["User keeps bees"]'}


def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(rule) + "\n" for rule in
                            [EXTRACTION_RULE, {"reply": "How lovely."}]))
    return path


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.05)


def head(home: Home) -> int:
    with EventLog(home.events_db) as log:
        return log.head()


def positions(home: Home) -> dict[str, int]:
    with open_store(home) as store:
        return {s.name: s.position for s in store.status()}


def facts(home: Home) -> list:  # type: ignore[type-arg]
    with EventLog(home.events_db) as log:
        return log.read(types=["FactsExtracted"])


class Worker:
    """A real `diarist -v --log-json worker` process on the test's home."""

    def __init__(self, home: Home, tmp_path: Path, name: str = "worker") -> None:
        self.log_path = tmp_path / f"{name}.err"
        self._err = self.log_path.open("wb")
        self.proc = subprocess.Popen([*diarist_cmd(), "-v", "--log-json", "worker"],
                                     env=subprocess_env(home), stdout=subprocess.DEVNULL,
                                     stderr=self._err)

    def lines(self) -> list[dict]:
        out = []
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def stop(self) -> None:
        stop_process(self.proc)
        self._err.close()


StartWorker = Callable[..., Worker]


@pytest.fixture
def start_worker(home: Home, tmp_path: Path) -> Iterator[StartWorker]:
    started: list[Worker] = []

    def start(name: str = "worker") -> Worker:
        worker = Worker(home, tmp_path, name)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


# --- presence ------------------------------------------------------------------------------


def test_presence_is_the_lock_and_several_workers_share_it(home: Home) -> None:
    assert not worker_present(home)  # no lock file yet
    with hold_worker_lock(home):
        assert worker_present(home)
        with hold_worker_lock(home):  # a second worker on the same home
            assert worker_present(home)
        assert worker_present(home)
        assert home.worker_lock.read_text().strip() == str(os.getpid())
        status = CliRunner().invoke(cli, ["status"], catch_exceptions=False).output
        assert f"worker: running (last started: pid {os.getpid()})" in status
    assert not worker_present(home)  # the file stays; nobody holds it
    status = CliRunner().invoke(cli, ["status"], catch_exceptions=False).output
    assert "worker: none running here" in status


def test_a_killed_worker_is_not_present(home: Home, start_worker: Callable[...,
                                        subprocess.Popen]) -> None:
    first = start_worker("first")
    wait_for(lambda: worker_present(home), what="the first worker's lock")
    wait_for(lambda: home.worker_lock.read_text().strip() == str(first.proc.pid))
    second = start_worker("second")
    wait_for(lambda: home.worker_lock.read_text().strip() == str(second.proc.pid),
             what="the second worker's pid")
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    assert worker_present(home)  # the second one still runs
    second.proc.send_signal(signal.SIGKILL)
    second.proc.wait(10)
    assert not worker_present(home)  # kill -9 leaves no lock behind
    assert home.worker_lock.exists()


# --- with a worker ---------------------------------------------------------------------------


def test_with_a_worker_present_the_chat_only_queues(home: Home, tmp_path: Path,
                                                    start_worker: StartWorker) -> None:
    """The lock is held (a worker that has not consumed anything yet): the chat does none of
    the work itself — no extraction, no catch-up past what it found — and queues it all;
    then a real worker picks the queue up and does it."""
    rules = script(tmp_path)
    with hold_worker_lock(home):
        result = CliRunner().invoke(
            cli, ["chat", "--backend", "scripted", "--script", str(rules), "--shadow-journal"],
            input="I keep bees\n/exit\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "assistant> How lovely." in result.output and "journal:" not in result.output
    assert facts(home) == []  # not extracted in the chat's process
    last = head(home)
    assert all(p < last for p in positions(home).values())  # not caught up in-process either
    configure(home)
    pending = {task.name: task for task in huey.pending()}
    assert {"project.journal", "project.turns", SHADOW_JOURNAL_TASK} <= set(pending)
    task = pending[SHADOW_JOURNAL_TASK]
    with EventLog(home.events_db) as log:
        user, assistant = log.read(types=["UserTurn", "AssistantTurn"])
    assert task.args[:5] == (user.payload["session"], user.id, assistant.id, "scripted", "scripted")
    assert task.kwargs == {"base_url": None, "script": str(rules.resolve())}
    # no API key travels with the task: no field for one (a ULID may spell "key" by chance)
    assert not any("key" in str(name).lower() for name in task.kwargs)
    assert len(task.args) == 5

    worker = start_worker()
    wait_for(lambda: facts(home), what="FactsExtracted from the worker")
    (event,) = facts(home)
    assert event.payload["facts"] == ["User keeps bees"]
    assert event.payload["from_events"] == [user.id, assistant.id]
    wait_for(lambda: all(p == head(home) for p in positions(home).values()),
             what="the worker's catch-up")
    day = home.memory_dir / f"{event.occurred_at[:10]}.md"
    assert "User keeps bees" in day.read_text()
    wait_for(lambda: any(line.get("event") == "shadow_journal.appended" for line in worker.lines()))
    (appended,) = [line for line in worker.lines()
                   if line.get("event") == "shadow_journal.appended"]
    assert appended["event_id"] == event.id and appended["pid"] == worker.proc.pid


def test_a_running_worker_does_the_chats_work(home: Home, tmp_path: Path,
                                              start_worker: StartWorker) -> None:
    """A real worker and a real chat process: the worker, not the chat, appends the facts.
    (Were the chat to extract in-process, the worker's task would find the idempotency key
    taken and log `nothing_new` instead of `appended`.)"""
    rules = script(tmp_path)
    honey = {"match": "user: and honey", "reply": '["User sells honey"]'}
    rules.write_text(json.dumps(honey) + "\n" + rules.read_text())
    worker = start_worker()
    wait_for(lambda: worker_present(home), what="the worker's lock")
    chat = subprocess.run(
        [*diarist_cmd(), "chat", "--backend", "scripted", "--script", str(rules),
         "--shadow-journal"], input="I keep bees\nand honey\n/exit\n", env=subprocess_env(home),
        capture_output=True, text=True, timeout=60)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.count("assistant> How lovely.") == 2
    assert "journal:" not in chat.stdout + chat.stderr  # the chat's own thread never ran

    wait_for(lambda: len(facts(home)) == 2, what="two FactsExtracted from the worker")
    appended = lambda: [line for line in worker.lines()  # noqa: E731
                        if line.get("event") == "shadow_journal.appended"]
    wait_for(lambda: len(appended()) == 2, what="the worker's log lines")
    assert {line["event_id"] for line in appended()} == {e.id for e in facts(home)}
    assert {line["pid"] for line in appended()} == {worker.proc.pid}
    assert sorted(f for e in facts(home) for f in e.payload["facts"]) == \
        ["User keeps bees", "User sells honey"]
    wait_for(lambda: all(p == head(home) for p in positions(home).values()),
             what="the worker's catch-up")


# --- without a worker ------------------------------------------------------------------------


class GatedExtraction(ScriptedBackend):
    """Chat replies at once; an extraction waits until the test opens the gate."""

    def __init__(self, rules: Path) -> None:
        super().__init__(rules)
        self.extracting = threading.Event()
        self.gate = threading.Event()
        self.extracted_on: list[str] = []

    def reply_for(self, messages: list[dict]) -> str:
        if messages[0]["content"] == EXTRACT_PROMPT:
            self.extracted_on.append(threading.current_thread().name)
            self.extracting.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return super().reply_for(messages)


def test_without_a_worker_the_journal_runs_beside_the_chat(home: Home, tmp_path: Path) -> None:
    backend = GatedExtraction(script(tmp_path))
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session = ChatSession(home, log, store, backend, Config())
        session.start()
        notes: list[str] = []
        after = AfterReply(home, session, store, shadow=True, echo=notes.append, queue=QUEUE)
        after.reply_done(session.send("I keep bees"))
        assert backend.extracting.wait(10)  # the extraction runs, and is stuck on the gate…
        reply = session.send("and honey")   # …while the chat goes on
        assert reply.text == "How lovely."
        after.reply_done(reply)
        assert facts(home) == [] and notes == []
        after.report()
        assert notes == []  # nothing to say yet, and nothing printed by the thread
        session.end()
        threading.Timer(0.3, backend.gate.set).start()
        after.finish()      # waits for both extractions, then catches up
        assert notes[0].startswith("(finishing the shadow journal")
        assert notes[1:] == ["  (journal: +1 fact(s))"]  # the second exchange: nothing new
        assert backend.extracted_on == ["diarist-shadow-journal"] * 2
        (event,) = facts(home)
        user, assistant = log.read(types=["UserTurn", "AssistantTurn"])[:2]
        assert event.payload["from_events"] == [user.id, assistant.id]
        assert all(s.position == log.head() for s in store.status())
