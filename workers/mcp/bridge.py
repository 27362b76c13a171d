"""One MCP connection as a session of events, and the tools it offers (no MCP SDK here).

The tools are the chat's: their names, descriptions and JSON schemas come from
:data:`workers.chat.tools.TOOL_SPECS` and every call runs through
:func:`workers.chat.tools.run_tool`, so a client gets exactly what the chat's model gets
(bad arguments included: an ``error: ...`` text, never an exception).

A connection is a session on a stream of its own, ``mcp/<ulid>``, as a chat is:

- ``SessionStarted(backend="mcp", model=<the client's name>)`` when the client introduces
  itself (the ``initialize`` handshake, or the first 2026-era request whose envelope names
  the client), else at its first tool call;
- a ``ToolCalled(name, arguments, result)`` for every call, a failed one too; a note saved
  by ``remember`` is a ``Remembered`` on the memory stream, as from the chat;
- ``SessionEnded(turns=0)`` when the connection closes.

The session has no turns: mining never waits for it and does not count it, and its stats
row has no memory budget, so the budget advice leaves it out.

The server runs each call on a worker thread (the tools are synchronous; stdio stays
responsive): one lock keeps one call at a time on the log and the projections, in order.
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from typing import Any

from events import DiaristError, Event, EventLog, Home
from events.health import explain
from events.ids import new_ulid
from events.logger import get_logger
from events.text import repaired
from events.types import SessionEnded, SessionStarted, ToolCalled
from projections import ProjectionStore

from ..chat.tools import TOOL_SPECS, run_tool
from ..presence import worker_present
from ..queue_port import QueuePort
from ..sync.catch_up import catch_up_after_append

BACKEND = "mcp"             # SessionStarted.backend of an MCP connection
MAX_CLIENT_NAME = 100       # characters of the client's name kept as SessionStarted.model
# Tools that only read memory (an MCP client may call these without asking the user first).
READ_ONLY_TOOLS = frozenset({"memory_search", "memory_get"})

logger = get_logger("diarist.mcp")


@dataclass(frozen=True)
class ToolSpec:
    """One tool as an MCP client sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


def tool_specs() -> list[ToolSpec]:
    """The chat's tools (:data:`TOOL_SPECS`), in its order."""
    return [ToolSpec(fn["name"], fn["description"], copy.deepcopy(fn["parameters"]),
                     fn["name"] in READ_ONLY_TOOLS)
            for fn in (spec["function"] for spec in TOOL_SPECS)]


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    is_error: bool


def client_name(name: Any) -> str:
    """What a client calls itself, as kept in ``SessionStarted.model`` ("" if unnamed)."""
    if not isinstance(name, str):
        return ""
    return " ".join(repaired(name).split())[:MAX_CLIENT_NAME]


class McpSession:
    """The events of one MCP connection (see the module doc). Thread-safe."""

    def __init__(self, home: Home, log: EventLog, store: ProjectionStore, *,
                 queue: QueuePort) -> None:
        self.home, self.log, self.store, self.queue = home, log, store, queue
        self.id = f"mcp/{new_ulid()}"
        self.client = ""
        self.started = False
        self.ended = False
        self.calls = 0
        self._lock = threading.Lock()

    def _append(self, data: Event) -> str:
        return self.log.append(data, stream=self.id).id

    def start(self, client: Any = "") -> bool:
        """``SessionStarted`` with the client's name, once; False when already started."""
        with self._lock:
            return self._start(client)

    def _start(self, client: Any) -> bool:
        if self.started:
            return False
        self.client = client_name(client)
        self._append(SessionStarted(session=self.id, backend=BACKEND, model=self.client))
        self.started = True
        logger.info("mcp.session_started", session=self.id, client=self.client)
        return True

    def call(self, name: str, arguments: Any) -> ToolOutcome:
        """Run one tool call and record it as ``ToolCalled``. Never raises an ordinary
        exception: a failure (a full disk, a damaged database) is the call's error text."""
        with self._lock:
            try:
                self._start("")
                text = self._run(name, arguments)
                args = arguments if isinstance(arguments, dict) else \
                    {} if arguments is None else {"_raw": str(arguments)}
                self._append(ToolCalled(session=self.id, name=name, arguments=args,
                                        result=text))
                self.calls += 1
            except Exception as exc:  # the call (or its record) could not be written
                return ToolOutcome(self._failure(name, exc), True)
            if name == "remember" and text == "remembered":
                self._hand_over()
        return ToolOutcome(text, text.startswith("error:"))

    def _run(self, name: str, arguments: Any) -> str:
        try:
            return run_tool(name, arguments, home=self.home, log=self.log, store=self.store,
                            session_id=self.id)
        except Exception as exc:  # recorded like any other result
            return self._failure(name, exc)

    def _failure(self, name: str, exc: Exception) -> str:
        logger.warning("mcp.tool_failed", session=self.id, tool=name,
                       error=f"{type(exc).__name__}: {exc}")
        error = exc if isinstance(exc, DiaristError) else explain(exc, self.home)
        if error is None:
            return f"error: {name} failed ({type(exc).__name__}: {exc})"
        hint = f" ({error.hint})" if error.hint else ""
        return f"error: {name}: {error}{hint}"

    def _hand_over(self) -> None:
        """A running worker catches up the rest (embeddings): as the chat does after a reply.
        With none, the note is already projected (lexical recall finds it); the next
        ``diarist sync`` embeds it."""
        try:
            if worker_present(self.home):
                self.queue.appended(self.home)
        except Exception as exc:  # only memory's freshness is at stake
            logger.info("mcp.hand_over_failed", error=str(exc))

    def end(self) -> None:
        """``SessionEnded``, once, if the session started; then catch the projections up."""
        with self._lock:
            if not self.started or self.ended:
                return
            self._append(SessionEnded(session=self.id, turns=0))
            self.ended = True
            logger.info("mcp.session_ended", session=self.id, calls=self.calls)
            try:
                warning = catch_up_after_append(self.store)
            except Exception as exc:  # the events are in the log: the next sync projects them
                warning = str(exc)
            if warning:
                logger.info("mcp.catch_up_failed", warning=warning)
            self._hand_over()
