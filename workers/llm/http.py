"""What the two HTTP backends share: requests, error classification, the API key's masking.

Network and server failures become :class:`~workers.llm.base.BackendError` subclasses with a
hint — never a raw ``URLError``. The API key only ever goes into the ``Authorization``
header: it is not in ``repr()``, and is masked in every error message (a server may echo it
back). Standard library only.
"""
from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from events.errors import DiaristError
from events.problems import clip

from .base import (
    OPENAI_KEY_ENV,
    BackendError,
    BackendUnavailable,
    ChatReply,
    ContextLengthExceeded,
    Defaults,
    ModelNotFound,
    ReplyCutOff,
)
from .stream import Delta, consume

Parser = Callable[[Iterable[bytes]], Iterator[Delta]]


PROBE_TIMEOUT_S = 10.0  # at most, for the small metadata requests (models, context window)
ERROR_BODY_BYTES = 1 << 16  # of an HTTP error's body: enough for any server's message


def usable_url(url: str) -> str:
    """``url`` when it is an http(s) URL with a host and (if any) a numeric port, else a
    clear error (urllib would fail later, and less clearly)."""
    problem = None
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        problem = str(exc)
    else:
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problem = "it needs http:// or https:// and a host"
    if problem:
        raise BackendError(f"{url} is not a usable URL ({problem})",
                           hint="Fix --base-url (or llm.base_url): http://HOST:PORT.")
    return url


def server_message(body: str) -> str:
    """The error message inside a server's (JSON or text) error body, clipped to a few
    hundred characters (a server may send a whole HTML page or a stack trace)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return clip(body)
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        err = err.get("message") or json.dumps(err)
    return clip(str(err))


def classify(status: int, body: str, url: str, model: str) -> BackendError:
    """The error an HTTP status and body mean."""
    msg = server_message(body)
    low = body.lower()
    if "context" in low and ("exceed" in low or "length" in low):
        return ContextLengthExceeded(
            f"the prompt does not fit the context window of {model or 'the model'}: {msg}")
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


def malformed(what: str, raw: object) -> BackendError:
    """A reply that is not in the wire format: ``what`` it was, and (clipped) what came."""
    shown = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else (
        raw if isinstance(raw, str) else json.dumps(raw))
    return BackendError(f"the server sent {what}: {clip(shown, 120)}",
                        hint="Is the base URL a model server of this kind (ollama or an "
                             "OpenAI-compatible one)? Check --backend and --base-url.")


def stream_error(chunk: dict) -> BackendError:
    """An error object sent inside an already-started (HTTP 200) stream."""
    body = json.dumps(chunk)
    err = classify(500, body, "", chunk.get("model", ""))
    if isinstance(err, ContextLengthExceeded):
        return err
    return BackendError(f"the server stopped the reply with an error: {server_message(body)}")


class HTTPBackend:
    """A model server over HTTP; subclasses give the wire format (:meth:`chat`, :meth:`models`,
    :meth:`context_window`, :meth:`whole`)."""

    name = ""
    native_tools = True
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
                raise ModelNotFound(
                    f"no model is available on {self.base_url} and none was chosen",
                    hint=ModelNotFound.hint)
            self._model = found[0]
        return self._model

    @model.setter
    def model(self, value: str) -> None:
        self._model = value

    def models(self) -> list[str]:
        raise NotImplementedError

    def whole(self, data: dict) -> Delta:
        """A non-streamed response body as one delta."""
        raise NotImplementedError

    def tool_result_message(self, name: str, call_id: str | None, result: str) -> dict:
        return {"role": "tool", "content": result, "tool_call_id": call_id or ""}

    def mask(self, err: DiaristError) -> DiaristError:
        if self.__key:
            text = str(err).replace(self.__key, "***")
            hint = err.hint.replace(self.__key, "***")
            masked = type(err)(text, hint)
            if isinstance(err, ReplyCutOff) and isinstance(masked, ReplyCutOff):
                masked.partial = err.partial
            err = masked
        return err

    def open(self, method: str, url: str, body: dict | None = None,
             timeout: float | None = None) -> Any:
        """Open a request; HTTP and connection errors become DiaristErrors (key masked)."""
        headers = {"Accept": "application/json, text/event-stream, application/x-ndjson"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        wait = timeout or self.timeout
        try:
            return urllib.request.urlopen(req, timeout=wait)
        except urllib.error.HTTPError as e:
            try:
                text = e.read(ERROR_BODY_BYTES).decode("utf-8", "replace")
            except (OSError, http.client.HTTPException):
                text = ""  # the status says enough
            finally:
                e.close()
            raise self.mask(classify(e.code, text, url, (body or {}).get("model", ""))) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise self.mask(self.unreachable(e, url, wait)) from None

    def unreachable(self, exc: BaseException, url: str, wait: float) -> BackendError:
        """The error for a request that failed below HTTP: refused, unresolvable, timed out."""
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return BackendUnavailable(
                f"no answer from {url} within {wait:g} s",
                hint="The server is busy, hung or still loading; wait, restart it, or give "
                     "it longer with llm.timeout in var/diarist.yaml.")
        return BackendUnavailable(f"cannot reach the {self.name} server at {self.base_url} "
                                  f"({reason})", hint=self.unavailable_hint)

    def get_json(self, method: str, url: str, body: dict | None = None) -> Any:
        """A small metadata request (models, context window): at most ``PROBE_TIMEOUT_S``."""
        wait = min(self.timeout, PROBE_TIMEOUT_S)
        resp = self.open(method, url, body, timeout=wait)
        try:
            return json.loads(resp.read())
        except (ValueError, RecursionError):
            raise BackendError(f"{url} did not answer with JSON",
                               hint="Check that --base-url points at the model server.") from None
        except (OSError, http.client.HTTPException) as e:
            raise self.mask(self.unreachable(e, url, wait)) from None
        finally:
            resp.close()

    def get_object(self, method: str, url: str, body: dict | None = None) -> dict[str, Any]:
        """:meth:`get_json` whose answer must be a JSON object."""
        data = self.get_json(method, url, body)
        if not isinstance(data, dict):
            raise malformed(f"an answer to {url} that is not a JSON object", data) from None
        return data

    def stream(self, url: str, body: dict, parse: Parser,
               on_token: Callable[[str], None] | None) -> ChatReply:
        """POST ``body`` and drive the reply (streamed or whole) through the one loop."""
        started = time.monotonic()
        try:
            resp = self.open("POST", url, body)
        except KeyboardInterrupt:  # Ctrl-C while the server was still reading the prompt
            return consume([], None, started, interrupted=True)
        try:
            if body.get("stream"):
                deltas: Iterable[Delta] = self._reading(parse(resp))
            else:
                deltas = self._reading(self._whole(resp))
            return consume(deltas, on_token, started, resp.close)
        except DiaristError as e:
            raise self.mask(e) from None
        finally:
            resp.close()

    def _whole(self, resp: Any) -> Iterator[Delta]:
        raw = resp.read()
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise malformed("a reply that is not JSON", raw) from None
        yield self.whole(data)

    def _reading(self, deltas: Iterable[Delta]) -> Iterator[Delta]:
        """The deltas, with a failure to read the socket turned into a BackendError (which
        :func:`consume` turns into a cut-off reply that keeps what arrived)."""
        try:
            yield from deltas
        except (OSError, http.client.HTTPException) as e:
            if isinstance(e, (TimeoutError, socket.timeout)):
                raise BackendError(f"no more of the reply from {self.base_url} within "
                                   f"{self.timeout:g} s") from None
            raise BackendError(f"the connection to {self.base_url} broke mid-reply "
                               f"({e or type(e).__name__})") from None
