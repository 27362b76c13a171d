"""Ollama: ``POST /api/chat`` (NDJSON stream), ``/api/show`` for the context window,
``/api/tags`` for the models. Host from the argument, else ``$OLLAMA_HOST``, else
``http://127.0.0.1:11434``."""
from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .base import BackendError, ChatReply, ModelNotFound
from .http import HTTPBackend, malformed, stream_error, usable_url
from .stream import Delta, count

OLLAMA_ENV = "OLLAMA_HOST"
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
KEEP_ALIVE = "30m"  # the model (and its cached context) stays loaded between turns


def parse_ndjson(lines: Iterable[bytes]) -> Iterator[Delta]:
    """One JSON object per line; the ``done`` one carries the counts. A line that is not a
    JSON object is an error, and so is a stream that ends before ``done``."""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        try:
            chunk = json.loads(line)
        except (ValueError, RecursionError):
            raise malformed("a line that is not JSON", line) from None
        if not isinstance(chunk, dict):
            raise malformed("a stream chunk that is not a JSON object", line)
        if chunk.get("error"):
            raise stream_error(chunk)
        yield ollama_delta(chunk)
        if chunk.get("done"):
            return
    raise BackendError("the server closed the stream before the reply was complete")


def ollama_delta(chunk: dict) -> Delta:
    """One chunk (or a whole non-streamed reply) as a delta; wrong field types are an error
    naming the chunk, never a crash."""
    try:
        return _ollama_delta(chunk)
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        raise malformed("a malformed chunk", chunk) from None


def _ollama_delta(chunk: dict) -> Delta:
    msg = chunk.get("message") or {}
    content = msg.get("content") or ""
    calls = list(msg.get("tool_calls") or [])
    if not isinstance(content, str) or not all(isinstance(c, dict) for c in calls):
        raise TypeError("message")
    d = Delta(text=content, tool_calls=calls, finished=bool(chunk.get("done")))
    if chunk.get("done"):
        d.prompt_tokens = count(chunk.get("prompt_eval_count"))
        d.reply_tokens = count(chunk.get("eval_count"))
        ns = count(chunk.get("eval_duration"))
        if d.reply_tokens is not None and ns:
            d.tokens_per_sec = d.reply_tokens / (ns / 1e9)
    return d


def ollama_url(value: str | None) -> str:
    """A normalised base URL: ``host[:port]`` accepted, ``0.0.0.0`` means localhost."""
    url = (value or OLLAMA_DEFAULT).strip()
    if "://" not in url:
        url = "http://" + url
    url = url.rstrip("/")
    parts = urllib.parse.urlsplit(usable_url(url))
    host = parts.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    port = parts.port or (11434 if parts.scheme == "http" else 443)
    return f"{parts.scheme}://{host}:{port}{parts.path}"


class OllamaBackend(HTTPBackend):
    name = "ollama"

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 timeout: float = 120.0) -> None:
        super().__init__(ollama_url(base_url), model, timeout)
        self.unavailable_hint = (f"Is `ollama serve` running? (looked at {self.base_url}; "
                                 f"set ${OLLAMA_ENV} for another host)")

    def open(self, method: str, url: str, body: dict | None = None,
             timeout: float | None = None) -> Any:
        try:
            return super().open(method, url, body, timeout)
        except ModelNotFound as e:
            model = (body or {}).get("model", "MODEL")
            raise ModelNotFound(str(e), hint=f"Run `ollama pull {model}`.") from None

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None,
             json_schema: dict[str, Any] | None = None) -> ChatReply:
        max_tokens, temperature = self.defaults.apply(max_tokens, temperature)
        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        if temperature is not None:
            options["temperature"] = temperature
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": stream,
                                "keep_alive": KEEP_ALIVE}
        if options:
            body["options"] = options
        if tools and tool_choice != "none":  # ollama has no tool_choice: "none" = no tools
            body["tools"] = tools
        if json_schema is not None:
            body["format"] = json_schema  # structured outputs: a JSON schema constrains it
        return self.stream(f"{self.base_url}/api/chat", body, parse_ndjson, on_token)

    def tool_result_message(self, name: str, call_id: str | None, result: str) -> dict:
        return {"role": "tool", "content": result, "tool_name": name}

    def warm(self, messages: list[dict]) -> None:
        """Load the model and read ``messages`` into its context (one token generated)."""
        self.chat(messages, stream=False, max_tokens=1, temperature=0)

    def whole(self, data: dict) -> Delta:
        return ollama_delta(data)

    def models(self) -> list[str]:
        listed = self.get_object("GET", f"{self.base_url}/api/tags").get("models") or []
        if not isinstance(listed, list):
            raise malformed("a model list that is not a list", listed)
        return [str(m.get("name") or m.get("model")) for m in listed
                if isinstance(m, dict) and (m.get("name") or m.get("model"))]

    def context_window(self, model: str | None = None) -> int | None:
        name = model or self.model
        if name not in self._ctx:
            info = self.get_object("POST", f"{self.base_url}/api/show", {"model": name})
            ctx = None
            model_info = info.get("model_info")
            for key, value in (model_info if isinstance(model_info, dict) else {}).items():
                if key.endswith(".context_length") and isinstance(value, int):
                    ctx = value
            parameters = info.get("parameters")
            m = re.search(r"^\s*num_ctx\s+(\d+)",
                          parameters if isinstance(parameters, str) else "", re.M)
            if m:
                ctx = int(m.group(1))
            self._ctx[name] = ctx
        return self._ctx[name]
