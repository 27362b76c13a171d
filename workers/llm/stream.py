"""The one streaming loop every backend's wire format is parsed into.

Each backend turns its chunks into :class:`Delta` objects; :func:`consume` drives them: it
calls ``on_token`` per text piece, sums usage, joins OpenAI tool-call fragments by index, and
turns a ``KeyboardInterrupt`` (Ctrl-C while reading, or raised by ``on_token``) into a partial
reply with ``interrupted=True``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .base import ChatReply, ChatStats


@dataclass
class Delta:
    """One parsed chunk of any wire format."""

    text: str = ""
    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    tokens_per_sec: float | None = None
    tool_calls: list[dict] = field(default_factory=list)   # complete calls (ollama)
    tool_deltas: list[dict] = field(default_factory=list)  # OpenAI partial calls, by index


def _join_fragment(partial: dict[int, dict], fragment: dict) -> None:
    slot = partial.setdefault(int(fragment.get("index", 0)), {
        "id": None, "type": "function", "function": {"name": "", "arguments": ""}})
    slot["id"] = fragment.get("id") or slot["id"]
    fn = fragment.get("function") or {}
    slot["function"]["name"] += fn.get("name") or ""
    slot["function"]["arguments"] += fn.get("arguments") or ""


def consume(deltas: Iterable[Delta], on_token: Callable[[str], None] | None,
            started: float, close: Callable[[], None] | None = None, *,
            interrupted: bool = False) -> ChatReply:
    """Drive a stream of deltas: call ``on_token``, accumulate text, usage and tool calls."""
    parts: list[str] = []
    prompt = reply = None
    tps: float | None = None
    first_token: float | None = None
    calls: list[dict] = []
    partial: dict[int, dict] = {}
    try:
        for d in deltas:
            if d.text:
                if first_token is None:
                    first_token = time.monotonic()
                parts.append(d.text)
                if on_token is not None:
                    on_token(d.text)
            prompt = d.prompt_tokens if d.prompt_tokens is not None else prompt
            reply = d.reply_tokens if d.reply_tokens is not None else reply
            tps = d.tokens_per_sec if d.tokens_per_sec is not None else tps
            calls.extend(d.tool_calls)
            for fragment in d.tool_deltas:
                _join_fragment(partial, fragment)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if close is not None:
            try:
                close()
            except Exception:  # closing a broken socket must not mask the reply
                pass
    end = time.monotonic()
    if tps is None and reply and first_token is not None and end > first_token:
        tps = reply / (end - first_token)
    calls.extend(partial[i] for i in sorted(partial))
    return ChatReply("".join(parts), ChatStats(prompt, reply, int((end - started) * 1000), tps),
                     interrupted=interrupted, tool_calls=calls)
