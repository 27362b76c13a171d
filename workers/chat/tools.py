"""Memory tools the chat model may call: ``remember``, ``memory_search``, ``memory_get``.

A model with native tool calling gets :data:`TOOL_SPECS` (OpenAI function-tool schemas) and
answers with structured ``tool_calls``. A small model that prints its call as text instead is
understood through :func:`parse_text_tool_calls`: a fenced ```json block (or a bare JSON
object on a line of its own) shaped ``{"tool": NAME, "arguments": {...}}`` or
``{"name": NAME, "arguments": {...}}``. :func:`run_tool` executes one call and always
returns a string — bad arguments give an ``error: ...`` result, never an exception.
"""
from __future__ import annotations

import json
import re
from typing import Any

from events import EventLog, Home, clock, streams
from events.memory_types import DEFAULT, head, names
from events.types import Remembered
from projections import ProjectionStore
from projections.journal import render_day
from projections.recall import recall
from projections.semantic import semantic_searcher

from ..sync.catch_up import catch_up_after_append

SEARCH_BUDGET = 400       # tokens of recall a search may return
DEFAULT_LIMIT = 5
MAX_LIMIT = 10
MAX_REMEMBER_CHARS = 1000
# Always in the injected memory block already; a search lists what else matches.
_HEAD_SOURCES = frozenset(names(head()))

TOOL_SPECS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "remember",
        "description": "Save a short note to the user's long-term memory (today's journal).",
        "parameters": {"type": "object", "properties": {
            "content": {"type": "string", "description": "The note, one or two sentences."}},
            "required": ["content"]}}},
    {"type": "function", "function": {
        "name": "memory_search",
        "description": "Search the user's memory (notes, journal, past conversations).",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "description": "At most this many results (1-10).",
                      "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}},
            "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "memory_get",
        "description": "Read the journal of one day.",
        "parameters": {"type": "object", "properties": {
            "date": {"type": "string",
                     "description": "YYYY-MM-DD, 'today' or 'yesterday' (UTC days)."}},
            "required": ["date"]}}},
]
TOOL_NAMES = frozenset(spec["function"]["name"] for spec in TOOL_SPECS)

# With native tool calling the server's chat template describes the tools; the system prompt
# only says when to use them. Small models copy whatever example they are shown (a 0.5B model
# shown `"query": "bees"` searched for bees whatever the question), so neither prompt has a
# concrete example.
TOOL_PROMPT_NATIVE = ("Call a memory tool only when the memory context below does not answer "
                      "the question, or when the user asks you to remember something; "
                      "otherwise answer directly.")
TOOL_PROMPT = ("Memory tools: remember(content), memory_search(query, limit), memory_get(date). "
               "Only when the memory context below does not answer the question, or the user "
               "asks you to remember something, reply with only a ```json block "
               '{"tool": "<tool name>", "arguments": {<its arguments>}} and wait for the '
               "result; otherwise answer directly.")
REPEATED_CALL = ("error: you already made this call in this turn; answer the user with the "
                 "result above")
TOOLS_DONE = "[no more tool calls this turn — answer the user now with what you have]"


def call_key(name: str, arguments: Any) -> str:
    """The identity of a call within a turn (same tool, same arguments)."""
    try:
        return f"{name}:{json.dumps(arguments, sort_keys=True, ensure_ascii=False)}"
    except (TypeError, ValueError):
        return f"{name}:{arguments!r}"


_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.S | re.I)


def _calls_in(value: Any) -> list[dict[str, Any]]:
    """Known-tool calls in one decoded JSON value (an object or a list of objects)."""
    items = value if isinstance(value, list) else [value]
    calls: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        name = item.get("tool", item.get("name"))
        args = item.get("arguments", item.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                continue
        if isinstance(name, str) and name in TOOL_NAMES and isinstance(args, dict):
            calls.append({"name": name, "arguments": args})
    return calls


# the chat template's own words for a call, copied as if they were tags: Qwen's tool prompt
# shows `{"name": <function-name>, "arguments": <args-json-object>}` within <tool_call>
# tags, and the 0.5B model answers "<function-name>memory_search</function-name>
# <args-json-object>{…}</args-json-object>" or "<name>John</name> <arguments>{…}"
_TEMPLATE_TAG = re.compile(r"</?(?:function[-_]?name|function|args-json-object|arguments"
                           r"|parameters|name|tool_call|tools?)>", re.I)
# … or a call's JSON opening the reply, of a tool that is none of ours ('```json {"name":
# "nate_enjoys_dairy_free_flavors", "arguments": …')
_CALL_SHAPED = re.compile(r'^\s*(?:```[ \t]*(?:json)?\s*)?\{+\s*"(?:name|tool)"\s*:', re.I)


def call_shaped(text: str) -> bool:
    """Whether a reply copies the chat template's tool-call tags, or opens with a call's
    JSON: a call printed as text, of any tool."""
    text = text or ""
    return bool(_TEMPLATE_TAG.search(text) or _CALL_SHAPED.match(text))


def imitates_a_call(text: str) -> bool:
    """Whether a reply is :func:`call_shaped` and holds no call that
    :func:`parse_text_tool_calls` reads: a model too small for the tools, not an answer."""
    return call_shaped(text) and not parse_text_tool_calls(text)


def parse_text_tool_calls(text: str) -> list[dict[str, Any]]:
    """Tool calls a model printed as text: ``[{"name": ..., "arguments": {...}}, ...]``.
    Only known tool names; malformed JSON and other shapes are ignored, but for an object
    in doubled braces, read as one (the 1.5B model, offered the tools, prints
    ``{{"name": "memory_search", "arguments": {"query": "Maria's puppy"}}}``)."""
    calls: list[dict[str, Any]] = []
    for block in _FENCE.findall(text or ""):
        calls.extend(_calls_in_json(block.strip()))
    rest = _FENCE.sub("", text or "")
    for line in rest.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            calls.extend(_calls_in_json(line))
    return calls


def _calls_in_json(text: str) -> list[dict[str, Any]]:
    """:func:`_calls_in` of ``text`` decoded, or of it less one pair of doubled braces
    ("{{…}}"); none when neither decodes."""
    for candidate in (text, text[1:-1] if text.startswith("{{") and text.endswith("}}")
                      else None):
        if candidate is None:
            continue
        try:
            return _calls_in(json.loads(candidate))
        except ValueError:
            continue
    return []


def structured_call(call: dict) -> tuple[str | None, str, Any]:
    """(id, name, arguments) of an OpenAI-style structured call; JSON-string arguments
    (OpenAI) are decoded, object arguments (ollama) kept; undecodable ones stay a string."""
    fn = call.get("function") or {}
    arguments = fn.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass
    return call.get("id"), str(fn.get("name") or ""), arguments


class _BadArguments(ValueError):
    pass


def _text_arg(args: dict[str, Any], key: str, *, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise _BadArguments(f"{key!r} must be a non-empty string")
    return value.strip()


def _limit_arg(args: dict[str, Any]) -> int:
    value = args.get("limit", DEFAULT_LIMIT)
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool):
        raise _BadArguments("'limit' must be an integer")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _BadArguments("'limit' must be an integer") from None
    return max(1, min(MAX_LIMIT, number))


def _day(value: str) -> str:
    try:
        return clock.parse_day(value)
    except ValueError as e:
        raise _BadArguments(str(e)) from None


def run_tool(name: str, arguments: Any, *, home: Home, log: EventLog, store: ProjectionStore,
             session_id: str) -> str:
    """Execute one memory tool call; the result is the text the model gets back."""
    if name not in TOOL_NAMES:
        return f"error: unknown tool {name!r} (known: {', '.join(sorted(TOOL_NAMES))})"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return f"error: the arguments of {name} are not valid JSON"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return f"error: the arguments of {name} must be a JSON object"
    try:
        if name == "remember":
            content = " ".join(_text_arg(arguments, "content").split())
            if len(content) > MAX_REMEMBER_CHARS:
                raise _BadArguments(f"'content' is longer than {MAX_REMEMBER_CHARS} characters")
            log.append(Remembered(text=content, type=DEFAULT.name, source="agent",
                                  session=session_id), stream=streams.MEMORY)
            catch_up_after_append(store)  # the note is in the log either way: not an error
            return "remembered"
        if name == "memory_search":
            query = _text_arg(arguments, "query")
            limit = _limit_arg(arguments)
            result = recall(store.db, query, budget=SEARCH_BUDGET, k=limit,
                            semantic=semantic_searcher(home, store), now=clock.now())
            lines = [f"{item.source}: {' '.join(item.content.split())}"
                     for item in result.items if item.source not in _HEAD_SOURCES][:limit]
            return "\n".join(lines) if lines else f"No memories match {query!r}."
        day = _day(_text_arg(arguments, "date", default="today"))
        return render_day(store.db, day) or f"No journal entry for {day}."
    except _BadArguments as e:
        return f"error: {name}: {e}"
