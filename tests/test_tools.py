"""Memory tools for the chat model: text-fallback parsing, running each tool, and the tool
loop of a chat session (text fallback and structured tool calls)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from events import EventLog, Home, clock
from events.config import Config
from events.types import Remembered
from projections import open_store
from projections.journal import render_day
from workers.chat.session import ANSWER_NOW, ChatSession
from workers.chat.tools import (
    REPEATED_CALL,
    TOOL_NAMES,
    TOOL_PROMPT,
    TOOL_PROMPT_NATIVE,
    TOOL_SPECS,
    TOOLS_DONE,
    parse_text_tool_calls,
    run_tool,
)
from workers.llm import ChatReply, ChatStats, ScriptedBackend

from .conftest import Stores, rules

# --- parsing --------------------------------------------------------------------------------

def test_specs_name_the_three_tools() -> None:
    assert TOOL_NAMES == {"remember", "memory_search", "memory_get"}
    assert all(s["type"] == "function" and s["function"]["parameters"]["type"] == "object"
               for s in TOOL_SPECS)


def test_fenced_json_tool_call_is_parsed() -> None:
    text = ('Sure, let me save that.\n```json\n'
            '{"tool": "remember", "arguments": {"content": "Ann likes green tea"}}\n```\n')
    assert parse_text_tool_calls(text) == [
        {"name": "remember", "arguments": {"content": "Ann likes green tea"}}]


def test_bare_json_line_and_name_shape_are_parsed() -> None:
    text = 'Looking.\n{"name": "memory_search", "arguments": {"query": "bees", "limit": 2}}\nok'
    assert parse_text_tool_calls(text) == [
        {"name": "memory_search", "arguments": {"query": "bees", "limit": 2}}]
    # arguments given as a JSON string are accepted too
    text = '{"name": "memory_get", "arguments": "{\\"date\\": \\"today\\"}"}'
    assert parse_text_tool_calls(text) == [{"name": "memory_get", "arguments": {"date": "today"}}]


@pytest.mark.parametrize("text", [
    # the 1.5B model's form, offered the tools: one pair of doubled braces around the call
    '{{"name": "memory_search", "arguments": {"query": "Maria\'s puppy", "limit": 1}}}',
    '```json\n{{"name": "memory_search", "arguments": {"query": "Maria\'s puppy", '
    '"limit": 1}}}\n```',
])
def test_a_call_in_doubled_braces_is_read_as_one(text: str) -> None:
    assert parse_text_tool_calls(text) == [
        {"name": "memory_search", "arguments": {"query": "Maria's puppy", "limit": 1}}]


@pytest.mark.parametrize("text", [
    "no tools here",
    '{{"tool": "remember", "arguments": {"content": "x"}}',                # doubled, broken
    '```json\n{"tool": "remember", "arguments": {"content": "x"}\n```',   # malformed
    '```json\n{"tool": "rm_rf", "arguments": {}}\n```',                    # unknown tool
    '{"tool": "delete_everything", "arguments": {}}',                      # unknown, bare
    '```json\n{"tool": "remember", "arguments": ["x"]}\n```',              # wrong arguments
    '```json\n{"action": "remember", "content": "x"}\n```',                # wrong shape
    '```json\n"remember"\n```',
    'I would call {"tool": "remember"} inline, not on its own line',
])
def test_wrong_shapes_and_unknown_tools_are_ignored(text: str) -> None:
    assert parse_text_tool_calls(text) == []


def test_a_call_in_a_fence_is_not_counted_twice() -> None:
    text = '```\n{"tool": "memory_get", "arguments": {"date": "today"}}\n```'
    assert len(parse_text_tool_calls(text)) == 1


# --- running --------------------------------------------------------------------------------

def test_run_remember_search_and_get(home: Home, stores: Stores) -> None:
    log, store = stores
    kw = dict(home=home, log=log, store=store, session_id="chat/x")
    assert run_tool("remember", {"content": "Ann keeps  bees in the garden"}, **kw) == "remembered"
    (event,) = log.read(types=["Remembered"])
    assert event.stream == "memory"
    assert event.payload == {"text": "Ann keeps bees in the garden", "type": "user_preference",
                             "source": "agent", "session": "chat/x"}
    found = run_tool("memory_search", {"query": "bees", "limit": 3}, **kw)
    assert "Ann keeps bees in the garden" in found and len(found.splitlines()) <= 3
    assert all(": " in line for line in found.splitlines())
    assert run_tool("memory_search", {"query": "zeppelin"}, **kw).startswith("No memories match")
    today = clock.now().date().isoformat()
    day = run_tool("memory_get", {"date": "today"}, **kw)
    assert day == render_day(store.db, today) and "[agent] Ann keeps bees" in day
    assert run_tool("memory_get", {"date": today}, **kw) == day
    assert (run_tool("memory_get", {"date": "1999-01-01"}, **kw)
            == "No journal entry for 1999-01-01.")
    assert run_tool("memory_get", '{"date": "yesterday"}', **kw).startswith("No journal entry for")


@pytest.mark.parametrize("name, arguments", [
    ("remember", {}),
    ("remember", {"content": "   "}),
    ("remember", {"content": 42}),
    ("remember", "not json"),
    ("remember", ["content"]),
    ("memory_search", {"query": ""}),
    ("memory_search", {"query": "bees", "limit": "many"}),
    ("memory_search", {"query": "bees", "limit": True}),
    ("memory_get", {"date": "next tuesday"}),
    ("memory_get", {"date": 20240101}),
    ("format_disk", {}),
])
def test_bad_arguments_give_an_error_result(home: Home, stores, name: str,  # type: ignore[no-untyped-def]
                                            arguments: object) -> None:
    log, store = stores
    result = run_tool(name, arguments, home=home, log=log, store=store, session_id="chat/x")
    assert result.startswith("error:")
    assert log.read(types=["Remembered"]) == []


def test_search_limit_is_clamped(home: Home, stores: Stores) -> None:
    log, store = stores
    for i in range(12):
        log.append(Remembered(text=f"bees fact number {i}"), stream="memory")
    store.catch_up_all()
    kw = dict(home=home, log=log, store=store, session_id="chat/x")
    assert len(run_tool("memory_search", {"query": "bees", "limit": 50}, **kw).splitlines()) <= 10
    assert len(run_tool("memory_search", {"query": "bees", "limit": 0}, **kw).splitlines()) == 1
    assert len(run_tool("memory_search", {"query": "bees", "limit": "2"}, **kw).splitlines()) == 2


# --- the session's tool loop ------------------------------------------------------------------

def test_text_fallback_tool_call_in_a_session(home: Home, tmp_path: Path) -> None:
    call = '```json\n{"tool": "remember", "arguments": {"content": "Ann prefers green tea"}}\n```'
    backend = ScriptedBackend(rules(tmp_path,
                                    {"match": r"^\[tool result remember\]: remembered",
                                     "reply": "Noted: green tea."},
                                    {"match": "remember", "reply": call}))
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session = ChatSession(home, log, store, backend, Config())
        session.start()
        reply = session.send("please remember that I prefer green tea")
        session.end()
        assert reply.text == "Noted: green tea."
        types = [e.type for e in log.read(stream=session.id)]
        assert types == ["SessionStarted", "MemoryInjected", "UserTurn", "ToolCalled",
                         "AssistantTurn", "SessionEnded"]
        (called,) = log.read(types=["ToolCalled"])
        assert called.payload == {"session": session.id, "name": "remember",
                                  "arguments": {"content": "Ann prefers green tea"},
                                  "result": "remembered"}
        (remembered,) = log.read(types=["Remembered"])
        assert (remembered.payload["source"] == "agent"
                and remembered.payload["session"] == session.id)
        (turn,) = log.read(types=["AssistantTurn"])
        assert turn.payload["text"] == "Noted: green tea."
        assert [m.role for m in session.history] == ["user", "assistant", "user", "assistant"]
        assert session.history[2].content == "[tool result remember]: remembered"
        store.catch_up_all()
        day = render_day(store.db, clock.now().date().isoformat())
        assert day is not None and "[agent] Ann prefers green tea" in day
    journal = CliRunner().invoke(cli, ["journal", "today"], catch_exceptions=False)
    assert "Ann prefers green tea" in journal.output
    verified = CliRunner().invoke(cli, ["replay", "--verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "DIFFERS" not in verified.output


class StructuredOnce(ScriptedBackend):
    """Answers the first call with a native tool call, then like the scripted backend."""

    def __init__(self, script: Path) -> None:
        super().__init__(script)
        self.seen: list[list[dict]] = []

    def chat(self, messages: list[dict], **kw: object) -> ChatReply:  # type: ignore[override]
        self.seen.append(list(messages))
        if len(self.seen) == 1:
            return ChatReply("", ChatStats(10, 5, 1, None), tool_calls=[{
                "id": "c1", "type": "function", "function": {
                    "name": "memory_search", "arguments": "{\"query\": \"bees\", \"limit\": 3}"}}])
        return super().chat(messages, **kw)  # type: ignore[arg-type]


def test_structured_tool_call_in_a_session(home: Home, tmp_path: Path) -> None:
    backend = StructuredOnce(rules(tmp_path, {"match": "bees", "reply": "You keep bees."}))
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        log.append(Remembered(text="Ann keeps bees on the roof"), stream="memory")
        store.catch_up_all()
        session = ChatSession(home, log, store, backend, Config())
        session.start()
        reply = session.send("what do you know about my bees?")
        assert reply.text == "You keep bees."
        (called,) = log.read(types=["ToolCalled"])
        assert called.payload["name"] == "memory_search"
        assert called.payload["arguments"] == {"query": "bees", "limit": 3}
        assert "Ann keeps bees on the roof" in called.payload["result"]
        second = backend.seen[1]
        assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["id"] == "c1"
        assert second[-1] == {"role": "tool", "content": called.payload["result"],
                              "tool_call_id": "c1"}
        (turn,) = log.read(types=["AssistantTurn"])
        assert turn.payload["text"] == "You keep bees."
        # the history keeps the exchange as plain text
        assert session.history[1].content.startswith("[tool call memory_search")
        assert session.history[2].content.startswith("[tool result memory_search]: ")
        assert "tool_calls" not in json.dumps(session.messages())
        session.end()
    verified = CliRunner().invoke(cli, ["replay", "--verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "DIFFERS" not in verified.output


class Calls(ScriptedBackend):
    """Every answer is a tool call: ``make(n)`` gives the n-th (from 0); records each request."""

    def __init__(self, make, structured: bool = False) -> None:  # type: ignore[no-untyped-def]
        super().__init__(None)
        self.native_tools = structured  # structured: native tools offered
        self.make, self.structured = make, structured
        self.requests: list[tuple[list[dict], dict]] = []

    def chat(self, messages: list[dict], **kw: object) -> ChatReply:  # type: ignore[override]
        n = len(self.requests)
        self.requests.append((list(messages), dict(kw)))
        name, args = self.make(n)
        if self.structured:
            return ChatReply("", ChatStats(10, 5, 1, None), tool_calls=[{
                "id": f"c{n}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}])
        text = json.dumps({"tool": name, "arguments": args})
        return ChatReply(text, ChatStats(10, 5, 1, None))


def test_tool_rounds_are_capped(home: Home, stores: Stores) -> None:
    """Different calls every time: three rounds run, then the model is told to answer."""
    log, store = stores
    backend = Calls(lambda n: ("memory_search", {"query": f"topic {n}"}))
    session = ChatSession(home, log, store, backend, Config())
    session.start()
    session.send("loop forever")
    assert [e.payload["arguments"]["query"] for e in log.read(types=["ToolCalled"])] == [
        "topic 0", "topic 1", "topic 2"]
    # 3 rounds + the final answer + (it called again) the plain last try
    assert len(backend.requests) == 5 and len(log.read(types=["AssistantTurn"])) == 1
    last = backend.requests[3][0][-1]
    assert last["role"] == "user" and last["content"].endswith(TOOLS_DONE)
    assert all(TOOLS_DONE not in json.dumps(m) for m, _ in backend.requests[:3])
    assert backend.requests[4][0][-1]["content"].endswith(ANSWER_NOW)


def test_a_repeated_call_is_not_run_again(home: Home, stores: Stores) -> None:
    """A small model looping on one call: it runs once; the repeat gets an error result and
    the next answer is the final one."""
    log, store = stores
    log.append(Remembered(text="Ann keeps bees"), stream="memory")
    store.catch_up_all()
    backend = Calls(lambda n: ("memory_search", {"query": "bees", "limit": 3}))
    session = ChatSession(home, log, store, backend, Config())
    session.start()
    session.send("what about my bees?")
    first, second = log.read(types=["ToolCalled"])
    assert "Ann keeps bees" in first.payload["result"]
    assert second.payload["result"] == REPEATED_CALL
    assert len(backend.requests) == 4  # call, repeat, final (told), plain last try
    assert backend.requests[2][0][-1]["content"].endswith(TOOLS_DONE)


def test_the_final_answer_is_asked_without_native_tools(home: Home, stores: Stores) -> None:
    log, store = stores
    backend = Calls(lambda n: ("memory_get", {"date": "today"}), structured=True)
    session = ChatSession(home, log, store, backend, Config())
    session.start()
    session.send("what happened today?")
    choices = [kw.get("tool_choice") for _m, kw in backend.requests]
    # the repeat in the 2nd answer makes the 3rd final; the 4th is the plain last try
    assert choices == [None, None, "none", None]
    assert [bool(kw.get("tools")) for _m, kw in backend.requests] == [True, True, True, False]
    # native tools: the system prompt says when to call, without the text-call recipe
    system = backend.requests[0][0][0]["content"]
    assert TOOL_PROMPT_NATIVE in system and TOOL_PROMPT not in system


def test_a_model_that_only_calls_tools_is_asked_plainly_at_last(home: Home, stores: Stores) -> None:
    """Told to answer, a tiny model calls a tool again: one more call with no tools offered
    or described gets the reply; the tool exchange is in it as plain text."""
    log, store = stores

    class Stubborn(Calls):
        def chat(self, messages: list[dict], **kw: object) -> ChatReply:  # type: ignore[override]
            if TOOL_PROMPT_NATIVE not in messages[0]["content"] and not kw.get("tools"):
                self.requests.append((list(messages), dict(kw)))
                return ChatReply("You keep bees.", ChatStats(10, 3, 1, None))
            return super().chat(messages, **kw)

    backend = Stubborn(lambda n: ("memory_search", {"query": "bees"}), structured=True)
    session = ChatSession(home, log, store, backend, Config())
    session.start()
    assert session.send("what about my bees?").text == "You keep bees."
    plain_messages, plain_kw = backend.requests[-1]
    assert "tools" not in plain_kw and "tool_calls" not in json.dumps(plain_messages)
    assert TOOL_PROMPT_NATIVE not in plain_messages[0]["content"]
    assert plain_messages[-1]["content"].startswith("[tool result memory_search]: ")
    assert plain_messages[-2]["content"] == "what about my bees?"  # its calls are not shown
    assert plain_messages[-1]["content"].endswith(ANSWER_NOW)
    (turn,) = log.read(types=["AssistantTurn"])
    assert turn.payload["text"] == "You keep bees."


def test_text_tool_prompt_has_no_concrete_example() -> None:
    """A 0.5B model copied the example query ("bees") into every turn."""
    for prompt in (TOOL_PROMPT, TOOL_PROMPT_NATIVE):
        assert "bees" not in prompt and '"query":' not in prompt


def test_tools_can_be_switched_off(home: Home, stores: Stores, tmp_path: Path) -> None:
    log, store = stores
    call = '{"tool": "remember", "arguments": {"content": "x"}}'
    session = ChatSession(home, log, store, ScriptedBackend(rules(tmp_path, {"reply": call})),
                          Config(), tools=False)
    session.start()
    assert session.send("hi").text == call
    assert log.read(types=["ToolCalled"]) == [] and log.read(types=["Remembered"]) == []


# --- the tools kwarg on the backends ----------------------------------------------------------

@pytest.mark.parametrize("name", ["ollama", "openai"])
def test_http_backends_send_tools_only_when_given(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from workers.llm import HTTPBackend, make_backend

    bodies: list[dict] = []

    def fake_stream(self, url, body, parse, on_token):  # type: ignore[no-untyped-def]
        bodies.append(body)
        return ChatReply("ok", ChatStats(None, None, 0, None))

    monkeypatch.setattr(HTTPBackend, "stream", fake_stream)
    backend = make_backend(name, model="m", base_url="http://127.0.0.1:9")
    backend.chat([{"role": "user", "content": "hi"}])
    backend.chat([{"role": "user", "content": "hi"}], tools=TOOL_SPECS)
    assert "tools" not in bodies[0] and bodies[1]["tools"] == TOOL_SPECS


def test_a_server_refusing_tools_falls_back_to_text_calls(home: Home, stores,  # type: ignore[no-untyped-def]
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from workers.llm import BackendError, HTTPBackend, OllamaBackend, make_backend

    log, store = stores
    seen: list[bool] = []

    def fake_stream(self, url, body, parse, on_token):  # type: ignore[no-untyped-def]
        seen.append("tools" in body)
        if "tools" in body:
            raise BackendError("HTTP 400: registry.ollama.ai/library/tiny does not support tools")
        return ChatReply("plain", ChatStats(None, None, 0, None))

    monkeypatch.setattr(HTTPBackend, "stream", fake_stream)
    monkeypatch.setattr(OllamaBackend, "context_window", lambda self, model=None: 2048)
    backend = make_backend("ollama", model="tiny", base_url="http://127.0.0.1:9")
    session = ChatSession(home, log, store, backend, Config())
    assert session.send("hi").text == "plain"
    assert session.send("again").text == "plain"
    assert seen == [True, False, False]
