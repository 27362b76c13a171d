"""The one streaming loop every backend's wire format is parsed into.

Each backend turns its chunks into :class:`Delta` objects; :func:`consume` drives them: it
calls ``on_token`` per text piece, sums usage, joins OpenAI tool-call fragments by index, and
turns a ``KeyboardInterrupt`` (Ctrl-C while reading, or raised by ``on_token``) into a partial
reply with ``interrupted=True``. A :class:`~workers.llm.base.BackendError` raised while the
reply streams (a broken connection, an error or a malformed chunk mid-stream, a stream that
ends early) becomes :class:`~workers.llm.base.ReplyCutOff` carrying the partial reply, so
what was already shown is not lost.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .base import BackendError, ChatReply, ChatStats, ContextLengthExceeded, ReplyCutOff


@dataclass
class Delta:
    """One parsed chunk of any wire format."""

    text: str = ""
    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    tokens_per_sec: float | None = None
    tool_calls: list[dict] = field(default_factory=list)   # complete calls (ollama)
    tool_deltas: list[dict] = field(default_factory=list)  # OpenAI partial calls, by index
    finished: bool = False  # the server said the reply is complete


def count(value: object) -> int | None:
    """A token count or window size from a server: a non-negative integer, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(value)
    except (ValueError, OverflowError):
        return None
    return number if number >= 0 else None


def _join_fragment(partial: dict[int, dict], fragment: dict) -> None:
    slot = partial.setdefault(int(fragment.get("index", 0)), {
        "id": None, "type": "function", "function": {"name": "", "arguments": ""}})
    slot["id"] = fragment.get("id") or slot["id"]
    fn = fragment.get("function") or {}
    slot["function"]["name"] += fn.get("name") or ""
    slot["function"]["arguments"] += fn.get("arguments") or ""


@dataclass
class _Reply:
    """A reply as it accumulates."""

    parts: list[str] = field(default_factory=list)
    prompt: int | None = None
    reply: int | None = None
    tps: float | None = None
    first_token: float | None = None
    calls: list[dict] = field(default_factory=list)
    fragments: dict[int, dict] = field(default_factory=dict)

    def add(self, d: Delta, on_token: Callable[[str], None] | None) -> None:
        if d.text:
            if self.first_token is None:
                self.first_token = time.monotonic()
            self.parts.append(d.text)
            if on_token is not None:
                on_token(d.text)
        self.prompt = d.prompt_tokens if d.prompt_tokens is not None else self.prompt
        self.reply = d.reply_tokens if d.reply_tokens is not None else self.reply
        self.tps = d.tokens_per_sec if d.tokens_per_sec is not None else self.tps
        self.calls.extend(d.tool_calls)
        for fragment in d.tool_deltas:
            _join_fragment(self.fragments, fragment)

    def done(self, started: float, interrupted: bool) -> ChatReply:
        end = time.monotonic()
        tps = self.tps
        if tps is None and self.reply and self.first_token is not None \
                and end > self.first_token:
            tps = self.reply / (end - self.first_token)
        calls = self.calls + [self.fragments[i] for i in sorted(self.fragments)]
        stats = ChatStats(self.prompt, self.reply, int((end - started) * 1000), tps)
        return ChatReply("".join(self.parts), stats, interrupted=interrupted, tool_calls=calls)


def consume(deltas: Iterable[Delta], on_token: Callable[[str], None] | None,
            started: float, close: Callable[[], None] | None = None, *,
            interrupted: bool = False) -> ChatReply:
    """Drive a stream of deltas: call ``on_token``, accumulate text, usage and tool calls."""
    acc = _Reply()
    cut: BackendError | None = None
    try:
        for d in deltas:
            acc.add(d, on_token)
    except KeyboardInterrupt:
        interrupted = True
    except (ReplyCutOff, ContextLengthExceeded):
        raise  # already carries its partial; an overflow is retried whole by the chat
    except BackendError as exc:
        cut, interrupted = exc, True
    finally:
        if close is not None:
            try:
                close()
            except Exception:  # closing a broken socket must not mask the reply
                pass
    result = acc.done(started, interrupted)
    if cut is not None:
        raise ReplyCutOff(str(cut), partial=result) from None
    return result
