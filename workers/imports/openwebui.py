"""An Open WebUI chat export: ``chat-export-<time>.json``.

A JSON list of chats (Settings > Chats > Export chats; one chat's own export is a list of
one, and a single chat object is read too), each ``{id, user_id, title, chat: {title,
models, history: {messages: {id: {id, parentId, childrenIds, role, content, timestamp,
model}}, currentId}, messages: […]}, created_at, updated_at}`` (times in seconds since
1970; milliseconds, microseconds and nanoseconds are recognised by their size).

- **The branch kept**: from ``chat.history.currentId`` up through ``parentId``, reversed; an
  edited message or a regenerated answer is a sibling branch, left out. Without a history,
  ``chat.messages`` (the branch shown) in order.
- **Roles**: ``user`` and ``assistant``; a system message is left out. The text is
  ``content`` (a string, or the ``text`` parts of a list) without the collapsed reasoning,
  tool-call and code-interpreter blocks (``<details type="reasoning">…</details>``) the
  interface writes into an answer; files and images are not imported.
- Session ``openwebui/<chat id>``, ref ``openwebui:<message id>``; a message without a time of
  its own takes the chat's.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from events.transcript import Turn

from .common import (
    ASSISTANT,
    USER,
    Collector,
    Export,
    branch,
    epoch_time,
    id_problem,
    read_each,
    text_of,
    title_of,
    where_conversation,
)

# the blocks Open WebUI folds into an answer's content that are not the answer itself
_FOLDED = re.compile(
    r'<details\b[^>]*\btype="(?:reasoning|tool_calls|code_interpreter)"[^>]*>.*?</details>\s*',
    re.S)


def read(data: Any, name: str) -> Export:
    """The turns of a parsed Open WebUI export (a list of chats, or one chat)."""
    return read_each("openwebui", name, data, _chat)


def _chat(out: Collector, index: int, item: dict) -> None:
    chat = item.get("chat")
    if not isinstance(chat, dict):
        out.problem(where_conversation(index, item.get("title")),
                    "has no 'chat' object (its messages)")
        return
    title = item.get("title") if isinstance(item.get("title"), str) else chat.get("title")
    where = where_conversation(index, title)
    chat_id = item.get("id") if item.get("id") is not None else chat.get("id")
    problems = [p for p in (id_problem(chat_id, "id"),) if p]
    created, problem = epoch_time(item.get("created_at"), "created_at", scaled=True)
    updated, problem2 = epoch_time(item.get("updated_at"), "updated_at", scaled=True)
    started, problem3 = epoch_time(chat.get("timestamp"), "chat.timestamp", scaled=True)
    problems += [p for p in (problem, problem2, problem3) if p]
    for problem in problems:
        out.problem(where, problem)
    if problems or not isinstance(chat_id, str):
        return
    kept = _branch(out, where, chat)
    if kept is None:
        return
    at = created or started or updated
    session = f"openwebui/{chat_id}"
    turns = [t for t in (_turn(out, where, session, number, m, at)
                         for number, m in enumerate(kept, start=1)) if t is not None]
    out.conversation(index, session, title_of(title), at, turns, where)


def _branch(out: Collector, where: str, chat: dict) -> list[Any] | None:
    """The messages of the branch kept, or None (a problem)."""
    history, listed = chat.get("history"), chat.get("messages")
    messages = history.get("messages") if isinstance(history, dict) else None
    if history is not None and not isinstance(history, dict):
        out.problem(where, "has a 'chat.history' that is not a JSON object")
        return None
    if messages is not None and not isinstance(messages, dict):
        out.problem(where, "has 'chat.history.messages' that are not a JSON object")
        return None
    if listed is not None and not isinstance(listed, list):
        out.problem(where, "has 'chat.messages' that are not a list")
        return None
    if messages:
        current = history.get("currentId") if isinstance(history, dict) else None
        if isinstance(current, str) and current in messages:
            path, problem = branch(messages, current, "parentId", strict=False)
            if problem:
                out.problem(where, f"(chat.history) {problem}")
                return None
            out.leave_out("branch", len(messages) - len(path))
            return [messages[i] for i in path]
        if listed is None:
            out.problem(where, f"has a 'chat.history.currentId' ({current!r}) that is not "
                               "one of its messages, and no 'chat.messages'")
            return None
    if listed is None:
        if messages is None:
            out.problem(where, "has neither 'chat.history' nor 'chat.messages' (its messages)")
            return None
        return []
    return listed


def _turn(out: Collector, where: str, session: str, number: int, message: Any,
          default_at: dt.datetime | None) -> Turn | None:
    """One message as a turn, or None (left out, or a problem)."""
    if not isinstance(message, dict):
        out.problem(where, f"has a message (number {number} of the branch) that is not a "
                           "JSON object")
        return None
    message_id = message.get("id")
    problem = id_problem(message_id, "id")
    if problem:
        out.problem(f"{where}, message number {number} of the branch", problem)
        return None
    here = f"{where}, message {message_id!r}"
    role = message.get("role")
    if not isinstance(role, str):
        out.problem(here, "has no 'role'")
        return None
    at, problem = epoch_time(message.get("timestamp"), "timestamp", scaled=True)
    if problem:
        out.problem(here, problem)
        return None
    if role not in (USER, ASSISTANT):
        out.leave_out("system")
        return None
    content = message.get("content")
    if isinstance(content, list):
        text = "\n\n".join(p["text"] for p in content if isinstance(p, dict)
                           and p.get("type") == "text" and isinstance(p.get("text"), str))
    elif isinstance(content, str) or content is None:
        text = content or ""
    else:
        out.problem(here, "has a 'content' that is neither text nor a list")
        return None
    shown = _FOLDED.sub("", text).strip("\n") if "<details" in text else text
    if not shown.strip():
        out.leave_out("hidden" if text.strip() else "empty")
        return None
    when = at or default_at
    if when is None:
        out.problem(here, "has no 'timestamp', and neither has its chat")
        return None
    return Turn(session, when, role, role, text_of(shown), f"openwebui:{message_id}", 0, here)
