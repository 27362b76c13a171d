"""`diarist mcp` through the MCP SDK's own client: a real `diarist mcp` process on stdio, in
both protocol eras (the 2025 `initialize` handshake and the 2026-07-28 per-request
envelope); the log then holds the connection as a session of its own, each call a
`ToolCalled`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client

from events import EventLog, Home, RecordedEvent
from projections import open_store
from projections.journal import render_day
from projections.mining import mining_totals
from projections.stats import budget_summary
from workers.chat.tools import TOOL_SPECS

from .conftest import diarist_cmd, run_cli, subprocess_env

CLIENT = "pytest-client"
LEGACY, MODERN = "legacy", "2026-07-28"   # the handshake era; the per-request envelope
T = TypeVar("T")


@asynccontextmanager
async def connected(home: Home, tmp_path: Path, *, mode: str = LEGACY) -> AsyncIterator[Client]:
    """A client connected to a new `diarist mcp` process on ``home`` (its stderr kept in
    tmp_path/mcp-stderr.txt), started in a folder that is not the home's."""
    command = diarist_cmd()
    params = StdioServerParameters(command=command[0], args=[*command[1:], "mcp"],
                                   env=subprocess_env(home), cwd=str(tmp_path))
    with (tmp_path / "mcp-stderr.txt").open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode,
                          client_info=Implementation(name=CLIENT, version="1.0"),
                          read_timeout_seconds=60) as client:
            yield client


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


def text_of(result: Any) -> str:
    (content,) = result.content
    assert content.type == "text"
    return str(content.text)


def mcp_sessions(home: Home) -> dict[str, list[RecordedEvent]]:
    """Each mcp/ stream's events, in order."""
    with EventLog(home.events_db) as log:
        events = log.read()
    streams: dict[str, list[RecordedEvent]] = {}
    for event in events:
        if event.stream.startswith("mcp/"):
            streams.setdefault(event.stream, []).append(event)
    return streams


def remembered(home: Home) -> list[RecordedEvent]:
    with EventLog(home.events_db) as log:
        return log.read(types=["Remembered"])


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
def test_the_tools_are_the_chats(home: Home, tmp_path: Path, mode: str) -> None:
    """Names, descriptions and JSON schemas come from the chat's TOOL_SPECS, in its order;
    the two read-only tools say so."""
    async def go() -> Any:
        async with connected(home, tmp_path, mode=mode) as client:
            return (await client.list_tools()).tools

    tools = run(go)
    specs = [spec["function"] for spec in TOOL_SPECS]
    assert [t.name for t in tools] == [s["name"] for s in specs]
    for tool, spec in zip(tools, specs, strict=True):
        assert tool.description == spec["description"]
        assert tool.input_schema == spec["parameters"]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == (tool.name != "remember")
        assert tool.annotations.destructive_hint is False


def test_remember_then_search_and_get_through_one_connection_and_another(
        home: Home, tmp_path: Path) -> None:
    async def first() -> list[Any]:
        async with connected(home, tmp_path) as client:
            saved = await client.call_tool("remember", {"content": "Ann keeps  bees by the river"})
            found = await client.call_tool("memory_search", {"query": "bees", "limit": 3})
            day = await client.call_tool("memory_get", {"date": "today"})
            return [saved, found, day]

    saved, found, day = run(first)
    assert not saved.is_error and text_of(saved) == "remembered"
    (note,) = remembered(home)
    (session, events), = mcp_sessions(home).items()
    assert note.stream == "memory"
    assert note.payload == {"text": "Ann keeps bees by the river", "type": "user_preference",
                            "source": "agent", "session": session}
    assert not found.is_error and "Ann keeps bees by the river" in text_of(found)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        journal = render_day(store.db, note.occurred_at[:10])
    assert not day.is_error and text_of(day) == journal and "[agent] Ann keeps bees" in journal

    async def second() -> list[Any]:  # a new connection, in the other protocol era
        async with connected(home, tmp_path, mode=MODERN) as client:
            return [await client.call_tool("memory_search", {"query": "river bees"}),
                    await client.call_tool("memory_get", {"date": note.occurred_at[:10]})]

    found_again, day_again = run(second)
    assert "Ann keeps bees by the river" in text_of(found_again)
    assert text_of(day_again) == journal
    assert len(mcp_sessions(home)) == 2 and len(remembered(home)) == 1


BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("remember", {}),
    ("remember", {"content": "   "}),
    ("remember", {"content": 42}),
    ("remember", {"content": "too long " * 20_000}),  # a line of many reads on stdin
    ("memory_search", {"query": ""}),
    ("memory_search", {"query": "bees", "limit": "many"}),
    ("memory_get", {"date": "next tuesday"}),
    ("format_disk", {"really": True}),
]


def test_bad_arguments_give_error_results_and_remember_nothing(home: Home,
                                                                tmp_path: Path) -> None:
    async def go() -> list[Any]:
        async with connected(home, tmp_path) as client:
            results = [await client.call_tool(name, args) for name, args in BAD_CALLS]
            results.append(await client.call_tool("remember", {"content": "still works"}))
            return results

    *bad, good = run(go)
    for (name, _args), result in zip(BAD_CALLS, bad, strict=True):
        assert result.is_error, name
        assert text_of(result).startswith("error:"), text_of(result)
    assert not good.is_error
    assert [e.payload["text"] for e in remembered(home)] == ["still works"]
    (events,) = mcp_sessions(home).values()
    calls = [e for e in events if e.type == "ToolCalled"]
    assert [(e.payload["name"], e.payload["arguments"]) for e in calls] == \
        [*BAD_CALLS, ("remember", {"content": "still works"})]
    assert [e.payload["result"] for e in calls[:-1]] == [text_of(r) for r in bad]


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
def test_a_connection_is_a_session_of_its_own(home: Home, tmp_path: Path, mode: str) -> None:
    """SessionStarted (backend mcp, the client's name) → a ToolCalled per call → SessionEnded;
    a session without turns leaves mining, the stats advice and `diarist status` alone."""
    async def go() -> list[str]:
        async with connected(home, tmp_path, mode=mode) as client:
            await client.list_tools()
            return [text_of(await client.call_tool("remember", {"content": "tabs, not spaces"})),
                    text_of(await client.call_tool("memory_search", {"query": "tabs"})),
                    text_of(await client.call_tool("memory_get", {"date": "yesterday"}))]

    results = run(go)
    (session, events), = mcp_sessions(home).items()
    assert session.startswith("mcp/")
    assert [e.type for e in events] == ["SessionStarted", "ToolCalled", "ToolCalled",
                                        "ToolCalled", "SessionEnded"]
    start, *calls, end = events
    assert start.payload["session"] == session and start.payload["backend"] == "mcp"
    assert start.payload["model"] == CLIENT
    assert [(c.payload["session"], c.payload["name"], c.payload["result"]) for c in calls] == \
        [(session, name, result)
         for name, result in zip(["remember", "memory_search", "memory_get"], results,
                                 strict=True)]
    assert end.payload == {"session": session, "turns": 0}

    status = run_cli(home, "status")
    assert status.returncode == 0, status.stderr
    assert "mining: 0 sessions, 0 waiting" in status.stdout
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        assert store.catch_up_all() is not None  # nothing left that cannot be projected
        assert mining_totals(store.db)["sessions"] == 0
        assert budget_summary(store.db, 0.25).sessions == 0


def test_concurrent_calls_are_all_answered_and_recorded(home: Home, tmp_path: Path) -> None:
    """A client may send calls without waiting: each runs on a worker thread, one at a time,
    and each gets its own answer."""
    notes = [f"note number {i} about zeppelins" for i in range(6)]

    async def go() -> dict[str, str]:
        answers: dict[str, str] = {}
        async with connected(home, tmp_path) as client:
            async def call(key: str, name: str, args: dict[str, Any]) -> None:
                answers[key] = text_of(await client.call_tool(name, args))

            async with anyio.create_task_group() as group:
                for i, note in enumerate(notes):
                    group.start_soon(call, f"remember {i}", "remember", {"content": note})
                    group.start_soon(call, f"get {i}", "memory_get", {"date": "1999-01-01"})
            answers["search"] = text_of(await client.call_tool(
                "memory_search", {"query": "zeppelins", "limit": 10}))
        return answers

    answers = run(go)
    assert all(answers[f"remember {i}"] == "remembered" for i in range(len(notes)))
    assert all(answers[f"get {i}"] == "No journal entry for 1999-01-01."
               for i in range(len(notes)))
    assert all(note in answers["search"] for note in notes)
    assert sorted(e.payload["text"] for e in remembered(home)) == sorted(notes)
    (events,) = mcp_sessions(home).values()
    assert sum(e.type == "ToolCalled" for e in events) == 2 * len(notes) + 1
    assert events[0].type == "SessionStarted" and events[-1].type == "SessionEnded"


# --- the process: stdout, signals, the home ---------------------------------------------------

def _request(id_: int, method: str, params: dict[str, Any]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
            + "\n").encode()


INITIALIZE = _request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "raw", "version": "0"}})
INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'


def _start(home: Home, tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*diarist_cmd(), *args, "mcp"], env=subprocess_env(home),
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_stdout_carries_only_the_protocol(home: Home, tmp_path: Path) -> None:
    """With debug logging on, every stdout line is a JSON-RPC message; logs go to stderr.
    Closing stdin (once the replies are in) ends the session."""
    proc = _start(home, tmp_path, "-vv")
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE + INITIALIZED + _request(2, "tools/list", {})
                     + _request(3, "tools/call", {"name": "remember",
                                                  "arguments": {"content": "x1"}})
                     + _request(4, "tools/call", {"name": "memory_search",
                                                  "arguments": {"query": "x1"}}))
    proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(4)]
    out, err = proc.communicate(timeout=60)  # closes stdin: the end of the connection
    assert proc.returncode == 0, err.decode()
    assert out == b""
    assert sorted(r["id"] for r in replies) == [1, 2, 3, 4]
    assert all(r["jsonrpc"] == "2.0" and "result" in r for r in replies)
    by_id = {r["id"]: r["result"] for r in replies}
    assert by_id[1]["serverInfo"]["name"] == "diarist"
    assert by_id[3]["content"][0]["text"] == "remembered"
    assert "x1" in by_id[4]["content"][0]["text"]
    assert b"mcp.session_started" in err and b"mcp.session_ended" in err
    (events,) = mcp_sessions(home).values()
    assert events[0].payload["model"] == "raw" and events[-1].type == "SessionEnded"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_session_even_while_stdin_stays_open(home: Home, tmp_path: Path,
                                                              signum: int) -> None:
    proc = _start(home, tmp_path)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INITIALIZE + INITIALIZED)
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.send_signal(signum)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    (events,) = mcp_sessions(home).values()
    assert [e.type for e in events] == ["SessionStarted", "SessionEnded"]


def test_the_home_must_be_named(tmp_path: Path) -> None:
    """A client starts servers in a folder of its choosing (often /): without $DIARIST_HOME
    or --home, `diarist mcp` refuses rather than make (or tighten) ./var there."""
    env = {k: v for k, v in subprocess_env(Home(tmp_path)).items() if k != "DIARIST_HOME"}
    done = subprocess.run([*diarist_cmd(), "mcp"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and "DIARIST_HOME" in done.stderr and done.stdout == ""
    assert not (tmp_path / "var").exists()


def test_a_new_home_is_created_private(tmp_path: Path) -> None:
    """--home alone names it; a home that does not exist yet is made, 0700."""
    root = tmp_path / "fresh"
    env = {k: v for k, v in subprocess_env(Home(root)).items() if k != "DIARIST_HOME"}
    done = subprocess.run([*diarist_cmd(), "--home", str(root), "mcp"], env=env, cwd=tmp_path,
                          input=INITIALIZE + INITIALIZED, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout.decode().splitlines()[0])["id"] == 1
    assert b"created a new diarist home" in done.stderr
    assert (root.stat().st_mode & 0o077) == 0
    (events,) = mcp_sessions(Home(root)).values()
    assert [e.type for e in events] == ["SessionStarted", "SessionEnded"]


def test_recall_and_help_never_import_the_sdk() -> None:
    """The SDK takes a second to import: only `diarist mcp` pays for it."""
    probe = ("import sys; from cli.main import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(n for n in ('mcp', 'workers.mcp') if n in sys.modules))")
    env = {**os.environ, "DIARIST_HOME": str(Path(tempfile.mkdtemp()) / "var")}
    for args in (["remember", "a note"], ["recall", "note", "--json"], ["--help"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                              text=True, env=env)
        assert done.stdout.strip().endswith("[]"), (args, done.stdout, done.stderr)
