"""The proxy's side of the log and of memory: sessions, turns and what goes into the prompt.

Everything here is synchronous and runs on the proxy's one memory thread (:mod:`.app`), so
the log and the projections are used by one thread at a time. Per request:
:meth:`ProxyMemory.begin` finds or starts the session (``SessionStarted`` and, for a new
one, the start block as ``MemoryInjected``), attaches a note to the new message when recall
has something new for it (``MemoryInjected``, kind ``turn``), appends the ``UserTurn`` —
before the upstream is asked, so a failed request still keeps what the person said — and
returns the messages to send upstream. :meth:`ProxyMemory.finish` appends the reply (a
partial one, ``interrupted``, when the upstream failed mid-stream or the client hung up)
before the client has all of it; :meth:`ProxyMemory.catch_up` then brings the projections up
to date, so the next request — in any conversation — can recall it, and reads the next new
conversation's start block ahead.

The prompt is built as the chat builds it (:mod:`workers.chat.memory`): the start block ends
the system message and stays the same for the whole session, and each note stays on its
message in every later request, so an upstream with a prompt cache (llama.cpp) keeps reusing
the prefix — until the notes leave a new message's note too little of the budget: then the
oldest give way (:func:`workers.chat.memory.giving_way`).
"""
from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from events import EventLog, Home, clock
from events.config import Config, load_config, setting
from events.ids import new_ulid
from events.logger import get_logger
from events.types import AssistantTurn, MemoryInjected, SessionStarted, UserTurn
from projections import ProjectionStore, open_store
from projections.inject import Injection, budget_for
from projections.tokens import estimate

from ..chat.memory import SessionMemory, giving_way, note_room, with_note
from ..chat.session import DEFAULT_CONTEXT, system_prompt
from ..llm import OpenAIBackend
from ..llm.base import OPENAI_KEY_ENV
from ..sync.catch_up import catch_up_after_append
from .conversations import SESSION_PREFIX, Conversations, dialogue, message_text

BACKEND = "proxy"
logger = get_logger("diarist.proxy")


@dataclass
class ProxySession:
    id: str
    memory: SessionMemory
    window: int
    start: Injection | None = None
    notes: dict[int, Injection] = field(default_factory=dict)  # by the user message's number
    # the day a system prompt of the chat's tells (UTC, as the memory's dates)
    today: dt.date = field(default_factory=lambda: clock.now().date())


@dataclass(frozen=True)
class _ReadAhead:
    head: int        # the log's head when it was built: stale once the log moves
    window: int
    session: ProxySession


@dataclass(frozen=True)
class Asking:
    """Messages to send upstream, and what in them a reply may only copy
    (:class:`workers.chat.echo.EchoGuard`)."""

    messages: list[dict]
    echo: str = ""                 # the message, when a reply that echoes it is asked again
    earlier: tuple[str, ...] = ()  # the earlier replies in them
    memory: str = ""               # the memory in them: start block and notes


@dataclass(frozen=True)
class Exchange:
    """One request on its way: the session, what the person said and what goes upstream —
    first, after a copy (by what it copied, :attr:`workers.chat.echo.EchoGuard.copy`:
    without the start block, the earlier exchanges, or memory), and a last time after a copy
    again (``alone``: the client's system message and the new message, no memory)."""

    session: ProxySession
    earlier: list[tuple[str, str]]
    text: str
    model: str
    first: Asking
    user_turn: str  # the UserTurn's event id
    less: dict[str, Asking] = field(default_factory=dict)
    alone: list[dict] = field(default_factory=list)

    @property
    def messages(self) -> list[dict]:
        return self.first.messages

    @property
    def guarded(self) -> bool:
        """Whether its prompt holds anything a reply may only copy."""
        return bool(self.less)


@dataclass(frozen=True)
class ReplyStats:
    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    elapsed_ms: int | None = None


class ProxyMemory:
    def __init__(self, home: Home, upstream: str, api_key: str | None = None) -> None:
        self.home, self.upstream = home, upstream
        self.config: Config = load_config(home)
        # the key the upstream wants when the client sends none: the chat's setting
        self.api_key = setting(api_key, OPENAI_KEY_ENV, self.config.llm.api_key)
        self.log: EventLog | None = None
        self.store: ProjectionStore | None = None
        self.conversations = Conversations()
        self.sessions: dict[str, ProxySession] = {}
        self._windows: dict[str, int] = {}
        self._model: str | None = None         # of the last request: what to read ahead for
        self._ahead: _ReadAhead | None = None  # the next new conversation's session

    # --- lifetime ---------------------------------------------------------------------------

    def open(self) -> None:
        """Open the log and the projections, catch them up, and know earlier conversations."""
        self.log = EventLog(self.home.events_db)
        self.store = open_store(self.home, self.log)
        catch_up_after_append(self.store)
        self.conversations.recover(self.store.db)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.log is not None:
            self.log.close()
        self.store = self.log = None

    def _opened(self) -> tuple[EventLog, ProjectionStore]:
        if self.log is None or self.store is None:
            raise RuntimeError("ProxyMemory.open() was not called")
        return self.log, self.store

    # --- a request --------------------------------------------------------------------------

    def window(self, model: str) -> int:
        """The upstream's context window for ``model`` (asked once), else the chat's default."""
        if model not in self._windows:
            backend = OpenAIBackend(self.upstream, model or None, self.api_key, timeout=10)
            try:
                self._windows[model] = backend.context_window(model or None) or DEFAULT_CONTEXT
            except Exception as exc:  # an upstream that cannot tell: the default, as the chat
                logger.info("proxy.window_unknown", error=str(exc))
                self._windows[model] = DEFAULT_CONTEXT
        return self._windows[model]

    def begin(self, messages: list[dict], model: str) -> Exchange:
        """Record the new user message (the last of ``messages``) in its session and build
        the messages to send upstream, with memory."""
        log, _ = self._opened()
        earlier = dialogue(messages[:-1])
        text = message_text(messages[-1].get("content"))
        session = self._session(earlier, model)
        number = sum(1 for role, _ in earlier if role == "user")
        note = self._note(session, messages, text, number, first=not earlier)
        if note is not None:
            session.notes[number] = note
        else:
            session.notes.pop(number, None)
        user_turn = log.append(UserTurn(session=session.id, text=text, name="user"),
                               stream=session.id).id
        first, less, alone = self._askings(session, messages, model, number)
        return Exchange(session, earlier, text, model, first, user_turn, less, alone)

    def finish(self, exchange: Exchange, reply: str, stats: ReplyStats | None = None, *,
               interrupted: bool = False) -> None:
        """Record the reply (nothing when there is none)."""
        log, _ = self._opened()
        stats = stats or ReplyStats()
        if reply.strip():
            log.append(AssistantTurn(session=exchange.session.id, text=reply, name=exchange.model,
                                     prompt_tokens=stats.prompt_tokens,
                                     reply_tokens=stats.reply_tokens,
                                     elapsed_ms=stats.elapsed_ms, interrupted=interrupted),
                       stream=exchange.session.id)
            said = dialogue([{"role": "user", "content": exchange.text},
                             {"role": "assistant", "content": reply}])
            self.conversations.remember(exchange.earlier + said, exchange.session.id)

    def catch_up(self) -> None:
        """Catch the projections up after an exchange, so the next request — in any
        conversation — can recall it; a failure is a warning (the turns are in the log)."""
        _, store = self._opened()
        warning = catch_up_after_append(store)
        if warning:
            logger.warning("proxy.catch_up", warning=warning)
        self._read_ahead()

    # --- sessions and memory ----------------------------------------------------------------

    def _session(self, earlier: list[tuple[str, str]], model: str) -> ProxySession:
        """The session of a conversation so far, or a new one (``SessionStarted`` and its
        start block, read ahead when it can be: :meth:`_read_ahead`). A session known only
        from the log (the proxy restarted) gets a start block of its own."""
        log, _ = self._opened()
        found = self.conversations.find(earlier)
        if found is not None and found in self.sessions:
            return self.sessions[found]
        window = self.window(model)
        ahead, self._ahead = self._ahead, None
        if found is None and ahead is not None and ahead.window == window and \
                ahead.head == log.head():
            session = ahead.session
        else:
            session = self._new_session(window, found)
        if found is None:
            log.append(SessionStarted(session=session.id, backend=BACKEND, model=model,
                                      context_window=window), stream=session.id)
        if session.start is not None:
            log.append(MemoryInjected(session=session.id, budget_tokens=session.memory.budget,
                                      injected_tokens=session.start.injected_tokens,
                                      items=[item.id for item in session.start.items],
                                      kind="start", memory_tokens=session.start.injected_tokens),
                       stream=session.id)
        self.sessions[session.id] = session
        self._model = model
        return session

    def _new_session(self, window: int, session_id: str | None = None) -> ProxySession:
        """A session's memory with its start block built (none when ``inject_on_start`` is
        off); a new id unless ``session_id``."""
        _, store = self._opened()
        budget = budget_for(window, self.config.memory.budget_pct)
        session_id = session_id or f"{SESSION_PREFIX}{new_ulid()}"
        session = ProxySession(session_id, SessionMemory(self.home, store, budget,
                                                         self.config.memory.top_k, session_id),
                               window)
        if self.config.memory.inject_on_start:
            session.start = session.memory.build_start()
        return session

    def _read_ahead(self) -> None:
        """Build the next new conversation's session and start block now, off any request's
        path, as the chat reads its start block while the person types: the block recalls for
        the previous session's last turns, not for the new message, so it can be ready
        before that message arrives. Used only if the log has not moved since (the head)."""
        if self._model is None:
            return
        log, _ = self._opened()
        window = self.window(self._model)
        self._ahead = _ReadAhead(log.head(), window, self._new_session(window))

    def _note(self, session: ProxySession, messages: list[dict], text: str,
              number: int, *, first: bool) -> Injection | None:
        """The note for the new message (the ``number``-th user message, from 0), as the
        chat sizes it: within what the budget has left and what the window has free once
        the prompt and the reply are in; the first message's note capped so the first
        token does not wait for it; the oldest earlier notes giving way when they leave it
        too little of the budget (:func:`workers.chat.memory.giving_way`), and the start
        block cut once for a later message's note
        (:meth:`workers.chat.memory.SessionMemory.smaller_start`)."""
        memory = self.config.memory
        if not memory.turn_recall or not text.strip():
            return None
        smaller = None if first else session.memory.smaller_start(session.start)
        block = smaller or session.start
        start = block.injected_tokens if block else 0
        in_prompt = start + sum(note.injected_tokens for note in session.notes.values())
        noted = sorted(n for n in session.notes if n < number)
        leaving = noted[:giving_way([session.notes[n].injected_tokens for n in noted],
                                    session.memory.budget, start)]
        freed = sum(session.notes[n].injected_tokens for n in leaving)
        prompt = sum(estimate(message_text(m.get("content"))) for m in messages[:-1]) + \
            (estimate(block.text) if block else 0) + in_prompt - start - freed
        cap = note_room(session.window, self.config.llm.max_reply_tokens, prompt, text,
                        first=first and session.start is not None,
                        first_note=memory.first_note)
        if cap is None:
            return None
        note = session.memory.note_for(
            text, in_prompt - freed, cap,
            freed=[item.id for n in leaving for item in session.notes[n].items],
            smaller=smaller)
        if not note.text:
            return None
        for n in leaving:
            del session.notes[n]
        in_prompt -= freed
        log, _ = self._opened()
        if smaller is not None:  # the start block cut for the notes, as the chat cuts it
            session.start = smaller
            log.append(MemoryInjected(session=session.id, budget_tokens=session.memory.budget,
                                      injected_tokens=smaller.injected_tokens,
                                      items=[item.id for item in smaller.items], kind="start",
                                      memory_tokens=in_prompt), stream=session.id)
        log.append(MemoryInjected(session=session.id, budget_tokens=session.memory.budget,
                                  injected_tokens=note.injected_tokens,
                                  items=[item.id for item in note.items], kind="turn",
                                  memory_tokens=in_prompt + note.injected_tokens),
                   stream=session.id)
        return note

    def _askings(self, session: ProxySession, messages: list[dict], model: str,
                 number: int) -> tuple[Asking, dict[str, Asking], list[dict]]:
        """The messages to send upstream with memory, and to ask again with after a copy, as
        the chat asks again (:meth:`workers.chat.session.ChatSession._first_reply`): after an
        echo of the message (only while a start block is in the prompt) without that block,
        after a repeat of an earlier reply without the earlier messages, after a recital of
        the memory without memory; and ``alone`` after a copy again."""
        text = message_text(messages[-1].get("content"))
        start = session.start.text if session.start else ""
        notes = [session.notes[n].text for n in sorted(session.notes) if n <= number]
        note = session.notes[number].text if number in session.notes else ""
        replies = tuple(message_text(m.get("content")) for m in messages[:-1]
                        if m.get("role") == "assistant")
        upstream = self._upstream_messages(session, messages, model)
        first = Asking(upstream, text if start else "", replies, _joined(start, *notes))
        bare = self._upstream_messages(session, messages, model, start=False, notes=False)
        alone = [m for m in bare[:-1] if m.get("role") == "system"] + bare[-1:]
        less = {}
        if start:
            less["echo"] = Asking(self._upstream_messages(session, messages, model,
                                                          start=False),
                                  text, replies, _joined(*notes))
        if replies:
            less["repeat"] = Asking([m for m in upstream[:-1] if m.get("role") == "system"]
                                    + upstream[-1:], text, (), _joined(start, note))
        if first.memory:
            less["recital"] = Asking(bare, text, replies)
        return first, less, alone

    def _upstream_messages(self, session: ProxySession, messages: list[dict],
                           model: str, *, start: bool = True,
                           notes: bool = True) -> list[dict]:
        """The client's messages with memory: the start block at the end of the system
        message (a system message of the chat's, for ``model``, when the client sent none),
        each user message's note before its text. ``start`` False: without the start block,
        as the chat asks again after an echo (the chat's system message kept); ``notes``
        False: without the notes, as the chat asks again after a recital."""
        out = copy.deepcopy(messages)
        block = session.start.text if session.start and start else ""
        own = bool(out) and out[0].get("role") == "system"
        if block and own:
            out[0]["content"] = _with_text(out[0].get("content"), block, after=True)
        elif not own and (block or not start):
            out.insert(0, {"role": "system",
                           "content": system_prompt(block, today=session.today, model=model)})
        number = 0
        for message in out:
            if message.get("role") != "user":
                continue
            note = session.notes.get(number) if notes else None
            if note is not None:
                message["content"] = _with_text(message.get("content"), note.text, after=False)
            number += 1
        return out


def _joined(*texts: str) -> str:
    return "\n".join(t for t in texts if t)


def _with_text(content: Any, text: str, *, after: bool) -> Any:
    """``content`` (a string or a list of parts) with ``text`` joined on by a blank line."""
    if isinstance(content, list):
        part = {"type": "text", "text": text}
        return [*content, part] if after else [part, *content]
    content = content if isinstance(content, str) else ""
    if not content:
        return text
    return f"{content}\n\n{text}" if after else with_note(text, content)
