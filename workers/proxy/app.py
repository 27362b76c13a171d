"""The proxy's HTTP side: a Starlette app, the upstream reached with httpx2.

- ``POST /v1/chat/completions``: a request whose last message is the person's goes through
  :class:`.memory.ProxyMemory` (session, memory, the turn in the log); its body is otherwise
  sent upstream as the client wrote it. Streamed or not, the upstream's bytes reach the
  client unchanged, while the reply's text is read off them for the log — but for a reply
  that only repeats the message (while a start block is in the prompt) or an earlier reply,
  or recites the memory: the model is asked again with less, as the chat asks
  (:mod:`workers.chat.echo`), and the client gets that reply (a stream's first chunks are
  held until the reply parts from them).
  Any other request (a tool result sent back, an empty message) is passed through without
  memory.
- ``GET /v1/models`` and anything else: passed through.
- An upstream error status passes through with its body (an OpenAI-style error when the
  body is not JSON); an upstream that cannot be reached is a 502 in OpenAI's error shape. A
  stream that breaks keeps the partial reply (``interrupted``) and ends with an error chunk,
  which the ``openai`` library raises as an error; a client that hangs up mid-stream keeps
  the partial reply too.

The log and the projections are used from one thread (``diarist-proxy-memory``): SQLite
work never blocks the event loop, and requests' memory work runs one at a time.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from events.logger import get_logger

from ..chat.echo import EchoGuard
from ..chat.tools import call_shaped
from ..llm import ChatReply, ChatStats
from ..llm.openai import openai_delta
from .conversations import message_text
from .memory import Asking, Exchange, ProxyMemory, ReplyStats

T = TypeVar("T")
TIMEOUT = httpx2.Timeout(600.0, connect=10.0)  # a Pi-class model may think for minutes
HOP_HEADERS = frozenset({"host", "content-length", "connection", "transfer-encoding",
                         "keep-alive", "accept-encoding"})
logger = get_logger("diarist.proxy")


def error_response(status: int, message: str, kind: str) -> JSONResponse:
    """An error in OpenAI's shape."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}},
                        status_code=status)


class Proxy:
    def __init__(self, memory: ProxyMemory, upstream: str,
                 on_ready: Callable[[], None] | None = None) -> None:
        self.memory, self.on_ready = memory, on_ready
        self.upstream = upstream.rstrip("/")  # ends in /v1
        self.client: httpx2.AsyncClient | None = None
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="diarist-proxy-memory")

    async def on_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn`` on the memory thread; it finishes even when the request is cancelled."""
        future = self.thread.submit(fn, *args, **kwargs)
        with anyio.CancelScope(shield=True):
            result = await asyncio.wrap_future(future)
        return result

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        await self.on_thread(self.memory.open)
        # TCP_NODELAY: a request's headers and body are two small writes; the second must not
        # wait for the upstream's (delayed) ACK of the first
        transport = httpx2.AsyncHTTPTransport(
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self.client = httpx2.AsyncClient(timeout=TIMEOUT, transport=transport)
        if self.on_ready is not None:
            self.on_ready()
        try:
            yield
        finally:
            await self.client.aclose()
            await self.on_thread(self.memory.close)
            self.thread.shutdown(wait=True)

    # --- upstream ---------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        """The upstream URL for a client path: ``/v1/models`` → ``{upstream}/models``; a path
        outside ``/v1`` (llama.cpp's ``/props``, ``/health``) from the upstream's root."""
        if path == "/v1" or path.startswith("/v1/"):
            return f"{self.upstream}{path[len('/v1'):]}"
        return f"{self.upstream.removesuffix('/v1')}{path}"

    def _headers(self, request: Request) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        if "authorization" not in {k.lower() for k in headers} and self.memory.api_key:
            headers["Authorization"] = f"Bearer {self.memory.api_key}"
        return headers

    def _unreachable(self, exc: Exception) -> JSONResponse:
        return error_response(502, f"the upstream server at {self.upstream} cannot be reached "
                                   f"({type(exc).__name__}: {exc}); start it, or check "
                                   "`diarist proxy --upstream`", "upstream_unavailable")

    def _client(self) -> httpx2.AsyncClient:
        if self.client is None:
            raise RuntimeError("the proxy's lifespan has not started")
        return self.client

    # --- routes -----------------------------------------------------------------------------

    async def passthrough(self, request: Request) -> Response:
        """Any request, sent upstream as it is; the answer comes back as it is."""
        try:
            reply = await self._client().request(
                request.method, self._url(request.url.path), params=request.query_params,
                headers=self._headers(request), content=await request.body())
        except httpx2.TransportError as exc:
            return self._unreachable(exc)
        return _as_is(reply)

    async def chat_completions(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            return error_response(400, "the request body is not JSON", "invalid_request_error")
        problem = _request_problem(body)
        if problem:
            return error_response(400, problem, "invalid_request_error")
        last = body["messages"][-1]
        if last.get("role") != "user" or not message_text(last.get("content")).strip():
            return await self.passthrough(request)
        model = body.get("model") if isinstance(body.get("model"), str) else ""
        begun = time.monotonic()
        exchange = await self.on_thread(self.memory.begin, body["messages"], model)
        body = {**body, "messages": exchange.messages}
        started = time.monotonic()
        if body.get("stream"):
            return await self._stream(request, body, exchange, started)
        try:
            reply = await self._client().post(self._url("/v1/chat/completions"), json=body,
                                              headers=self._headers(request))
        except httpx2.TransportError as exc:
            return self._unreachable(exc)
        text, stats = _read_reply(reply, started)
        asking: Asking | None = exchange.first
        # a reply that only copies what its prompt holds is asked again with less, as the
        # chat asks (workers/chat/echo.py); the copy is kept if that fails
        while asking is not None and \
                (asking := _next_asking(exchange, asking, text)) is not None:
            try:
                again = await self._client().post(
                    self._url("/v1/chat/completions"),
                    json={**body, "messages": asking.messages}, headers=self._headers(request))
            except httpx2.TransportError:
                break
            if again.status_code != 200 or not _read_reply(again, started)[0]:
                break
            reply = again
            text, stats = _read_reply(again, started)
        answered = time.monotonic()
        await self.on_thread(self.memory.finish, exchange, text, stats)
        response = _as_is(reply)
        # what the proxy itself took beside the upstream's time (docs/benchmarks.md, "The
        # proxy's cost")
        memory_ms = (started - begun + time.monotonic() - answered) * 1000
        response.headers["Server-Timing"] = (f"memory;dur={memory_ms:.1f}, "
                                             f"upstream;dur={(answered - started) * 1000:.1f}")
        response.background = BackgroundTask(self.on_thread, self.memory.catch_up)
        return response

    async def send_stream(self, request: Request, body: dict) -> _Upstream:
        client = self._client()
        reply = await client.send(client.build_request(
            "POST", self._url("/v1/chat/completions"), json=body,
            headers=self._headers(request)), stream=True)
        return _Upstream(reply)

    async def _stream(self, request: Request, body: dict, exchange: Exchange,
                      started: float) -> Response:
        try:
            upstream = await self.send_stream(request, body)
        except httpx2.TransportError as exc:
            return self._unreachable(exc)
        headers = upstream.reply.headers
        if upstream.reply.status_code != 200:
            await upstream.reply.aread()
            await upstream.reply.aclose()
            return _as_is(upstream.reply)
        # the bytes relayed are decoded (aiter_bytes): an upstream that compressed its
        # stream must not have the client decode it again
        return StreamingResponse(
            _Relay(self, request, body, exchange, started, upstream).chunks(), status_code=200,
            headers={k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS
                     and k.lower() != "content-encoding"},
            media_type=headers.get("content-type", "text/event-stream"))


class _Relay:
    """A streamed reply relayed to the client as it comes, read for the log on its way. Its
    first chunks are held while the reply so far may still only copy the message (with a
    start block in the prompt), an earlier reply or the memory in the prompt
    (:class:`workers.chat.echo.EchoGuard`); a reply that is such a copy to its end is
    dropped and the model asked again, as the chat asks (:func:`_next_asking`; the copy is
    relayed if that fails)."""

    def __init__(self, proxy: Proxy, request: Request, body: dict, exchange: Exchange,
                 started: float, upstream: _Upstream) -> None:
        self.proxy, self.request, self.body, self.exchange = proxy, request, body, exchange
        self.started, self.upstream = started, upstream
        self.recorded = False
        self.held: list[bytes] = []  # read, not yet relayed

    async def record(self, *, interrupted: bool) -> None:
        if not self.recorded:
            self.recorded = True
            reader = self.upstream.reader
            await self.proxy.on_thread(
                self.proxy.memory.finish, self.exchange, reader.text,
                ReplyStats(reader.prompt_tokens, reader.reply_tokens, _ms(self.started)),
                interrupted=interrupted)

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            if self.exchange.guarded:
                await self._hold()
            reader = self.upstream.reader
            if reader.done:  # the reply is in the log before the client has it all
                await self.record(interrupted=False)
            while self.held:
                yield self.held.pop(0)
            async for chunk in self.upstream.chunks:
                reader.feed(chunk)
                if reader.done:
                    await self.record(interrupted=False)
                yield chunk
            if not reader.done:
                await self.record(interrupted=not reader.finished)
            if not (reader.done or reader.finished):
                yield _error_chunk("the upstream closed the stream before the reply was "
                                   "complete")
        except httpx2.TransportError as exc:
            await self.record(interrupted=True)
            while self.held:  # what came is shown, as the chat shows it
                yield self.held.pop(0)
            yield _error_chunk(f"the upstream stream broke: {type(exc).__name__}: {exc}")
        finally:  # the client hung up, or the upstream broke: keep what came
            await self.upstream.reply.aclose()
            await self.record(interrupted=True)
            await self.proxy.on_thread(self.proxy.memory.catch_up)

    async def _hold(self) -> None:
        """Read into :attr:`held` while the reply may still be a copy; after a copy,
        :attr:`upstream` is the next asking (:func:`_next_asking`), held the same way."""
        asking: Asking | None = self.exchange.first
        while asking is not None:
            guard = _copy_guard(asking)
            reader = self.upstream.reader
            async for chunk in self.upstream.chunks:
                before = len(reader.text)
                reader.feed(chunk)
                self.held.append(chunk)
                guard.token(reader.text[before:])
                if guard.streaming or reader.done:
                    break
            asking = None if guard.streaming or not reader.finished else \
                _next_asking(self.exchange, asking, reader.text)
            if asking is None:
                return
            try:
                again = await self.proxy.send_stream(self.request,
                                                     {**self.body, "messages": asking.messages})
            except httpx2.TransportError:
                return
            if again.reply.status_code != 200:
                await again.reply.aclose()
                return
            await self.upstream.reply.aclose()
            self.upstream, self.held = again, []


class _Upstream:
    """A streamed reply on its way: the response, its chunks (one iterator, so reading can
    pause and go on) and what has been read off them."""

    def __init__(self, reply: httpx2.Response) -> None:
        self.reply = reply
        self.chunks = reply.aiter_bytes()
        self.reader = _StreamReader()


class _StreamReader:
    """The reply's text and counts, read off the SSE bytes on their way to the client."""

    def __init__(self) -> None:
        self.buffer = b""
        self.text = ""
        self.prompt_tokens: int | None = None
        self.reply_tokens: int | None = None
        self.finished = False  # a chunk with a finish_reason
        self.done = False      # ``data: [DONE]``

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                self.done = True
                continue
            try:
                delta = openai_delta(json.loads(data))
            except Exception:  # a keep-alive or a chunk we cannot read: relayed all the same
                continue
            self.text += delta.text
            self.prompt_tokens = delta.prompt_tokens or self.prompt_tokens
            self.reply_tokens = delta.reply_tokens or self.reply_tokens
            self.finished = self.finished or delta.finished


def _copy_guard(asking: Asking) -> EchoGuard:
    """The chat's guard for a reply to ``asking``: copies of what its messages hold."""
    return EchoGuard(asking.echo, None, asking.earlier, asking.memory)


def _next_asking(exchange: Exchange, asking: Asking, reply: str) -> Asking | None:
    """What to ask with when ``reply``, to ``asking``, only copies what its prompt holds, as
    the chat asks again (:meth:`workers.chat.session.ChatSession._first_reply`): the first
    asking's copy without what brought it (:attr:`Exchange.less`), a copy again
    with the message alone; None when the reply is no copy."""
    guard = _copy_guard(asking)
    # a tool call printed as text is no copy (a second search opens as the first did)
    guard.end(ChatReply(reply, ChatStats(None, None, 0, None)), call=call_shaped(reply))
    if guard.copy is None:
        return None
    if asking is exchange.first:
        logger.info("proxy.asked_again", session=exchange.session.id, copy=guard.copy)
        return exchange.less[guard.copy]
    logger.info("proxy.asked_alone", session=exchange.session.id, copy=guard.copy)
    return Asking(exchange.alone)


def _read_reply(reply: httpx2.Response, started: float) -> tuple[str, ReplyStats]:
    """A non-streamed reply's text and counts ("" when it is not a completion: the client
    gets it as it is)."""
    if reply.status_code != 200:
        return "", ReplyStats()
    try:
        delta = openai_delta(reply.json())
    except Exception as exc:
        logger.info("proxy.unreadable_reply", error=str(exc))
        return "", ReplyStats()
    return delta.text, ReplyStats(delta.prompt_tokens, delta.reply_tokens, _ms(started))


def _request_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list"
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        return "each message must be an object with a 'role'"
    return None


def _error_chunk(message: str) -> bytes:
    payload = {"error": {"message": message, "type": "upstream_error", "code": 502}}
    return f"data: {json.dumps(payload)}\n\n".encode()


def _as_is(reply: httpx2.Response) -> Response:
    """The upstream's answer for the client: its status and body; a non-JSON error body
    becomes an OpenAI-style error."""
    content_type = reply.headers.get("content-type", "application/json")
    if reply.status_code >= 400 and "json" not in content_type:
        return error_response(reply.status_code,
                              f"upstream: {reply.text.strip()[:500] or reply.reason_phrase}",
                              "upstream_error")
    return Response(reply.content, status_code=reply.status_code, media_type=content_type)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def build_app(memory: ProxyMemory, upstream: str,
              on_ready: Callable[[], None] | None = None) -> Starlette:
    proxy = Proxy(memory, upstream, on_ready)
    methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]
    return Starlette(routes=[
        Route("/v1/chat/completions", proxy.chat_completions, methods=["POST"]),
        Route("/{path:path}", proxy.passthrough, methods=methods),
    ], lifespan=proxy.lifespan)
