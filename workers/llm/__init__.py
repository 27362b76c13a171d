"""LLM backends behind one small interface, shared by the chat, the shadow journal, mining
and eval.

- ``ollama`` (:mod:`.ollama`): ``/api/chat``, NDJSON.
- ``openai`` (:mod:`.openai`): any OpenAI-compatible ``/v1/chat/completions`` server, SSE.
- ``scripted`` (:mod:`.scripted`): deterministic rules, rendered as OpenAI SSE and parsed by
  the same code, for tests and demos.

:func:`make_backend` builds one from the command line, the environment and the config's
``llm`` section, in that order of precedence.
"""
from __future__ import annotations

from pathlib import Path

from events.config import LLMConfig, setting
from events.errors import DiaristError

from .base import (
    OPENAI_KEY_ENV,
    Backend,
    BackendError,
    BackendUnavailable,
    ChatReply,
    ChatStats,
    ContextLengthExceeded,
    Defaults,
    ModelNotFound,
    ReplyCutOff,
)
from .http import HTTPBackend
from .ollama import OLLAMA_ENV, OllamaBackend
from .openai import OPENAI_URL_ENV, OpenAIBackend
from .scripted import ScriptedBackend

BACKENDS = ("ollama", "openai", "scripted")
DEFAULT_TIMEOUT_S = 120.0  # seconds a server may stay silent (before the first token, too)


def make_backend(name: str | None = None, *, model: str | None = None,
                 base_url: str | None = None, api_key: str | None = None,
                 script: Path | None = None, timeout: float | None = None,
                 max_tokens: int | None = None, temperature: float | None = None,
                 llm: LLMConfig | None = None) -> Backend:
    """A backend. Each setting comes from the argument, else (server URL and API key) the
    environment, else the config's ``llm`` section, else the default; ``max_tokens`` /
    ``temperature`` become its :class:`Defaults` for chat replies."""
    llm = llm or LLMConfig()
    name = setting(name, None, llm.backend, "ollama")
    timeout = setting(timeout, None, llm.timeout, DEFAULT_TIMEOUT_S) or DEFAULT_TIMEOUT_S
    model = setting(model, None, llm.model)
    backend: OllamaBackend | OpenAIBackend | ScriptedBackend
    if name == "ollama":
        backend = OllamaBackend(setting(base_url, OLLAMA_ENV, llm.base_url), model, timeout)
    elif name == "openai":
        backend = OpenAIBackend(setting(base_url, OPENAI_URL_ENV, llm.base_url), model,
                                setting(api_key, OPENAI_KEY_ENV, llm.api_key), timeout)
    elif name == "scripted":
        backend = ScriptedBackend(script, model)
    else:
        raise DiaristError(f"unknown LLM backend {name!r}",
                           hint=f"Choose one of: {', '.join(BACKENDS)}.")
    backend.defaults = Defaults(setting(max_tokens, None, llm.max_reply_tokens),
                                setting(temperature, None, llm.temperature))
    return backend


__all__ = ["BACKENDS", "Backend", "BackendError", "BackendUnavailable", "ChatReply",
           "ChatStats", "ContextLengthExceeded", "HTTPBackend", "ModelNotFound", "ReplyCutOff",
           "OllamaBackend", "OpenAIBackend", "ScriptedBackend", "make_backend"]
