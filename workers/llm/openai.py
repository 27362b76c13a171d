"""Any OpenAI-compatible ``/v1/chat/completions`` server (llama.cpp's server, LM Studio,
vLLM): an SSE stream. Base URL from the argument, else ``$DIARIST_OPENAI_BASE_URL``, else
``http://127.0.0.1:8080/v1``; API key from the argument, else ``$DIARIST_OPENAI_API_KEY``."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from events.errors import DiaristError

from .base import BackendError, BackendUnavailable, ChatReply
from .http import HTTPBackend, malformed, stream_error, usable_url
from .stream import Delta, count

OPENAI_URL_ENV = "DIARIST_OPENAI_BASE_URL"
OPENAI_DEFAULT = "http://127.0.0.1:8080/v1"


def parse_sse(lines: Iterable[bytes]) -> Iterator[Delta]:
    """``data: {...}`` lines until ``data: [DONE]``. A line that is not JSON is skipped (a
    keep-alive); a chunk that is JSON but not a chunk (a list, a string, wrong field types)
    is an error, and so is a stream that ends before ``[DONE]`` or a ``finish_reason``
    (the server stopped mid-reply), or has no chunk at all (not an OpenAI stream)."""
    finished = False
    seen = 0
    first = b""
    for raw in lines:
        first = first or raw.strip()
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue  # blank separators, ": keep-alive" comments, "event:" lines
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            continue
        if not isinstance(chunk, dict):
            raise malformed("a stream chunk that is not a JSON object", data)
        if chunk.get("error"):
            raise stream_error(chunk)
        seen += 1
        delta = openai_delta(chunk)
        finished = finished or delta.finished
        yield delta
    if not seen:
        raise malformed("no OpenAI stream chunk (is this an OpenAI-compatible server?); it "
                        "began with", first or b"nothing")
    if not finished:
        raise BackendError("the server closed the stream before the reply was complete")


def openai_delta(chunk: dict) -> Delta:
    """One chunk (or a whole non-streamed completion) as a delta; a chunk whose fields have
    the wrong types is an error naming it, never a crash."""
    try:
        return _openai_delta(chunk)
    except (AttributeError, TypeError, ValueError):
        raise malformed("a malformed chunk", chunk) from None


def _openai_delta(chunk: dict) -> Delta:
    d = Delta()
    for choice in chunk.get("choices") or []:
        piece = choice.get("delta") or choice.get("message") or {}
        content = piece.get("content") or ""
        if not isinstance(content, str):
            raise TypeError("content")
        d.text += content
        tcs = list(piece.get("tool_calls") or [])
        if not all(isinstance(tc, dict) and isinstance(tc.get("function") or {}, dict)
                   for tc in tcs):
            raise TypeError("tool_calls")
        if "message" in choice:  # non-streamed: complete calls
            d.tool_calls.extend(tcs)
        else:
            d.tool_deltas.extend(tcs)
        d.finished = d.finished or bool(choice.get("finish_reason")) or "message" in choice
    usage = chunk.get("usage") or {}
    d.prompt_tokens = count(usage.get("prompt_tokens"))
    d.reply_tokens = count(usage.get("completion_tokens"))
    timings = chunk.get("timings") or {}  # llama.cpp server extension
    if timings.get("predicted_per_second"):
        d.tokens_per_sec = float(timings["predicted_per_second"])
    return d


def openai_url(value: str | None) -> str:
    """A normalised base URL ending in ``/v1``."""
    url = (value or OPENAI_DEFAULT).strip()
    if "://" not in url:
        url = "http://" + url
    url = url.rstrip("/")
    return usable_url(url if url.endswith("/v1") else url + "/v1")


class OpenAIBackend(HTTPBackend):
    name = "openai"

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, timeout: float = 120.0) -> None:
        super().__init__(openai_url(base_url), model, timeout, api_key)
        self._llama_cpp = False  # set when /props answers like llama.cpp's server
        # extra fields for every request's body, e.g. llama.cpp's {"cache_prompt": true}
        # (mining keeps its fixed prompt prefix in the server's cache)
        self.extra_body: dict[str, Any] = {}
        self.unavailable_hint = (f"Start the OpenAI-compatible server at {self.base_url} "
                                 f"or set ${OPENAI_URL_ENV}.")

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None,
             json_schema: dict[str, Any] | None = None) -> ChatReply:
        max_tokens, temperature = self.defaults.apply(max_tokens, temperature)
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        if json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "answer", "schema": json_schema}}
        if self._llama_cpp:
            body["cache_prompt"] = True  # reuse the cached prompt prefix of the slot
        body.update(self.extra_body)
        return self.stream(f"{self.base_url}/chat/completions", body, parse_sse, on_token)

    def warm(self, messages: list[dict]) -> None:
        """Read ``messages`` into the server's prompt cache (one token generated)."""
        self.context_window()  # learns whether this is llama.cpp's server (cache_prompt)
        self.chat(messages, stream=False, max_tokens=1, temperature=0)

    def whole(self, data: dict) -> Delta:
        return openai_delta(data)

    def _list(self) -> list[dict]:
        listed = self.get_object("GET", f"{self.base_url}/models").get("data") or []
        if not isinstance(listed, list):
            raise malformed("a model list that is not a list", listed)
        return [m for m in listed if isinstance(m, dict)]

    def models(self) -> list[str]:
        return [str(m["id"]) for m in self._list() if m.get("id")]

    def context_window(self, model: str | None = None) -> int | None:
        name = model or self._model
        if name not in self._ctx:
            self._ctx[name] = self._props_window() or self._listed_window(name)
        return self._ctx[name]

    def _props_window(self) -> int | None:
        """llama.cpp's server: the context actually allocated (``/props``)."""
        root = self.base_url[: -len("/v1")]
        try:
            props = self.get_json("GET", f"{root}/props")
        except BackendUnavailable:
            raise
        except DiaristError:
            return None
        if not isinstance(props, dict):
            return None
        self._llama_cpp = "default_generation_settings" in props
        settings = props.get("default_generation_settings")
        n = (settings.get("n_ctx") if isinstance(settings, dict) else None) or props.get("n_ctx")
        return count(n)

    def _listed_window(self, name: str) -> int | None:
        """``/v1/models``: llama.cpp's ``meta``, vLLM's ``max_model_len`` and the like."""
        try:
            listed = self._list()
        except BackendUnavailable:
            raise
        except DiaristError:
            return None
        for m in listed:
            if not name or m.get("id") == name:
                found = m.get("meta")
                meta: dict = found if isinstance(found, dict) else {}
                n = (meta.get("n_ctx") or meta.get("n_ctx_train")
                     or m.get("max_model_len") or m.get("context_length"))
                return count(n)
        return None
