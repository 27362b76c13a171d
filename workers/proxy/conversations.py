"""Which session a request belongs to.

An OpenAI client sends the whole conversation with every request. The proxy keys a
conversation by what the person and the model said so far — the user and assistant messages'
roles and text, whitespace-normalised; system messages and the proxy's own memory are not part
of it — so the same earlier messages lead to the same session, a regenerated reply included.
After each reply the session is also known by the conversation with that reply added, which is
what the client sends next. A request whose earlier messages the proxy has never seen (a new
chat, a client's edited history) starts a new session. The keys are rebuilt at start-up from
the turns of earlier proxy sessions, so a restarted proxy continues them.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from typing import Any

SESSION_PREFIX = "proxy/"
DIALOGUE_ROLES = ("user", "assistant")


def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text parts of a list of parts
    (``[{"type": "text", "text": ...}, {"type": "image_url", ...}]``); else empty."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, dict) and part.get("type") == "text"
                         and isinstance(part.get("text"), str))
    return ""


def dialogue(messages: Iterable[dict]) -> list[tuple[str, str]]:
    """The user and assistant messages as (role, whitespace-normalised text), the empty ones
    (an assistant message that only called a tool) left out."""
    pairs = []
    for message in messages:
        role = message.get("role")
        text = " ".join(message_text(message.get("content")).split())
        if role in DIALOGUE_ROLES and text:
            pairs.append((str(role), text))
    return pairs


def conversation_key(pairs: list[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()


class Conversations:
    """Conversation keys → session ids."""

    def __init__(self) -> None:
        self._sessions: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def find(self, earlier: list[tuple[str, str]]) -> str | None:
        """The session whose conversation so far is ``earlier``; None for a new one."""
        return self._sessions.get(conversation_key(earlier)) if earlier else None

    def remember(self, pairs: list[tuple[str, str]], session: str) -> None:
        if pairs:
            self._sessions[conversation_key(pairs)] = session

    def recover(self, db: sqlite3.Connection) -> None:
        """Know every earlier proxy session by its conversation after each of its replies
        (from the turns projection)."""
        sessions: dict[str, list[tuple[str, str]]] = {}
        rows = db.execute("SELECT session, role, text FROM turns WHERE session LIKE ? "
                          "ORDER BY seq", (SESSION_PREFIX + "%",))
        for session, role, text in rows:
            pairs = sessions.setdefault(session, [])
            pairs.append((role, " ".join(text.split())))
            if role == "assistant":
                self.remember(pairs, session)
