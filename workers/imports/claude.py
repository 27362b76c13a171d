"""A Claude data export: ``conversations.json`` (or the export's .zip, see :mod:`.detect`).

A JSON list of conversations, each ``{uuid, name, created_at, updated_at, chat_messages}``;
a message ``{uuid, text, sender: "human" | "assistant", created_at, updated_at, content:
[{type: "text", text, …}, …], attachments, files}`` (ISO-8601 times).

- **Roles**: ``human`` (or ``user``) → user, ``assistant`` → assistant; any other sender is
  left out.
- **Text**: the ``text`` blocks of ``content`` (consecutive ones run together: a text cut
  around its citations; a thinking or tool block between starts a new paragraph); thinking,
  tool use and tool results are left out — a message whose ``content`` has blocks but none
  of text has no visible text (its ``text`` then only says a block is not supported).
  Without a ``content`` list, ``text`` (without that placeholder). Attachments and files
  are not imported.
- **The branch kept**: when every message names its ``parent_message_uuid`` (newer exports
  hold every branch of an edited or regenerated message), the path up from
  ``current_leaf_message_uuid``, or else from the last message (the branch last continued),
  through the parents; other branches are left out. Without parents, ``chat_messages`` in
  order.
- Session ``claude/<uuid>``, ref ``claude:<message uuid>``; a message without a time of its
  own takes the conversation's.
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
    id_problem,
    iso_time,
    read_each,
    text_of,
    title_of,
    where_conversation,
)

ROLES = {"human": USER, "user": USER, "assistant": ASSISTANT}
PARENT = "parent_message_uuid"
# what ``text`` holds in place of a block the export could not render (a tool call, an
# artifact)
UNSUPPORTED = re.compile(
    r"`{3}\s*This block is not supported on your current device yet\.\s*`{3}")


def read(data: Any, name: str) -> Export:
    """The turns of a parsed ``conversations.json`` (a list, or one conversation)."""
    return read_each("claude", name, data, _conversation)


def _conversation(out: Collector, index: int, conversation: dict) -> None:
    where = where_conversation(index, conversation.get("name"))
    uuid = conversation.get("uuid")
    problems = [p for p in (id_problem(uuid, "uuid"),) if p]
    created, problem = iso_time(conversation.get("created_at"), "created_at")
    updated, problem2 = iso_time(conversation.get("updated_at"), "updated_at")
    problems += [p for p in (problem, problem2) if p]
    messages = conversation.get("chat_messages")
    if "chat_messages" not in conversation:
        problems.append("has no 'chat_messages' (its messages)")
    elif not isinstance(messages, list):
        problems.append("has 'chat_messages' that are not a list")
    for problem in problems:
        out.problem(where, problem)
    if problems or not isinstance(messages, list) or not isinstance(uuid, str):
        return
    at = created or updated
    session = f"claude/{uuid}"
    kept = _branch(out, where, conversation, messages)
    if kept is None:
        return
    turns = [t for t in (_turn(out, where, session, m, at) for m in kept) if t is not None]
    out.conversation(index, session, title_of(conversation.get("name")), at, turns, where)


def _branch(out: Collector, where: str, conversation: dict,
            messages: list[Any]) -> list[Any] | None:
    """The messages of the branch kept (all of them when they name no parents), or None
    (a problem)."""
    by_id: dict[str, Any] = {}
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            out.problem(where, f"has a message (number {number}) that is not a JSON object")
            return None
        problem = id_problem(message.get("uuid"), "uuid")
        if problem:
            out.problem(f"{where}, message number {number}", problem)
            return None
        by_id[message["uuid"]] = message
    if not messages or not all(PARENT in m for m in messages):
        return messages
    leaf = conversation.get("current_leaf_message_uuid")
    if not isinstance(leaf, str) or leaf not in by_id:
        leaf = messages[-1]["uuid"]
    path, problem = branch(by_id, leaf, PARENT, strict=False)
    if problem:
        out.problem(where, problem)
        return None
    out.leave_out("branch", len(by_id) - len(path))
    return [by_id[uuid] for uuid in path]


def _turn(out: Collector, where: str, session: str, message: dict,
          default_at: dt.datetime | None) -> Turn | None:
    """One message as a turn, or None (left out, or a problem)."""
    uuid = message["uuid"]
    here = f"{where}, message {uuid!r}"
    sender, content, text = message.get("sender"), message.get("content"), message.get("text")
    if not isinstance(sender, str):
        out.problem(here, "has no 'sender'")
        return None
    at, problem = iso_time(message.get("created_at"), "created_at")
    if problem:
        out.problem(here, problem)
        return None
    if content is not None and not isinstance(content, list):
        out.problem(here, "has a 'content' that is not a list")
        return None
    if text is not None and not isinstance(text, str):
        out.problem(here, "has a 'text' that is not a string")
        return None
    role = ROLES.get(sender)
    if role is None:
        out.leave_out("system")
        return None
    if content:
        body = _text_blocks(content)
        if body is None:
            out.leave_out("hidden")
            return None
    else:
        body = UNSUPPORTED.sub("", text or "").strip("\n")
    if not body.strip():
        out.leave_out("empty")
        return None
    when = at or default_at
    if when is None:
        out.problem(here, "has no 'created_at', and neither has its conversation")
        return None
    return Turn(session, when, role, role, text_of(body), f"claude:{uuid}", 0, here)


def _text_blocks(content: list[Any]) -> str | None:
    """The ``text`` blocks of a message's content: consecutive ones run together (a text
    cut around its citations), a run ended by another block (thinking, a tool call) starts
    a new paragraph; None when there is no text block."""
    runs: list[list[str]] = [[]]
    found = False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                runs[-1].append(text)
                found = True
        elif runs[-1]:
            runs.append([])
    if not found:
        return None
    return "\n\n".join(text for text in ("".join(run).strip("\n") for run in runs) if text.strip())
