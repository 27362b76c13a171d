"""LLM backends behind one small interface, shared by the chat (``cli``) and the workers.

``make_backend(name, ...)`` returns a :class:`Backend`:

- ``ollama``: ``POST /api/chat`` (NDJSON stream), ``/api/show`` for the context window,
  ``/api/tags`` for the models. Host from the ``base_url`` argument, else ``$OLLAMA_HOST``,
  else ``http://127.0.0.1:11434``.
- ``openai``: any OpenAI-compatible ``/v1/chat/completions`` server (llama.cpp server,
  LM Studio, vLLM), SSE stream. Base URL from the argument, else ``$DIARIST_OPENAI_BASE_URL``,
  else ``http://127.0.0.1:8080/v1``; API key from the argument, else
  ``$DIARIST_OPENAI_API_KEY``. The key only ever goes into the ``Authorization`` header: it is
  not in ``repr()``, and is masked in every error message (a server may echo it back).
- ``scripted``: deterministic replies from a JSON-lines rule file (or an echo rule) for tests
  and demos. It renders its reply as OpenAI SSE lines in process and feeds them through the
  same parser and the same streaming loop as the ``openai`` backend.

Streaming calls ``on_token`` per text piece. A ``KeyboardInterrupt`` while streaming (Ctrl-C
during a read, or raised by ``on_token``) closes the connection and returns the partial text
with ``interrupted=True``. Network and server failures raise :class:`DiaristError` subclasses
with a ``hint`` — never a raw traceback-worthy ``URLError``. Standard library only.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from events.config import LLMConfig
from events.errors import DiaristError
from projections.tokens import estimate

OLLAMA_ENV = "OLLAMA_HOST"
OPENAI_URL_ENV = "DIARIST_OPENAI_BASE_URL"
OPENAI_KEY_ENV = "DIARIST_OPENAI_API_KEY"
OLLAMA_DEFAULT = "http://127.0.0.1:11434"
OPENAI_DEFAULT = "http://127.0.0.1:8080/v1"
BACKENDS = ("ollama", "openai", "scripted")


# --- errors -------------------------------------------------------------------------------

class BackendError(DiaristError):
    """The LLM server answered with an error (status and the server's message)."""

    hint = "Check the LLM server's log for details."


class BackendUnavailable(BackendError):
    hint = "Start the LLM server or fix its URL."


class ModelNotFound(BackendError):
    hint = "Pull or load the model on the server, or choose another with --model."


class ContextLengthExceeded(BackendError):
    hint = "The prompt is longer than the model's context window; shorten the history or memory budget."


# --- the interface ------------------------------------------------------------------------

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
    name: str
    model: str

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None) -> ChatReply: ...

    def models(self) -> list[str]: ...

    def context_window(self, model: str | None = None) -> int | None: ...


@dataclass
class Defaults:
    """What a ``chat`` call that passes ``None`` for ``max_tokens`` / ``temperature`` gets
    (the config's ``llm`` section); ``None`` leaves it to the server."""

    max_tokens: int | None = None
    temperature: float | None = None

    def apply(self, max_tokens: int | None, temperature: float | None) -> tuple[int | None, float | None]:
        return (self.max_tokens if max_tokens is None else max_tokens,
                self.temperature if temperature is None else temperature)


# --- the shared streaming loop ------------------------------------------------------------

@dataclass
class _Delta:
    """One parsed chunk of any wire format."""

    text: str = ""
    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    tokens_per_sec: float | None = None
    tool_calls: list[dict] = field(default_factory=list)   # complete calls (ollama)
    tool_deltas: list[dict] = field(default_factory=list)  # OpenAI partial calls, by index


def _consume(deltas: Iterable[_Delta], on_token: Callable[[str], None] | None,
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
            for tc in d.tool_deltas:
                slot = partial.setdefault(int(tc.get("index", 0)), {
                    "id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - closing a broken socket must not mask the reply
                pass
    end = time.monotonic()
    if tps is None and reply and first_token is not None and end > first_token:
        tps = reply / (end - first_token)
    calls.extend(partial[i] for i in sorted(partial))
    return ChatReply("".join(parts), ChatStats(prompt, reply, int((end - started) * 1000), tps),
                     interrupted=interrupted, tool_calls=calls)


def _parse_sse(lines: Iterable[bytes]) -> Iterator[_Delta]:
    """OpenAI ``/v1/chat/completions`` SSE: ``data: {...}`` lines until ``data: [DONE]``."""
    for raw in lines:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue  # blank separators, ": keep-alive" comments, "event:" lines
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        if chunk.get("error"):
            raise _stream_error(chunk)
        yield _openai_delta(chunk)


def _openai_delta(chunk: dict) -> _Delta:
    d = _Delta()
    for choice in chunk.get("choices") or []:
        piece = choice.get("delta") or choice.get("message") or {}
        d.text += piece.get("content") or ""
        tcs = piece.get("tool_calls") or []
        if "message" in choice:  # non-streamed: complete calls
            d.tool_calls.extend(tcs)
        else:
            d.tool_deltas.extend(tcs)
    usage = chunk.get("usage") or {}
    d.prompt_tokens = usage.get("prompt_tokens")
    d.reply_tokens = usage.get("completion_tokens")
    timings = chunk.get("timings") or {}  # llama.cpp server extension
    if timings.get("predicted_per_second"):
        d.tokens_per_sec = float(timings["predicted_per_second"])
    return d


def _parse_ndjson(lines: Iterable[bytes]) -> Iterator[_Delta]:
    """Ollama ``/api/chat``: one JSON object per line; the ``done`` one carries the counts."""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        chunk = json.loads(line)
        if chunk.get("error"):
            raise _stream_error(chunk)
        yield _ollama_delta(chunk)
        if chunk.get("done"):
            return


def _ollama_delta(chunk: dict) -> _Delta:
    msg = chunk.get("message") or {}
    d = _Delta(text=msg.get("content") or "", tool_calls=list(msg.get("tool_calls") or []))
    if chunk.get("done"):
        d.prompt_tokens = chunk.get("prompt_eval_count")
        d.reply_tokens = chunk.get("eval_count")
        ns = chunk.get("eval_duration")
        if d.reply_tokens is not None and ns:
            d.tokens_per_sec = d.reply_tokens / (ns / 1e9)
    return d


# --- HTTP ---------------------------------------------------------------------------------

def _server_message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:500]
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        err = err.get("message") or json.dumps(err)
    return str(err).strip()[:500]


def _classify(status: int, body: str, url: str, model: str) -> BackendError:
    msg = _server_message(body)
    low = body.lower()
    if "context" in low and ("exceed" in low or "length" in low):
        return ContextLengthExceeded(f"the prompt does not fit the context window of {model or 'the model'}: {msg}")
    if status == 404 and "model" in low:
        return ModelNotFound(f"model {model!r} not found: {msg}")
    if status == 404:
        return BackendError(f"HTTP 404 from {url}: {msg}",
                            hint="The server has no such endpoint; check the base URL.")
    if status == 503 and "loading" in low:  # llama.cpp while it loads the weights
        return BackendUnavailable(f"the server at {url} is still loading the model",
                                  hint="Wait a few seconds and try again.")
    if status in (401, 403):
        return BackendError(f"HTTP {status} from {url}: {msg}",
                            hint=f"Check the API key (${OPENAI_KEY_ENV}).")
    return BackendError(f"HTTP {status} from {url}: {msg}")


def _stream_error(chunk: dict) -> BackendError:
    """An error object sent inside an already-started (HTTP 200) stream."""
    body = json.dumps(chunk)
    err = _classify(500, body, "", chunk.get("model", ""))
    if isinstance(err, ContextLengthExceeded):
        return err
    return BackendError(f"the server stopped the reply with an error: {_server_message(body)}")


class _HTTPBackend:
    name = ""
    unavailable_hint = ""

    def __init__(self, base_url: str, model: str | None, timeout: float,
                 api_key: str | None = None) -> None:
        self.base_url = base_url
        self._model = model or ""
        self.timeout = timeout
        self.defaults = Defaults()
        self.__key = api_key or None
        self._ctx: dict[str, int | None] = {}

    def __repr__(self) -> str:
        key = ", api_key=***" if self.__key else ""
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self._model!r}{key})"

    @property
    def model(self) -> str:
        if not self._model:
            found = self.models()
            if not found:
                raise ModelNotFound(f"no model is available on {self.base_url} and none was chosen",
                                    hint=ModelNotFound.hint)
            self._model = found[0]
        return self._model

    @model.setter
    def model(self, value: str) -> None:
        self._model = value

    def _mask(self, err: DiaristError) -> DiaristError:
        if self.__key:
            text = str(err).replace(self.__key, "***")
            hint = err.hint.replace(self.__key, "***")
            err = type(err)(text, hint)
        return err

    def _open(self, method: str, url: str, body: dict | None = None) -> Any:
        """Open a request; HTTP and connection errors become DiaristErrors (key masked)."""
        headers = {"Accept": "application/json, text/event-stream, application/x-ndjson"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            try:
                text = e.read().decode("utf-8", "replace")
            finally:
                e.close()
            raise self._mask(_classify(e.code, text, url, (body or {}).get("model", ""))) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (TimeoutError, socket.timeout)):
                what = f"no answer from {self.base_url} within {self.timeout:g} s"
            else:
                what = f"cannot reach the {self.name} server at {self.base_url} ({reason})"
            raise self._mask(BackendUnavailable(what, hint=self.unavailable_hint)) from None

    def _get_json(self, method: str, url: str, body: dict | None = None) -> Any:
        resp = self._open(method, url, body)
        try:
            return json.loads(resp.read())
        except ValueError:
            raise BackendError(f"{url} did not answer with JSON") from None
        finally:
            resp.close()

    def _stream(self, url: str, body: dict, parse: Callable[[Iterable[bytes]], Iterator[_Delta]],
                on_token: Callable[[str], None] | None) -> ChatReply:
        started = time.monotonic()
        try:
            resp = self._open("POST", url, body)
        except KeyboardInterrupt:  # Ctrl-C while the server was still reading the prompt
            return _consume([], None, started, interrupted=True)
        try:
            if body.get("stream"):
                deltas: Iterable[_Delta] = parse(resp)
            else:
                deltas = [self._whole(json.loads(resp.read()))]
            return _consume(deltas, on_token, started, resp.close)
        except DiaristError as e:
            raise self._mask(e) from None
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise self._mask(BackendError(
                f"the connection to {self.base_url} broke mid-reply ({e})")) from None
        finally:
            resp.close()

    def _whole(self, data: dict) -> _Delta:
        raise NotImplementedError


# --- ollama -------------------------------------------------------------------------------

def _ollama_url(value: str | None) -> str:
    url = (value or os.environ.get(OLLAMA_ENV) or OLLAMA_DEFAULT).strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    port = parts.port or (11434 if parts.scheme == "http" else 443)
    return f"{parts.scheme}://{host}:{port}{parts.path}"


class OllamaBackend(_HTTPBackend):
    name = "ollama"

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 timeout: float = 120.0) -> None:
        super().__init__(_ollama_url(base_url), model, timeout)
        self.unavailable_hint = (f"Is `ollama serve` running? (looked at {self.base_url}; "
                                 f"set ${OLLAMA_ENV} for another host)")

    def _open(self, method: str, url: str, body: dict | None = None) -> Any:
        try:
            return super()._open(method, url, body)
        except ModelNotFound as e:
            model = (body or {}).get("model", "MODEL")
            raise ModelNotFound(str(e), hint=f"Run `ollama pull {model}`.") from None

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None) -> ChatReply:
        max_tokens, temperature = self.defaults.apply(max_tokens, temperature)
        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        if temperature is not None:
            options["temperature"] = temperature
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": stream}
        if options:
            body["options"] = options
        if tools and tool_choice != "none":  # ollama has no tool_choice: "none" = no tools
            body["tools"] = tools
        return self._stream(f"{self.base_url}/api/chat", body, _parse_ndjson, on_token)

    def _whole(self, data: dict) -> _Delta:
        return _ollama_delta(data)

    def models(self) -> list[str]:
        data = self._get_json("GET", f"{self.base_url}/api/tags")
        return [m.get("name") or m.get("model") for m in data.get("models") or []]

    def context_window(self, model: str | None = None) -> int | None:
        name = model or self.model
        if name not in self._ctx:
            info = self._get_json("POST", f"{self.base_url}/api/show", {"model": name})
            ctx = None
            for key, value in (info.get("model_info") or {}).items():
                if key.endswith(".context_length") and isinstance(value, int):
                    ctx = value
            m = re.search(r"^\s*num_ctx\s+(\d+)", info.get("parameters") or "", re.M)
            if m:
                ctx = int(m.group(1))
            self._ctx[name] = ctx
        return self._ctx[name]


# --- openai-compatible --------------------------------------------------------------------

def _openai_url(value: str | None) -> str:
    url = (value or os.environ.get(OPENAI_URL_ENV) or OPENAI_DEFAULT).strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url if url.endswith("/v1") else url + "/v1"


class OpenAIBackend(_HTTPBackend):
    name = "openai"

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, timeout: float = 120.0) -> None:
        super().__init__(_openai_url(base_url), model, timeout,
                         api_key or os.environ.get(OPENAI_KEY_ENV) or None)
        self.unavailable_hint = (f"Start the OpenAI-compatible server at {self.base_url} "
                                 f"or set ${OPENAI_URL_ENV}.")

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None) -> ChatReply:
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
        return self._stream(f"{self.base_url}/chat/completions", body, _parse_sse, on_token)

    def _whole(self, data: dict) -> _Delta:
        return _openai_delta(data)

    def _list(self) -> list[dict]:
        return list(self._get_json("GET", f"{self.base_url}/models").get("data") or [])

    def models(self) -> list[str]:
        return [m["id"] for m in self._list() if m.get("id")]

    def context_window(self, model: str | None = None) -> int | None:
        name = model or self._model
        if name in self._ctx:
            return self._ctx[name]
        ctx = None
        root = self.base_url[: -len("/v1")]
        try:  # llama.cpp server: the context actually allocated
            props = self._get_json("GET", f"{root}/props")
            n = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get("n_ctx")
            ctx = int(n) if n else None
        except BackendUnavailable:
            raise
        except DiaristError:
            pass
        if ctx is None:
            try:
                for m in self._list():
                    if not name or m.get("id") == name:
                        meta = m.get("meta") or {}
                        n = (meta.get("n_ctx") or meta.get("n_ctx_train")
                             or m.get("max_model_len") or m.get("context_length"))  # vLLM / others
                        ctx = int(n) if n else None
                        break
            except BackendUnavailable:
                raise
            except DiaristError:
                pass
        self._ctx[name] = ctx
        return ctx


# --- scripted -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None
    reply: str


def _load_rules(script: Path) -> list[_Rule]:
    rules: list[_Rule] = []
    try:
        lines = Path(script).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise DiaristError(f"cannot read the script {script}: {e.strerror}",
                           hint="Pass an existing JSON-lines script file.") from None
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict) or not isinstance(item.get("reply"), str):
                raise ValueError('needs a string "reply"')
            pattern = re.compile(item["match"]) if item.get("match") is not None else None
        except (ValueError, re.error) as e:
            raise DiaristError(f"{script}:{n}: bad rule ({e})",
                               hint='Each line is {"match": "regex", "reply": "text"} '
                                    'or a default {"reply": "text"}.') from None
        rules.append(_Rule(pattern, item["reply"]))
    return rules


def _sse_lines(text: str, prompt_tokens: int, reply_tokens: int, model: str, *,
               whole: bool = False) -> Iterator[bytes]:
    """Render a reply as the OpenAI SSE wire format, one chunk per word (or one in all)."""
    pieces = [text] if whole else re.findall(r"\s*\S+\s*|\s+", text)
    for piece in pieces:
        chunk = {"object": "chat.completion.chunk", "model": model,
                 "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": reply_tokens,
             "total_tokens": prompt_tokens + reply_tokens}
    yield f"data: {json.dumps({'model': model, 'choices': [], 'usage': usage})}\n\n".encode()
    yield b"data: [DONE]\n\n"


class ScriptedBackend:
    """Deterministic replies: the first rule whose regex matches the last user message wins;
    a rule without ``match`` is the default; with no script, it echoes."""

    name = "scripted"

    def __init__(self, script: Path | None = None, model: str | None = None,
                 context_window: int | None = 4096) -> None:
        self.script = Path(script) if script else None
        self.model = model or "scripted"
        self._window = context_window
        self.rules = _load_rules(self.script) if self.script else []
        self.defaults = Defaults()

    def __repr__(self) -> str:
        return f"ScriptedBackend(script={str(self.script) if self.script else None!r})"

    def reply_for(self, messages: list[dict]) -> str:
        last = next((str(m.get("content") or "") for m in reversed(messages)
                     if m.get("role") == "user"), "")
        for rule in self.rules:
            if rule.pattern is None or rule.pattern.search(last):
                return rule.reply
        return f"echo: {last}"

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None) -> ChatReply:
        max_tokens, temperature = self.defaults.apply(max_tokens, temperature)
        del tools, tool_choice  # scripted replies come from the rules; tool specs are ignored
        started = time.monotonic()
        text = self.reply_for(messages)
        if max_tokens is not None:
            text = " ".join(text.split(" ")[:max(max_tokens, 0)])
        prompt = sum(estimate(str(m.get("content") or "")) for m in messages)
        # stream=False: the whole reply in one chunk, like a non-streamed completion
        lines = _sse_lines(text, prompt, estimate(text), self.model, whole=not stream)
        return _consume(_parse_sse(lines), on_token, started)

    def models(self) -> list[str]:
        return [self.model]

    def context_window(self, model: str | None = None) -> int | None:
        return self._window


# --- factory ------------------------------------------------------------------------------

def make_backend(name: str | None = None, *, model: str | None = None,
                 base_url: str | None = None, api_key: str | None = None,
                 script: Path | None = None, timeout: float = 120.0,
                 max_tokens: int | None = None, temperature: float | None = None,
                 llm: LLMConfig | None = None) -> Backend:
    """A backend. Each setting comes from the argument, else (server URL and API key) the
    environment, else the config's ``llm`` section, else the default; ``max_tokens`` /
    ``temperature`` become its :class:`Defaults` for chat replies."""
    llm = llm or LLMConfig()
    name = name or llm.backend or "ollama"
    model = model or llm.model
    max_tokens = max_tokens if max_tokens is not None else llm.max_reply_tokens
    temperature = temperature if temperature is not None else llm.temperature
    backend: OllamaBackend | OpenAIBackend | ScriptedBackend
    if name == "ollama":
        backend = OllamaBackend(base_url or os.environ.get(OLLAMA_ENV) or llm.base_url, model,
                                timeout)
    elif name == "openai":
        backend = OpenAIBackend(base_url or os.environ.get(OPENAI_URL_ENV) or llm.base_url, model,
                                api_key or os.environ.get(OPENAI_KEY_ENV) or llm.api_key, timeout)
    elif name == "scripted":
        backend = ScriptedBackend(script, model)
    else:
        raise DiaristError(f"unknown LLM backend {name!r}",
                           hint=f"Choose one of: {', '.join(BACKENDS)}.")
    backend.defaults = Defaults(max_tokens, temperature)
    return backend
