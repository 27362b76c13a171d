"""``diarist mcp``: the memory tools behind the official MCP SDK's low-level server, on stdio.

One process serves one client connection, which is one session of events
(:class:`workers.mcp.bridge.McpSession`). The SDK's handlers are async and the tools are
not: each call runs on a worker thread (:func:`anyio.to_thread.run_sync`, one at a time),
so the event loop keeps reading stdin and answering (a ``ping``, a ``tools/list``) while a
search runs. Both protocol eras are served: the 2025 ``initialize`` handshake and the
2026-07-28 per-request envelope (the SDK's runner picks the era from the first request).

stdout belongs to the protocol: while serving, the SDK points file descriptor 1 at stderr
(a stray ``print`` cannot corrupt the stream) and diarist logs to stderr only.

The connection ends when the client closes stdin (the spec's way), or on SIGTERM or Ctrl-C:
either way the call under way finishes and ``SessionEnded`` is recorded. stdin is read on a
daemon thread of its own (:class:`_StdinLines`), so a read blocked on a silent client never
holds up that shutdown.

This module imports the SDK (about a second): only ``diarist mcp`` imports it.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.stdio import stdio_server

from events import EventLog, Home
from events.logger import get_logger
from projections import open_store

from ..queue_port import QueuePort
from .bridge import McpSession, ToolSpec, tool_specs

SERVER_NAME = "diarist"
INSTRUCTIONS = ("The user's own memory, kept by diarist on this machine. Call memory_search "
                "before answering about the user's past work, preferences or decisions; "
                "memory_get reads one day's journal; remember saves a short note the user "
                "wants kept.")

logger = get_logger("diarist.mcp")


def _version() -> str:
    try:
        return package_version("diarist")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return ""


def mcp_tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name, description=spec.description, input_schema=spec.input_schema,
        annotations=types.ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=False,
                                          idempotent_hint=spec.read_only,
                                          open_world_hint=False))


def _named_client(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The client's name as this request gives it: ``clientInfo`` of ``initialize``, or the
    envelope of a 2026-era request (None when the request does not name the client)."""
    if ctx.method == "initialize":
        info = (ctx.params or {}).get("clientInfo")
        return str(info.get("name") or "") if isinstance(info, dict) else ""
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


class _Introduction:
    """Middleware: the session starts when the client introduces itself — after a
    successful ``initialize``, or before the first 2026-era request that names it. (A client
    that never names itself starts the session with its first tool call.)"""

    def __init__(self, session: McpSession, limiter: anyio.CapacityLimiter) -> None:
        self.session, self.limiter = session, limiter

    async def __call__(self, ctx: ServerRequestContext[Any, Any],
                       call_next: CallNext) -> HandlerResult:
        if self.session.started or ctx.request_id is None or ctx.method == "ping":
            return await call_next(ctx)
        if ctx.method == "initialize":
            result = await call_next(ctx)  # a refused handshake starts nothing
            await self._start(_named_client(ctx))
            return result
        await self._start(_named_client(ctx))
        return await call_next(ctx)

    async def _start(self, name: str | None) -> None:
        if name is not None:
            await anyio.to_thread.run_sync(self.session.start, name, limiter=self.limiter)


def build_server(session: McpSession, limiter: anyio.CapacityLimiter) -> Server[Any]:
    """The low-level server: ``tools/list`` from the chat's specs, ``tools/call`` through the
    session (on a worker thread, ``limiter`` allowing one at a time)."""
    tools = [mcp_tool(spec) for spec in tool_specs()]

    async def list_tools(_ctx: ServerRequestContext[Any, Any],
                         _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        outcome = await anyio.to_thread.run_sync(session.call, params.name, params.arguments,
                                                 limiter=limiter)
        return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.text)],
                                    is_error=outcome.is_error)

    server: Server[Any] = Server(SERVER_NAME, version=_version(), instructions=INSTRUCTIONS,
                                 on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(_Introduction(session, limiter))
    return server


class _StdinLines:
    """stdin's lines for the SDK's stdio transport, read on a daemon thread straight from
    the file descriptor. (The SDK's own reader blocks in a worker thread that cancellation
    waits for and the interpreter joins at exit, so a client that neither writes nor closes
    stdin would keep the server alive through Ctrl-C; and a daemon thread blocked inside
    ``sys.stdin.buffer`` holds its lock, which aborts the interpreter's shutdown.) Bytes are
    decoded as UTF-8, a broken sequence replaced, as the SDK does."""

    CHUNK = 1 << 16

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.send, self.receive = anyio.create_memory_object_stream[str](0)
        self.token = anyio.lowlevel.current_token()
        threading.Thread(target=self._read, name="diarist-mcp-stdin", daemon=True).start()

    def _read(self) -> None:
        parts: list[bytes] = []  # of a line not ended yet
        try:
            while chunk := os.read(self.fd, self.CHUNK):
                if b"\n" not in chunk:
                    parts.append(chunk)
                    continue
                *lines, rest = b"".join([*parts, chunk]).split(b"\n")
                parts = [rest] if rest else []
                for line in lines:
                    self._feed(line + b"\n")
            if b"".join(parts).strip():
                self._feed(b"".join(parts))
            anyio.from_thread.run_sync(self.send.close, token=self.token)  # end of stdin
        except Exception:  # the loop stopped listening or is gone (shutdown), or stdin broke
            return

    def _feed(self, line: bytes) -> None:
        anyio.from_thread.run(self.send.send, line.decode("utf-8", errors="replace"),
                              token=self.token)

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        try:
            return await self.receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    """SIGTERM (how a client stops a server that did not leave when stdin closed) or Ctrl-C:
    stop serving; the caller records the session's end."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            logger.info("mcp.signal", signal=signal.Signals(signum).name)
            scope.cancel()
            return


async def _serve(session: McpSession) -> None:
    limiter = anyio.CapacityLimiter(1)
    server = build_server(session, limiter)
    stdin = cast("anyio.AsyncFile[str]", _StdinLines(sys.stdin.fileno()))
    async with anyio.create_task_group() as group:
        group.start_soon(_stop_on_signal, group.cancel_scope)
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        group.cancel_scope.cancel()


def serve_stdio(home: Home, *, queue: QueuePort,
                on_start: Callable[[str], None] = lambda _line: None) -> McpSession:
    """Serve one MCP client on stdin/stdout until it closes the connection (or Ctrl-C);
    returns the session. ``on_start`` gets a line for stderr (never stdout); ``queue`` tells
    a running worker what the session appended."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session = McpSession(home, log, store, queue=queue)
        on_start(f"diarist mcp: memory tools on stdio for {home.root} (session {session.id})")
        try:
            anyio.run(_serve, session)
        finally:
            session.end()
    return session
