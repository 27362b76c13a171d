"""The chat's memory tools at the terminal: the `memory.tools` switch and `--tools/--no-tools`,
and a text tool call shown as one short line instead of its JSON."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.chat import ToolCallFilter, tool_call_label
from cli.main import cli
from events import EventLog, Home
from events.config import Config, MemoryConfig, load_config
from events.types import Remembered
from workers.chat.session import ChatSession
from workers.chat.tools import TOOL_PROMPT
from workers.llm import ChatReply, ChatStats, ScriptedBackend

from .conftest import Stores, rules

CALL = '```json\n{"tool": "memory_search", "arguments": {"query": "bees", "limit": 3}}\n```'


def tool_script(tmp_path: Path) -> Path:
    return rules(tmp_path, {"match": r"^\[tool result memory_search\]",
                            "reply": "Your bees are on the roof."},
                 {"match": "bees", "reply": CALL})


def chat(*args: str, keys: str = "where are my bees?\n/exit\n"):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", *args], input=keys,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def tool_calls(home: Home) -> list:  # type: ignore[type-arg]
    with EventLog(home.events_db) as log:
        return log.read(types=["ToolCalled"])


def remember_bees(home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(Remembered(text="Ann keeps bees on the roof"), stream="memory")


# --- the switch ---------------------------------------------------------------------------------


def test_memory_tools_config_is_validated(home: Home) -> None:
    assert load_config(home).memory.tools is True  # on by default
    home.config_file.write_text("memory:\n  tools: false\n")
    assert load_config(home) == Config(memory=MemoryConfig(tools=False))
    home.config_file.write_text("memory:\n  tools: sometimes\n")
    result = CliRunner().invoke(cli, ["recall", "x"])
    assert result.exit_code != 0
    assert "`memory.tools` must be true or false, got 'sometimes'" in result.output


def test_tools_are_on_by_default(home: Home, tmp_path: Path) -> None:
    remember_bees(home)
    chat("--script", str(tool_script(tmp_path)))
    (called,) = tool_calls(home)
    assert called.payload["name"] == "memory_search"
    assert "Ann keeps bees on the roof" in called.payload["result"]


def test_no_tools_flag_turns_them_off(home: Home, tmp_path: Path) -> None:
    result = chat("--script", str(tool_script(tmp_path)), "--no-tools")
    assert tool_calls(home) == []
    assert '"tool": "memory_search"' in result.output  # the reply is just text now: shown as is
    with EventLog(home.events_db) as log:
        (turn,) = log.read(types=["AssistantTurn"])
    assert turn.payload["text"] == CALL


def test_config_turns_them_off_and_the_flag_back_on(home: Home, tmp_path: Path) -> None:
    home.config_file.write_text("memory:\n  tools: false\n")
    chat("--script", str(tool_script(tmp_path)))
    assert tool_calls(home) == []
    chat("--script", str(tool_script(tmp_path)), "--tools")
    assert len(tool_calls(home)) == 1


# --- the display filter ---------------------------------------------------------------------------


def feed(pieces: list[str], reply: ChatReply | None = None) -> tuple[list[str], ToolCallFilter]:
    out: list[str] = []
    shown = ToolCallFilter(out.append)
    for piece in pieces:
        shown.token(piece)
    shown.reply_end(reply)
    return out, shown


def test_a_normal_reply_streams_token_by_token() -> None:
    out: list[str] = []
    shown = ToolCallFilter(out.append)
    for n, piece in enumerate(["Your ", "bees ", "are ", "fine."], 1):
        shown.token(piece)
        assert len(out) == n  # written as it came, not held
    shown.reply_end(None)
    assert out == ["Your ", "bees ", "are ", "fine."]


@pytest.mark.parametrize("pieces", [
    ["```json\n", '{"tool": ', '"memory_search", ', '"arguments": {"query": "bees"}}\n', "```"],
    ["\n ", "`", "``", "json\n", '{"tool": "memory_search", "arguments": {"query": "bees"}}',
     "\n```"],
    ['{"name": "memory_search", ', '"arguments": {"query": "bees"}}'],
])
def test_a_text_tool_call_is_held_and_shown_as_a_label(pieces: list[str]) -> None:
    out: list[str] = []
    shown = ToolCallFilter(out.append)
    for piece in pieces:
        shown.token(piece)
    assert out == []  # nothing of the JSON reached the terminal
    shown.reply_end(None)
    assert out == ['[memory_search: "bees"]\n']


@pytest.mark.parametrize("text", [
    '{"answer": 42}',                              # JSON, but no tool call
    "```python\nprint('bees')\n```",                # a code block answer
    "``",                                          # only backticks
])
def test_held_text_that_is_no_tool_call_is_printed_whole(text: str) -> None:
    out, _ = feed([text[:3], text[3:]] if len(text) > 3 else [text])
    assert "".join(out) == text


def test_inline_code_and_an_interrupted_call_are_not_labels() -> None:
    out, _ = feed(["`ls`", " lists files."])
    assert out == ["`ls`", " lists files."]
    partial = '```json\n{"tool": "memory_search", "arguments": {"query": "bees"}}\n```'
    out, _ = feed([partial], ChatReply(partial, ChatStats(1, 1, 1, None), interrupted=True))
    assert out == [partial]


def test_the_filter_is_reset_for_each_model_call() -> None:
    out: list[str] = []
    shown = ToolCallFilter(out.append)
    shown.token(CALL)
    shown.reply_end(None)
    shown.token("Your ")
    shown.token("bees.")
    shown.reply_end(None)
    assert out == ['[memory_search: "bees"]\n', "Your ", "bees."]


def test_structured_calls_and_long_arguments_get_labels() -> None:
    structured = ChatReply("", ChatStats(1, 1, 1, None), tool_calls=[{
        "id": "c1", "type": "function",
        "function": {"name": "remember", "arguments": json.dumps({"content": "x" * 100})}}])
    out, _ = feed([], structured)
    assert out == [f'[remember: "{"x" * 59}…"]\n']
    assert tool_call_label("memory_get", {"date": "today"}) == '[memory_get: "today"]'
    assert tool_call_label("memory_get", {}) == "[memory_get]"


def test_the_session_marks_the_end_of_each_model_call(home: Home, stores: Stores,
                                                      tmp_path: Path) -> None:
    log, store = stores
    session = ChatSession(home, log, store, ScriptedBackend(tool_script(tmp_path)), Config())
    session.start()
    events: list[str] = []
    session.send("where are my bees?", on_token=lambda p: events.append("token"),
                 on_reply_end=lambda reply: events.append(f"end:{reply.text[:3]}"))
    ends = [e for e in events if e.startswith("end:")]
    assert ends == ["end:```", "end:You"] and events[-1] == "end:You"
    assert events.index("end:```") < len(events) - 2  # the second call's tokens came after it


def test_the_chat_shows_a_text_tool_call_as_one_line(home: Home, tmp_path: Path) -> None:
    remember_bees(home)
    result = chat("--script", str(tool_script(tmp_path)))
    assert 'assistant> [memory_search: "bees"]\nYour bees are on the roof.\n' in result.output
    assert "```" not in result.output and '"tool"' not in result.output
    assert len(tool_calls(home)) == 1
    with EventLog(home.events_db) as log:
        (turn,) = log.read(types=["AssistantTurn"])
    assert turn.payload["text"] == "Your bees are on the roof."


# --- a model too small for the tools ------------------------------------------------------------

# what the installed 0.5B model answers when offered the tools: the chat template's call
# placeholders copied as tags (measured with `diarist serve-model`)
IMITATION = ('<function-name>remember</function-name>\n<args-json-object>\n    {"content": '
             '"John loves the ocean.", "required": ["content"]}\n</args-json-object>')


class TooSmallForTools(ScriptedBackend):
    """Copies the template's tags while a tool prompt is in the system prompt; answers
    once it is not (the session's plain call)."""

    def __init__(self) -> None:
        super().__init__()
        self.offered: list[bool] = []

    def reply_for(self, messages: list[dict]) -> str:
        system = str(messages[0].get("content") or "") if messages else ""
        offered = TOOL_PROMPT in system
        self.offered.append(offered)
        return IMITATION if offered else "Your bees are on the roof."


@pytest.mark.parametrize(("text", "imitates"), [
    (IMITATION, True),
    ("<tool_call>\nmemory_search bees\n</tool_call>", True),
    ('<name>John</name>\n<arguments>{content:"Lord of the Rings"}', True),
    # a call's JSON, of no tool of ours (broken off, as a reply cap leaves it)
    ('```json\n{\n  "name": "nate_enjoys_dairy_free_flavors",\n  "arguments": {\n    '
     '"content": "Nate loves co', True),
    ('{"tool": "weather", "arguments": {"city": "Leeds"}}', True),
    ('{{"name": "weather", "arguments": {"city": "Leeds"}}}', True),
    # a call the parser reads is a call; an answer with a tag in it is an answer
    ('<tool_call>\n{"name": "memory_search", "arguments": {"query": "bees"}}\n</tool_call>',
     False),
    ("Wrap it in <b>bold</b>.", False),
    ("Your bees are on the roof.", False),
])
def test_a_reply_that_copies_the_template_s_call_tags_is_told_apart(text: str,
                                                                     imitates: bool) -> None:
    from workers.chat.tools import imitates_a_call

    assert imitates_a_call(text) is imitates


def test_the_copied_tags_never_reach_the_terminal() -> None:
    out, _ = feed([IMITATION[:5], IMITATION[5:40], IMITATION[40:]])
    assert out == []
    out, _ = feed(["<b>", "Bold</b> it."])   # a tag in an answer: printed whole
    assert "".join(out) == "<b>Bold</b> it."
    out = []
    shown = ToolCallFilter(out.append, lambda: False)   # asked again, tools off: an answer
    shown.token(IMITATION)
    shown.reply_end(None)
    assert out == [IMITATION]


def test_a_model_too_small_for_the_tools_is_asked_again_without_them(
        home: Home, stores: Stores) -> None:
    remember_bees(home)
    log, store = stores
    backend = TooSmallForTools()
    notices: list[str] = []
    session = ChatSession(home, log, store, backend, Config(), notify=notices.append)
    session.start()
    reply = session.send("where are my bees?")
    assert reply.text == "Your bees are on the roof."
    assert backend.offered == [True, False]
    assert session.tools is False and len(notices) == 1 and "--no-tools" in notices[0]
    session.send("and my hives?")           # the rest of the session goes without them
    assert backend.offered == [True, False, False]
    assert tool_calls(home) == []
    with EventLog(home.events_db) as log2:
        assert len(log2.read(types=["Remembered"])) == 1          # only remember_bees'
        turns = [e.payload["text"] for e in log2.read(types=["AssistantTurn"])]
    assert turns == ["Your bees are on the roof.", "Your bees are on the roof."]
