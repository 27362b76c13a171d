"""What the chat-export readers share: the checked result, the problems, times and text.

A reader walks one export (already parsed JSON) and hands each conversation to a
:class:`Collector`: its session id, title, time and turns. The collector counts what was left
out and why, gathers the problems (every one is counted, the first few shown, each naming the
format the file looked like and where: ``conversations.json: looks like a ChatGPT export but
conversation 3 ('Trip') has no 'mapping'``), and :meth:`Collector.result` gives the
:class:`Export` — or raises :class:`events.ImportFailed`, and nothing is appended.

Conversations are imported oldest first (an export lists them newest first), so a message
that a copied or branched chat repeats under its own id stays in the conversation it was
first said in: the copy in a later conversation is left out (a ref names one turn).
"""
from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from events import ImportFailed, clock
from events.problems import Problems, clip
from events.text import repaired, text_problem
from events.transcript import Turn

USER, ASSISTANT = "user", "assistant"   # the roles and the names of imported turns

LABELS = {
    "transcript": "transcript",
    "chatgpt": "ChatGPT export",
    "claude": "Claude export",
    "openwebui": "Open WebUI export",
}
HINTS = {
    "chatgpt": "Export your data again (ChatGPT: Settings > Data controls > Export data) and "
               "import the .zip, or the conversations.json inside it, as it came; nothing was "
               "imported.",
    "claude": "Export your data again (Claude: Settings > Privacy > Export data) and import "
              "the conversations.json, or the .zip, as it came; nothing was imported.",
    "openwebui": "Export the chats again (Open WebUI: Settings > Chats > Export chats, or a "
                 "chat's menu > Download > Export chat (.json)) and import that file as it "
                 "came; nothing was imported.",
}

# Why a message or a conversation was not imported, as the report says it: (one, several)
LEFT_OUT = {
    "system": ("system or tool message", "system or tool messages"),
    "hidden": ("hidden message (reasoning, code, tool calls, custom instructions)",
               "hidden messages (reasoning, code, tool calls, custom instructions)"),
    "empty": ("message with no text (an image or a file alone)",
              "messages with no text (an image or a file alone)"),
    "branch": ("message on a branch not kept (edited or regenerated)",
               "messages on branches not kept (edited or regenerated)"),
    "copy": ("message already in an earlier conversation (a copied chat)",
             "messages already in an earlier conversation (a copied chat)"),
    "conversation": ("conversation with no text", "conversations with no text"),
}


def a_label(fmt: str) -> str:
    """``a ChatGPT export``, ``an Open WebUI export``."""
    label = LABELS[fmt]
    return f"{'an' if label[0] in 'AEIOU' else 'a'} {label}"


def left_out_line(reason: str, count: int) -> str:
    """``3 system or tool messages``."""
    one, several = LEFT_OUT[reason]
    return f"{count:,} {one if count == 1 else several}"


_CONTROL = re.compile("[\x00-\x1f\x7f]+")


@dataclass(frozen=True)
class Export:
    """A file read and checked: its turns, each session's title, and what was left out."""

    format: str                                    # a key of LABELS
    name: str                                      # the file, as errors name it
    turns: list[Turn]
    titles: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)  # a key of LEFT_OUT → how many

    @property
    def label(self) -> str:
        return LABELS[self.format]

    def left_out_lines(self) -> list[str]:
        """``3 system or tool messages``, … in the order of LEFT_OUT."""
        return [left_out_line(k, self.left_out[k]) for k in LEFT_OUT if self.left_out.get(k)]


@dataclass
class _Conversation:
    index: int
    session: str
    title: str
    at: dt.datetime | None
    turns: list[Turn]


class Collector:
    """The conversations, problems and left-out counts of one export being read."""

    def __init__(self, fmt: str, name: str) -> None:
        self.format = fmt
        self.name = name
        self.problems = Problems()
        self.left_out: dict[str, int] = {}
        self._conversations: list[_Conversation] = []
        self._sessions: dict[str, int] = {}

    def problem(self, where: str, what: str) -> None:
        self.problems.add(f"{self.name}: looks like {a_label(self.format)} but {where} {what}")

    def leave_out(self, reason: str, count: int = 1) -> None:
        assert reason in LEFT_OUT, reason
        if count:
            self.left_out[reason] = self.left_out.get(reason, 0) + count

    def conversation(self, index: int, session: str, title: str, at: dt.datetime | None,
                     turns: list[Turn], where: str) -> None:
        """One conversation read (``at``: its own time, None when it has none)."""
        if session in self._sessions:
            self.problem(where, f"has the same id as conversation {self._sessions[session]} "
                                f"({session.partition('/')[2]!r})")
            return
        self._sessions[session] = index
        self._conversations.append(_Conversation(index, session, title, at, turns))

    def result(self) -> Export:
        """The export's turns, oldest conversation first; :class:`ImportFailed` naming every
        problem found (nothing is appended)."""
        hint = HINTS[self.format]
        if self.problems:
            raise ImportFailed(self.problems.render(), hint=hint)
        far = dt.datetime.max.replace(tzinfo=clock.UTC)

        def start(c: _Conversation) -> tuple[dt.datetime, int]:
            return (c.at or (c.turns[0].at if c.turns else far), c.index)

        turns: list[Turn] = []
        titles: dict[str, str] = {}
        refs: set[str] = set()
        for conversation in sorted(self._conversations, key=start):
            kept = [t for t in conversation.turns if t.ref not in refs]
            self.leave_out("copy", len(conversation.turns) - len(kept))
            if not conversation.turns:
                self.leave_out("conversation")
            if not kept:
                continue
            refs.update(t.ref for t in kept)
            titles[conversation.session] = conversation.title
            turns += kept
        if not turns:
            count = len(self._conversations)
            raise ImportFailed(
                f"{self.name}: {a_label(self.format)} with {count:,} "
                f"conversation{'' if count == 1 else 's'} but no user or assistant message "
                "with text in any: nothing to import", hint=hint)
        return Export(self.format, self.name, turns, titles, dict(self.left_out))


def read_each(fmt: str, name: str, data: Any,
              one: Callable[[Collector, int, dict], None]) -> Export:
    """The turns of a parsed export — a list of conversations, or one — each object read by
    ``one`` (collector, its number from 1, the object); anything else is a problem."""
    out = Collector(fmt, name)
    for index, item in enumerate(data if isinstance(data, list) else [data], start=1):
        if isinstance(item, dict):
            one(out, index, item)
        else:
            out.problem(where_conversation(index), "is not a JSON object")
    return out.result()


def where_conversation(index: int, title: Any = None) -> str:
    """``conversation 3`` or ``conversation 3 ('Trip plans')`` (1-based, as in the file)."""
    if isinstance(title, str) and title.strip():
        return f"conversation {index} ({clip(title, 40)!r})"
    return f"conversation {index}"


def title_of(value: Any) -> str:
    """A conversation's title on one line ("" when it has none)."""
    if not isinstance(value, str):
        return ""
    return " ".join(_CONTROL.sub(" ", repaired(value)).split())


def id_problem(value: Any, key: str) -> str | None:
    """What is wrong with an id (a conversation's or a message's), or None."""
    if value is None:
        return f"has no {key!r}"
    if not isinstance(value, str):
        return f"has a {key!r} that is not a string ({clip(repr(value), 40)})"
    if not value.strip():
        return f"has an empty {key!r}"
    problem = text_problem(value, controls=True)
    return f"has a {key!r} that {problem}" if problem else None


def text_of(value: str) -> str:
    """A message's text as it can be stored (a lone surrogate or NUL is repaired: an export
    is what a person typed, not a file to fix by hand)."""
    return repaired(value)


def epoch_time(value: Any, key: str, *, scaled: bool = False) -> tuple[dt.datetime | None,
                                                                       str | None]:
    """``(time, None)`` from seconds since 1970 (``None`` stays None), or ``(None, what is
    wrong)``. ``scaled``: milliseconds, microseconds and nanoseconds are read by their size
    too (Open WebUI has written each)."""
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None, f"has a {key!r} that is not a number of seconds ({clip(repr(value), 40)})"
    seconds = float(value)
    if scaled:
        for size, per_second in ((1e17, 1e9), (1e14, 1e6), (1e11, 1e3)):
            if abs(seconds) >= size:
                seconds /= per_second
                break
    try:
        return dt.datetime.fromtimestamp(seconds, clock.UTC), None
    except (OverflowError, OSError, ValueError):
        return None, f"has a {key!r} out of range ({value!r} seconds since 1970)"


def iso_time(value: Any, key: str) -> tuple[dt.datetime | None, str | None]:
    """``(time, None)`` from an ISO-8601 time with an offset (``None`` stays None), or
    ``(None, what is wrong)``."""
    if value is None:
        return None, None
    shown = clip(repr(value), 40)
    if not isinstance(value, str):
        return None, f"has a {key!r} that is not an ISO-8601 time ({shown})"
    try:
        at = clock.from_iso(value)
    except ValueError:
        return None, f"has a {key!r} that is not an ISO-8601 time with an offset ({shown})"
    try:
        at.astimezone(clock.UTC)
    except OverflowError:
        return None, f"has a {key!r} out of range once converted to UTC ({shown})"
    return at, None


def branch(nodes: dict[str, Any], leaf: str, parent_key: str, *,
           strict: bool) -> tuple[list[str], str | None]:
    """The ids from the root down to ``leaf`` (one of ``nodes``), following each node's
    ``parent_key`` up until it is None — or, unless ``strict``, names no node (a root's
    placeholder parent); or ``([], what is wrong)``: a loop, a node that is not an object, a
    parent that is not there (``strict``)."""
    path: list[str] = []
    seen: set[str] = set()
    node_id: Any = leaf
    while node_id is not None:
        if not isinstance(node_id, str):
            return [], f"has a {parent_key!r} that is not a string ({clip(repr(node_id), 40)})"
        if node_id in seen:
            return [], f"has messages whose {parent_key!r} links loop (at {node_id!r})"
        node = nodes.get(node_id)
        if node is None:
            if strict:
                return [], f"has a {parent_key!r} {node_id!r} that is not one of its messages"
            break
        if not isinstance(node, dict):
            return [], f"has a message {node_id!r} that is not a JSON object"
        seen.add(node_id)
        path.append(node_id)
        node_id = node.get(parent_key)
    path.reverse()
    return path, None
