"""The backend interface every LLM caller uses (the chat, the shadow journal, mining, eval).

A :class:`Backend` streams a chat completion and reports its stats. Wire-format differences
between servers — how a tool result is sent back, whether ``tool_choice`` exists, how
structured (JSON) output is asked for — live behind this interface, so no caller ever tests
a backend's name.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from events.errors import DiaristError

OPENAI_KEY_ENV = "DIARIST_OPENAI_API_KEY"


# --- errors -------------------------------------------------------------------------------

class BackendError(DiaristError):
    """The LLM server answered with an error (status and the server's message)."""

    hint = "Check the LLM server's log for details."


class BackendUnavailable(BackendError):
    hint = "Start the LLM server or fix its URL."


class ModelNotFound(BackendError):
    hint = "Pull or load the model on the server, or choose another with --model."


class ContextLengthExceeded(BackendError):
    hint = ("The prompt is longer than the model's context window; shorten the history or "
            "memory budget.")


class ReplyCutOff(BackendError):
    """The reply stopped before its end: the connection broke, the server sent an error or
    a malformed chunk mid-stream, or closed the stream early. ``partial`` is what arrived
    before (``interrupted=True``), so a caller can keep it."""

    hint = ("What arrived before it stopped was kept, marked interrupted; check the LLM "
            "server's log and send the message again.")

    def __init__(self, message: str, hint: str = "", partial: ChatReply | None = None) -> None:
        super().__init__(message, hint)
        self.partial = partial or ChatReply("", ChatStats(None, None, 0, None), True)


# --- what a call returns --------------------------------------------------------------------

@dataclass(frozen=True)
class ChatStats:
    prompt_tokens: int | None
    reply_tokens: int | None
    elapsed_ms: int
    tokens_per_sec: float | None


@dataclass(frozen=True)
class ChatReply:
    text: str
    stats: ChatStats
    interrupted: bool = False
    tool_calls: list[dict] = field(default_factory=list)


class Backend(Protocol):
    """What the chat, the shadow journal, mining and eval need of a model server."""

    name: str
    model: str
    #: the server understands structured tool calls (``tools`` in :meth:`chat`)
    native_tools: bool

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None,
             json_schema: dict[str, Any] | None = None) -> ChatReply:
        """One completion. ``tool_choice="none"`` asks for an answer, not a tool call (a
        server without the option gets no tools instead). ``json_schema`` asks for output
        that matches the schema where the server can constrain it; callers still parse the
        text tolerantly."""
        ...

    def tool_result_message(self, name: str, call_id: str | None, result: str) -> dict:
        """The message that carries a structured tool call's result back to the model."""
        ...

    def warm(self, messages: list[dict]) -> None:
        """Have the server read ``messages`` now and keep them cached (llama.cpp's prompt
        cache, Ollama's loaded context), so that a later request that starts with the same
        messages only reads what follows them. Best effort: errors are the caller's to
        ignore."""
        ...

    def models(self) -> list[str]: ...

    def context_window(self, model: str | None = None) -> int | None: ...


@dataclass
class Defaults:
    """What a ``chat`` call that passes ``None`` for ``max_tokens`` / ``temperature`` gets
    (the config's ``llm`` section); ``None`` leaves it to the server."""

    max_tokens: int | None = None
    temperature: float | None = None

    def apply(self, max_tokens: int | None,
              temperature: float | None) -> tuple[int | None, float | None]:
        return (self.max_tokens if max_tokens is None else max_tokens,
                self.temperature if temperature is None else temperature)
