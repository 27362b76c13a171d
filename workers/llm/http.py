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
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from events.errors import DiaristError

from .base import (
    OPENAI_KEY_ENV,
    BackendError,
    BackendUnavailable,
    ChatReply,
    ContextLengthExceeded,
    Defaults,
    ModelNotFound,
)
from .stream import Delta, consume

Parser = Callable[[Iterable[bytes]], Iterator[Delta]]


def server_message(body: str) -> str:
    """The error message inside a server's (JSON or text) error body, at most 500 chars."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:500]
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        err = err.get("message") or json.dumps(err)
    return str(err).strip()[:500]


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
            err = type(err)(text, hint)
        return err

    def open(self, method: str, url: str, body: dict | None = None) -> Any:
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
            raise self.mask(classify(e.code, text, url, (body or {}).get("model", ""))) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (TimeoutError, socket.timeout)):
                what = f"no answer from {self.base_url} within {self.timeout:g} s"
            else:
                what = f"cannot reach the {self.name} server at {self.base_url} ({reason})"
            raise self.mask(BackendUnavailable(what, hint=self.unavailable_hint)) from None

    def get_json(self, method: str, url: str, body: dict | None = None) -> Any:
        resp = self.open(method, url, body)
        try:
            return json.loads(resp.read())
        except ValueError:
            raise BackendError(f"{url} did not answer with JSON") from None
        finally:
            resp.close()

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
                deltas: Iterable[Delta] = parse(resp)
            else:
                deltas = [self.whole(json.loads(resp.read()))]
            return consume(deltas, on_token, started, resp.close)
        except DiaristError as e:
            raise self.mask(e) from None
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise self.mask(BackendError(
                f"the connection to {self.base_url} broke mid-reply ({e})")) from None
        finally:
            resp.close()
