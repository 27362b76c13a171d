"""A ChatGPT data export: ``conversations.json`` (or the export's .zip, see :mod:`.detect`).

A JSON list of conversations, each ``{id | conversation_id, title, create_time, update_time,
mapping, current_node}``; ``mapping`` is the message tree, ``{node id: {id, parent,
children, message}}``, a message ``{id, author: {role, name}, create_time, content:
{content_type, parts}, metadata, recipient}`` (times in seconds since 1970).

- **The branch kept**: from ``current_node`` up through the ``parent`` links, reversed. An
  edited message or a regenerated answer starts a sibling branch; the branches not kept are
  left out.
- **The person's and the assistant's visible words only**: role ``user`` or ``assistant``,
  content ``text`` or ``multimodal_text`` (its string parts; an image pointer is dropped, and
  so are the private-use marks of a citation chip),
  addressed to ``all``, not ``metadata.is_visually_hidden_from_conversation`` nor
  ``is_user_system_message`` (custom instructions). System and tool messages, reasoning
  (``thoughts``, ``reasoning_recap``), code and its output (``code``, ``execution_output``),
  browsing (``tether_*``) and context (``user_editable_context``, …) are left out.
- Session ``chatgpt/<conversation id>``, ref ``chatgpt:<message id>``; a message without a
  time of its own takes the conversation's.
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

VISIBLE = frozenset({"text", "multimodal_text"})
# a citation the app draws as a chip, written into the text between private-use marks
# (U+E200 "cite" U+E202 "turn0search3" … U+E201): not words of the answer
CITATION = re.compile("\ue200[^\ue200\ue201]*\ue201")
HIDDEN_FLAGS = ("is_visually_hidden_from_conversation", "is_user_system_message")


def read(data: Any, name: str) -> Export:
    """The turns of a parsed ``conversations.json`` (a list, or one conversation)."""
    return read_each("chatgpt", name, data, _conversation)


def _conversation(out: Collector, index: int, conversation: dict) -> None:
    where = where_conversation(index, conversation.get("title"))
    key = "conversation_id" if conversation.get("conversation_id") is not None else "id"
    conversation_id = conversation.get(key)
    problems = [p for p in (id_problem(conversation_id, key),) if p]
    created, problem = epoch_time(conversation.get("create_time"), "create_time")
    updated, problem2 = epoch_time(conversation.get("update_time"), "update_time")
    problems += [p for p in (problem, problem2) if p]
    mapping = conversation.get("mapping")
    if "mapping" not in conversation:
        problems.append("has no 'mapping' (its messages)")
    elif not isinstance(mapping, dict):
        problems.append("has a 'mapping' that is not a JSON object")
    for problem in problems:
        out.problem(where, problem)
    if problems or not isinstance(mapping, dict) or not isinstance(conversation_id, str):
        return
    path = _branch(out, where, mapping, conversation.get("current_node"))
    if path is None:
        return
    at = created or updated
    session = f"chatgpt/{conversation_id}"
    turns: list[Turn] = []
    for node_id in path:
        message = mapping[node_id].get("message")
        if message is None:
            continue  # the root, or a node without a message
        turn = _turn(out, where, session, node_id, message, at)
        if turn is not None:
            turns.append(turn)
    out.conversation(index, session, title_of(conversation.get("title")), at, turns, where)


def _branch(out: Collector, where: str, mapping: dict[str, Any],
            current: Any) -> list[str] | None:
    """The node ids from the root to ``current_node`` (the branch kept), or None (a
    problem); the messages of the other branches are counted as left out."""
    if not mapping:
        return []
    if current is None:
        out.problem(where, "has no 'current_node' (the message it ended on)")
        return None
    if not isinstance(current, str) or current not in mapping:
        out.problem(where, f"has a 'current_node' {current!r} that is not in its 'mapping'")
        return None
    path, problem = branch(mapping, current, "parent", strict=True)
    if problem:
        out.problem(where, problem)
        return None
    kept = set(path)
    out.leave_out("branch", sum(1 for node_id, node in mapping.items() if node_id not in kept
                                and isinstance(node, dict) and node.get("message")))
    return path


def _turn(out: Collector, where: str, session: str, node_id: str, message: Any,
          default_at: dt.datetime | None) -> Turn | None:
    """One message of the branch kept as a turn, or None (left out, or a problem)."""
    if not isinstance(message, dict):
        out.problem(where, f"has a message {node_id!r} that is not a JSON object")
        return None
    message_id = message.get("id") or node_id
    problem = id_problem(message_id, "id")
    if problem:
        out.problem(f"{where}, message {node_id!r}", problem)
        return None
    here = f"{where}, message {message_id!r}"
    author, content = message.get("author"), message.get("content")
    role = author.get("role") if isinstance(author, dict) else None
    kind = content.get("content_type") if isinstance(content, dict) else None
    if not isinstance(role, str):
        out.problem(here, "has no 'author.role'")
        return None
    if not isinstance(kind, str) or not isinstance(content, dict):
        out.problem(here, "has no 'content.content_type'")
        return None
    at, problem = epoch_time(message.get("create_time"), "create_time")
    if problem:
        out.problem(here, problem)
        return None
    parts = content.get("parts", [])
    if not isinstance(parts, list):
        out.problem(here, "has 'content.parts' that are not a list")
        return None
    metadata = message.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if role not in (USER, ASSISTANT):
        out.leave_out("system")
        return None
    if (kind not in VISIBLE or any(metadata.get(flag) for flag in HIDDEN_FLAGS)
            or message.get("recipient", "all") not in ("all", None)):
        out.leave_out("hidden")
        return None
    text = "\n".join(part for part in parts if isinstance(part, str) and part.strip())
    text = CITATION.sub("", text) if "\ue200" in text else text
    if not text.strip():
        out.leave_out("empty")
        return None
    when = at or default_at
    if when is None:
        out.problem(here, "has no 'create_time', and neither has its conversation")
        return None
    return Turn(session, when, role, role, text_of(text), f"chatgpt:{message_id}", 0, here)
