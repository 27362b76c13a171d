"""A chat session: the flow of events around a conversation with the model.

``SessionStarted`` → the start block of memory, recorded as ``MemoryInjected`` and sent to
the server to read while the person types → for each message, a memory note when recall
finds something new for it (``MemoryInjected``, :mod:`workers.chat.memory`) → each exchange
as ``UserTurn`` / ``AssistantTurn`` (with the
backend's stats), with a ``ToolCalled`` for each memory tool the model called in between
(see :mod:`workers.tools`; only the final reply is an ``AssistantTurn``) →
``HistoryCompressed`` whenever the history reaches ``warn_at_pct`` of the context window →
``SessionEnded``. The session reads memory only from the projections and
writes only events. The terminal side lives in ``cli/chat.py``.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from events import Event, EventLog, Home, clock
from events.config import Config
from events.ids import new_ulid
from events.logger import get_logger
from events.text import repaired
from events.types import (
    AssistantTurn,
    HistoryCompressed,
    MemoryInjected,
    SessionEnded,
    SessionStarted,
    ToolCalled,
    UserTurn,
)
from projections import ProjectionStore
from projections.inject import Injection, budget_for
from projections.relative_time import day_text
from projections.tokens import estimate

from ..llm import (
    Backend,
    BackendError,
    BackendUnavailable,
    ChatReply,
    ContextLengthExceeded,
    ModelNotFound,
    ReplyCutOff,
)
from .echo import ASKING_AGAIN, EchoGuard
from .instruction import instruction
from .memory import SessionMemory, giving_way, note_room, with_note
from .tools import (
    REPEATED_CALL,
    TOOL_PROMPT,
    TOOL_PROMPT_NATIVE,
    TOOL_SPECS,
    TOOLS_DONE,
    call_key,
    call_shaped,
    imitates_a_call,
    parse_text_tool_calls,
    run_tool,
    structured_call,
)

DEFAULT_CONTEXT = 2048  # assumed when the backend cannot tell (Pi-class models)
def today_line(day: dt.date | None) -> str:
    """``Today is Saturday, 28 November 2026.`` — the day the memory's dates are read
    against ("last week", "how long ago"); empty when the day is not known."""
    return f"Today is {day:%A}, {day_text(day)}." if day else ""


def system_prompt(memory_block: str, tool_prompt: str = "",
                  today: dt.date | None = None, model: str | None = None) -> str:
    """The system message: the instruction for ``model`` (:mod:`.instruction`), today's
    date when known, the tool prompt if any, the memory block; the chat and `diarist eval
    --answer` both ask with it."""
    return " ".join(t for t in (instruction(model), today_line(today), tool_prompt) if t) + \
        (f"\n\n{memory_block}" if memory_block else "")


# The summariser prompt of the seed design: ≤150 tokens of what must survive.
SUMMARY_PROMPT = ("Summarise the conversation below in at most 150 tokens, for your own later "
                  "use. Keep: decisions made, files changed, errors resolved, and context the "
                  "user gave. Plain sentences, no preamble.")
SUMMARY_MAX_TOKENS = 200
COMPRESSED_PREFIX = "[Session history compressed — summary: "
ANSWER_NOW = ("[Answer my last message now, in plain words, using the tool results above. "
              "No tool calls.]")
MAX_TOOL_ROUNDS = 3       # model calls that may ask for tools before the reply must be final
MAX_CALLS_PER_ROUND = 5


logger = get_logger("diarist.chat")


@dataclass
class _Message:
    role: str
    content: str
    event_ids: list[str] = field(default_factory=list)
    memory_tokens: int = 0  # of a memory note attached to this (user) message
    note: str = ""          # that note, in ``content`` with the message's own text
    note_items: tuple[str, ...] = ()
    said: str = ""          # the message's own text

    def drop_note(self) -> None:
        """Take the note out of the message (:func:`.memory.giving_way`), its text kept."""
        self.content = self.said
        self.note, self.note_items, self.memory_tokens = "", (), 0


class ChatSession:
    def __init__(self, home: Home, log: EventLog, store: ProjectionStore, backend: Backend,
                 config: Config, *, notify: Callable[[str], None] | None = None,
                 tools: bool = True) -> None:
        self.home, self.log, self.store = home, log, store
        self.backend, self.config = backend, config
        self.id = f"chat/{new_ulid()}"
        # the session's day (UTC, as the memory's dates): the system prompt never changes
        self.today = clock.now().date()
        self.notify = notify or (lambda _text: None)
        self.window = backend.context_window() or DEFAULT_CONTEXT
        self.budget = budget_for(backend.context_window(), config.memory.budget_pct)
        self.history: list[_Message] = []
        self.memory_block = ""
        self.injection: Injection | None = None
        self.memory = SessionMemory(home, store, self.budget, config.memory.top_k, self.id)
        self.warming: threading.Thread | None = None
        self.turns = 0
        self.compressions = 0
        # replies asked again (:meth:`_first_reply`), by what they copied: the message, an
        # earlier reply, the memory in the prompt; and those asked a last time, alone
        self.asked_again = dict.fromkeys(("echo", "repeat", "recital", "alone"), 0)
        # (user event id, assistant event id) of the last exchange: the shadow journal's input
        self.last_turn: tuple[str, str] | None = None
        self.tools = tools
        # native tool calling: offered to HTTP backends until the server refuses it
        self._native_tools = tools and backend.native_tools

    # --- events -----------------------------------------------------------------------------

    def _append(self, data: Event, **options: Any) -> str:
        return self.log.append(data, stream=self.id, **options).id

    def start(self) -> None:
        """``SessionStarted``, then the start block of memory, read by the server while the
        person types the first message."""
        self._append(SessionStarted(session=self.id, backend=self.backend.name,
                                    model=self.backend.model, context_window=self.window))
        if self.config.memory.inject_on_start:
            self.inject_start()
        self.warm()

    def end(self) -> None:
        self._append(SessionEnded(session=self.id, turns=self.turns))

    # --- memory -----------------------------------------------------------------------------

    def inject_start(self) -> Injection:
        """The start block (:mod:`workers.chat.memory`): the end of the system prompt, the
        same for the session but for one cut, when a later message's note needs its room."""
        injection = self.memory.build_start()
        self._start_block(injection)
        return injection

    def _start_block(self, injection: Injection) -> None:
        """Put ``injection`` at the end of the system prompt (the start block, or the
        smaller one a later note cut it to) and record it."""
        self.injection, self.memory_block = injection, injection.text
        self._append(MemoryInjected(session=self.id, budget_tokens=self.budget,
                                    injected_tokens=injection.injected_tokens,
                                    items=[i.id for i in injection.items], kind="start",
                                    memory_tokens=self.memory_in_prompt()))

    def warm(self) -> None:
        """Send the stable prefix (the system prompt with the start block) to the server on a
        background thread, so it is read and cached before the first message arrives."""
        messages = self.messages()

        def read_ahead() -> None:
            try:
                self.backend.warm(messages)
            except Exception as exc:  # a cold cache only costs speed
                logger.info("chat.warm_failed", error=str(exc))

        self.warming = threading.Thread(target=read_ahead, name="diarist-warm", daemon=True)
        self.warming.start()

    def memory_text(self, *, start: bool = True, notes: bool = True,
                    leave_out: frozenset[int] = frozenset()) -> str:
        """The memory in the prompt now — the start block and the notes in the history — or
        in one asked as :meth:`messages` is asked with ``start``, ``notes``, ``leave_out``."""
        kept = [m.note for i, m in enumerate(self.history)
                if notes and m.note and i not in leave_out]
        return "\n".join(t for t in [self.memory_block if start else "", *kept] if t)

    def memory_in_prompt(self) -> int:
        """Tokens of memory in the prompt now: the start block and the notes of the
        messages still in the history."""
        start = self.injection.injected_tokens if self.injection else 0
        return start + sum(m.memory_tokens for m in self.history)

    def _note(self, text: str) -> Injection | None:
        """The memory note for a message, recorded as ``MemoryInjected``; None when there
        is nothing new worth it or when notes are off. Every token of a note is read by the
        server after the message arrives, so in a session with a start block (read ahead)
        the first message's note is capped (:func:`workers.chat.memory.first_note_cap`) —
        none without ``memory.first_note`` — lest the first reply wait for it
        (docs/benchmarks.md, "First token with memory"). When the notes in the history
        leave it too little of the budget, the oldest give way
        (:func:`workers.chat.memory.giving_way`) — only if this one has something."""
        if not self.config.memory.turn_recall:
            return None
        noted = [m for m in self.history if m.note]
        smaller = self.memory.smaller_start(self.injection) if self.history else None
        block = smaller or self.injection
        start = block.injected_tokens if block else 0
        cut = self.injection.injected_tokens - start if smaller and self.injection else 0
        leaving = noted[:giving_way([m.memory_tokens for m in noted], self.budget, start)]
        freed = sum(m.memory_tokens for m in leaving)
        cap = note_room(self.window, self.config.llm.max_reply_tokens,
                        self.history_tokens() - freed - cut, text,
                        first=self.injection is not None and not self.history,
                        first_note=self.config.memory.first_note)
        if cap is None:
            return None  # first_note off: the first reply reads only what was read ahead
        note = self.memory.note_for(text, self.memory_in_prompt() - freed - cut, cap,
                                    freed=[i for m in leaving for i in m.note_items],
                                    smaller=smaller)
        if not note.text:
            return None
        for message in leaving:
            message.drop_note()
        if smaller is not None:
            self._start_block(smaller)
        self._append(MemoryInjected(session=self.id, budget_tokens=self.budget,
                                    injected_tokens=note.injected_tokens,
                                    items=[i.id for i in note.items], kind="turn",
                                    memory_tokens=self.memory_in_prompt() + note.injected_tokens))
        return note

    def clear(self) -> None:
        """Forget the conversation so far (not the log); the start block is built again, and
        the system prompt tells the day it is now."""
        self.history.clear()
        self.today = clock.now().date()
        self.memory_block, self.injection = "", None
        if self.config.memory.inject_on_start:
            self.inject_start()
        self.warm()

    def messages(self, *, tools: bool = True, start: bool = True, notes: bool = True,
                 leave_out: frozenset[int] = frozenset()) -> list[dict]:
        """The system prompt (with the tool prompt unless ``tools`` is False, the start block
        unless ``start`` is) + history (but for the messages numbered in ``leave_out``; the
        user's without their notes unless ``notes``)."""
        tool_prompt = TOOL_PROMPT_NATIVE if self._native_tools else TOOL_PROMPT
        system = system_prompt(self.memory_block if start else "",
                               tool_prompt if self.tools and tools else "",
                               self.today, self.backend.model)
        return [{"role": "system", "content": system}] + [
            {"role": m.role, "content": m.content if notes or not m.note else m.said}
            for i, m in enumerate(self.history) if i not in leave_out]

    def history_tokens(self) -> int:
        return sum(estimate(m["content"]) for m in self.messages())

    def context_use(self) -> float:
        return self.history_tokens() / self.window

    # --- turns ------------------------------------------------------------------------------

    def send(self, text: str, on_token: Callable[[str], None] | None = None,
             on_reply_end: Callable[[ChatReply], None] | None = None) -> ChatReply:
        """One user turn; returns the final reply. ``on_token`` gets every streamed piece of
        every model call of the turn (tool-call rounds included); ``on_reply_end`` is called
        after each of those calls with its reply, so a caller can tell them apart."""
        text = repaired(text)  # a stray byte from the terminal must not end the session
        note = self._note(text)
        user_id = self._append(UserTurn(session=self.id, text=text, name="user"))
        self.history.append(_Message("user", with_note(note.text if note else "", text),
                                     [user_id], note.injected_tokens if note else 0,
                                     note.text if note else "",
                                     tuple(i.id for i in note.items) if note else (), text))
        asked = sum(self.asked_again.values())
        try:
            reply = self._first_reply(text, on_token, on_reply_end)
            if self.tools:
                reply = self._tool_rounds(reply, on_token, on_reply_end)
            if self.tools and not reply.interrupted and imitates_a_call(reply.text):
                reply = self._without_tools(on_token, on_reply_end)
        except ReplyCutOff as cut:  # keep what was already shown, then report the error
            if cut.partial.text.strip():
                self._reply_done(user_id, cut.partial)
            raise
        self._reply_done(user_id, reply)
        if sum(self.asked_again.values()) > asked:  # asked with less: the cache lost it
            self.warm()
        if self.config.memory.rolling_summary.enabled and \
                self.context_use() >= self.config.memory.rolling_summary.warn_at_pct:
            self.notify(f"[context ~{self.context_use():.0%} full — compressing older turns]")
            self.compress()
        return reply

    def _first_reply(self, text: str, on_token: Callable[[str], None] | None,
                     on_reply_end: Callable[[ChatReply], None] | None) -> ChatReply:
        """The turn's first model call. A reply that only repeats ``text`` while the start
        block is in the prompt, repeats an earlier reply of the session, or recites the
        memory in the prompt (:mod:`.echo`) is held back, never shown, and the model is
        asked again with less: after an echo without the start block (the notes kept),
        after a repeat without the earlier exchanges (the start block and the message's
        note kept: as a session's first message), after a recital without memory. A copy
        again (of what that prompt still holds, the message whatever it holds) is asked a
        last time with the message alone — no memory, no earlier exchanges — and shown."""
        reply, guard = self._guarded(text, on_token, on_reply_end,
                                     echo=bool(self.memory_block))
        if guard is None or guard.copy is None:
            return reply
        earlier = frozenset(range(len(self.history) - 1))
        ways: dict[str, dict[str, Any]] = {"echo": {"start": False},
                                           "recital": {"start": False, "notes": False},
                                           "repeat": {"leave_out": earlier}}
        less = ways[guard.copy]
        self.asked_again[guard.copy] += 1
        logger.info("chat.asked_again", session=self.id, copy=guard.copy)
        self.notify(ASKING_AGAIN[guard.copy])
        reply, guard = self._guarded(text, on_token, on_reply_end, echo=True, **less)
        if guard is None or guard.copy is None:
            return reply
        self.asked_again["alone"] += 1
        logger.info("chat.asked_alone", session=self.id, copy=guard.copy)
        self.notify(ASKING_AGAIN["alone"])
        return self._chat([], on_token, on_reply_end, start=False, notes=False,
                          leave_out=earlier)

    def _guarded(self, text: str, on_token: Callable[[str], None] | None,
                 on_reply_end: Callable[[ChatReply], None] | None, *, echo: bool,
                 start: bool = True, notes: bool = True,
                 leave_out: frozenset[int] = frozenset()) -> tuple[ChatReply, EchoGuard | None]:
        """One model call (:meth:`_chat`'s ``start``, ``notes``, ``leave_out``) whose reply
        is held back while it may copy ``text`` (when ``echo``), an earlier reply or the
        memory its prompt holds; the guard is None when the prompt holds neither."""
        earlier = [m.content for i, m in enumerate(self.history)
                   if m.role == "assistant" and i not in leave_out]
        memory = self.memory_text(start=start, notes=notes, leave_out=leave_out)
        if not memory and not earlier:
            return self._chat([], on_token, on_reply_end, start=start, notes=notes,
                              leave_out=leave_out), None
        guard = EchoGuard(text if echo else "", on_token, earlier, memory)

        def ended(reply: ChatReply) -> None:
            guard.end(reply, call=bool(self.tools and _calls_in(reply)[1])
                      or call_shaped(reply.text))
            if not guard.copied and on_reply_end is not None:
                on_reply_end(reply)

        try:
            reply = self._chat([], guard.token, ended, start=start, notes=notes,
                               leave_out=leave_out)
        except ReplyCutOff:
            guard.flush()  # what arrived is kept as the reply: show it
            raise
        return reply, guard

    def _reply_done(self, user_id: str, reply: ChatReply) -> None:
        """Record the reply as ``AssistantTurn`` (with its stats) and add it to the history."""
        s = reply.stats
        assistant_id = self._append(AssistantTurn(
            session=self.id, text=reply.text, name=self.backend.model,
            prompt_tokens=s.prompt_tokens, reply_tokens=s.reply_tokens, elapsed_ms=s.elapsed_ms,
            tokens_per_sec=s.tokens_per_sec, interrupted=reply.interrupted))
        self.history.append(_Message("assistant", reply.text, [assistant_id]))
        self.turns += 1
        self.last_turn = (user_id, assistant_id)

    def _chat(self, extra: list[dict], on_token: Callable[[str], None] | None,
              on_reply_end: Callable[[ChatReply], None] | None = None, *,
              final: bool = False, plain: bool = False, start: bool = True,
              notes: bool = True, leave_out: frozenset[int] = frozenset()) -> ChatReply:
        """One model call on the history plus ``extra`` (this turn's structured tool
        messages): compress and retry once on overflow; drop native tools if refused.
        ``final``: the answer must not be another tool call (``tool_choice: none``);
        ``plain``: no tools offered or described at all; ``start``: the start block in
        the system prompt; ``notes``: the memory notes in the user's messages;
        ``leave_out``: history messages left out of this call."""
        def call() -> ChatReply:
            messages = self.messages(tools=not plain, start=start, notes=notes,
                                     leave_out=leave_out) + extra
            if plain or not self._native_tools:
                return self.backend.chat(messages, on_token=on_token)
            try:
                return self.backend.chat(messages, on_token=on_token, tools=TOOL_SPECS,
                                         tool_choice="none" if final else None)
            except (BackendUnavailable, ModelNotFound, ContextLengthExceeded):
                raise
            except BackendError as e:
                if "tool" not in str(e).lower():
                    raise
                self._native_tools = False  # e.g. "model does not support tools"
                self.notify("[the model refused native tools — using text tool calls]")
                return self.backend.chat(messages, on_token=on_token)

        try:
            reply = call()
        except ContextLengthExceeded:
            self.notify("[context length exceeded — compressing and retrying once]")
            self.compress(force=True)
            reply = call()
        if on_reply_end is not None:
            on_reply_end(reply)
        return reply

    def _tool_rounds(self, reply: ChatReply, on_token: Callable[[str], None] | None,
                     on_reply_end: Callable[[ChatReply], None] | None = None) -> ChatReply:
        """Run the tools the model asked for, structured (``reply.tool_calls``) or printed as
        text, and ask again — at most ``MAX_TOOL_ROUNDS`` times. Each call is a
        ``ToolCalled``. The model is asked again with the exchange in its own protocol
        (assistant ``tool_calls`` + the backend's tool-result messages, or for text calls the
        assistant text + a user message ``[tool result NAME]: ...``); the history keeps every
        exchange as that plain text, so it stays valid for every server and survives
        compression. Returns the final reply."""
        rounds = _ToolRounds()
        try:
            for round_ in range(1, MAX_TOOL_ROUNDS + 1):
                if reply.interrupted:
                    break
                structured, calls = _calls_in(reply)
                if not calls:
                    break
                repeats = self._run_round(reply, structured, calls, rounds)
                # the last allowed round, or a round of nothing but repeats: the next answer
                # must be the reply — native tools are switched off for it (tool_choice
                # none) and a text-calling model is told so
                final = round_ == MAX_TOOL_ROUNDS or repeats == len(calls)
                if final and not structured:
                    last = rounds.wire[-1]
                    rounds.wire[-1] = {"role": "user",
                                       "content": f"{last['content']}\n{TOOLS_DONE}"}
                reply = self._chat(rounds.wire, on_token, on_reply_end, final=final)
                if final:
                    break
            if rounds.copies and not reply.interrupted and _calls_in(reply)[1]:
                reply = self._answer_plainly(rounds, on_token, on_reply_end)
        finally:
            self.history.extend(rounds.copies)
        return reply

    def _run_round(self, reply: ChatReply, structured: bool,
                   calls: list[tuple[str | None, str, Any]], rounds: _ToolRounds) -> int:
        """Run one round's calls (a repeat of an earlier call is not run again), record each
        as ``ToolCalled`` and add the exchange to ``rounds``; returns how many were repeats."""
        if structured:
            rounds.wire.append({"role": "assistant", "content": reply.text,
                                "tool_calls": reply.tool_calls[:MAX_CALLS_PER_ROUND]})
        else:
            rounds.wire.append({"role": "assistant", "content": reply.text})
        shown = reply.text.strip()
        repeats = 0
        for call_id, name, arguments in calls:
            key = call_key(name, arguments)
            if key in rounds.seen:  # small models loop on one call: not run again
                repeats += 1
                result = REPEATED_CALL
            else:
                rounds.seen.add(key)
                result = run_tool(name, arguments, home=self.home, log=self.log,
                                  store=self.store, session_id=self.id)
            args = arguments if isinstance(arguments, dict) else {"_raw": str(arguments)}
            event_id = self._append(ToolCalled(session=self.id, name=name, arguments=args,
                                               result=result))
            call_text = f"[tool call {name} {json.dumps(args, ensure_ascii=False)}]"
            result_text = f"[tool result {name}]: {result}"
            rounds.copies.append(_Message("assistant", shown or call_text, [event_id]))
            rounds.copies.append(_Message("user", result_text, [event_id]))
            shown = ""
            if structured:
                rounds.wire.append(self.backend.tool_result_message(name, call_id, result))
            else:
                rounds.wire.append({"role": "user", "content": result_text})
        return repeats

    def _without_tools(self, on_token: Callable[[str], None] | None,
                       on_reply_end: Callable[[ChatReply], None] | None) -> ChatReply:
        """The model copied the chat template's tool-call tags instead of answering
        (:func:`.tools.imitates_a_call`: the installed 0.5B model does with tools offered):
        the tools go for the rest of the session, and the message is asked again without
        them."""
        self.tools = self._native_tools = False
        self.notify("[the model cannot call the memory tools — they are off for this session; "
                    "`diarist chat --no-tools` starts without them]")
        return self._chat([], on_token, on_reply_end, plain=True)

    def _answer_plainly(self, rounds: _ToolRounds, on_token: Callable[[str], None] | None,
                        on_reply_end: Callable[[ChatReply], None] | None) -> ChatReply:
        """Told to answer, the model asked for a tool again (a 0.5B model does): ask once
        more with no tools in sight — only the results, as one plain message (shown its own
        calls, a small model copies them once more)."""
        results = "\n".join(m.content for m in rounds.copies if m.role == "user")
        return self._chat([{"role": "user", "content": f"{results}\n{ANSWER_NOW}"}],
                          on_token, on_reply_end, plain=True)

    def compress(self, force: bool = False) -> str | None:
        """Summarise all but the last ``keep_turns`` messages in a separate call and replace
        them with one message; returns the summary (None when there was nothing to do)."""
        keep = self.config.memory.rolling_summary.keep_turns
        old = self.history[:-keep] if keep else list(self.history)
        if force and not old and len(self.history) > 1:
            old = self.history[:-1]
        if not old:
            return None
        # what was said: a memory note was memory shown, not something the person said
        transcript = "\n".join(f"{m.role}: {m.said if m.note else m.content}" for m in old)
        reply = self.backend.chat(
            [{"role": "system", "content": SUMMARY_PROMPT},
             {"role": "user", "content": transcript}],
            stream=False, max_tokens=SUMMARY_MAX_TOKENS, temperature=0)
        summary = " ".join(reply.text.split())
        replaced = [event_id for m in old for event_id in m.event_ids]
        event_id = self._append(HistoryCompressed(session=self.id, replaced=replaced,
                                                  summary=summary))
        self.history = [_Message("user", f"{COMPRESSED_PREFIX}{summary}]", [event_id])] + \
            self.history[len(old):]
        self.compressions += 1
        return summary


@dataclass
class _ToolRounds:
    """One turn's tool exchange so far."""

    wire: list[dict] = field(default_factory=list)        # as sent to the model
    copies: list[_Message] = field(default_factory=list)  # the same, as plain text, for history
    seen: set[str] = field(default_factory=set)            # calls already run this turn


def _calls_in(reply: ChatReply) -> tuple[bool, list[tuple[str | None, str, Any]]]:
    """(structured?, the reply's tool calls as (call id, name, arguments)), at most
    ``MAX_CALLS_PER_ROUND``: structured calls, else calls printed in the text."""
    structured = [structured_call(c) for c in reply.tool_calls]
    if structured:
        return True, structured[:MAX_CALLS_PER_ROUND]
    text: list[tuple[str | None, str, Any]] = [
        (None, c["name"], c["arguments"]) for c in parse_text_tool_calls(reply.text)]
    return False, text[:MAX_CALLS_PER_ROUND]
