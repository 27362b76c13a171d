"""A reply that repeats the person's message (never shown, asked again without the start
block) or an earlier reply (asked again without the earlier exchanges).

The backends below are the scripted one (the same SSE parser and streaming loop as the HTTP
backends) with one change each: like the 0.5B model, one echoes the message when the system
prompt holds the start block, another gives the last reply in the prompt again."""
from __future__ import annotations

import json

from cli.chat import ToolCallFilter
from events import Home
from events.config import Config, MemoryConfig
from events.types import Remembered
from workers.chat.echo import EchoGuard, echoes
from workers.chat.session import ChatSession
from workers.llm import ScriptedBackend
from workers.llm.base import ChatReply, ChatStats

from .conftest import Stores
from .test_session_memory import seed, started

MESSAGE = "Thanks for the support with the garden party, you really are the best!"
OWN_REPLY = "Glad it went well! How did the roses hold up?"


class EchoesWithStartBlock(ScriptedBackend):
    """Repeats the message when the start block is in the system prompt."""

    def __init__(self, echo: str = MESSAGE) -> None:
        super().__init__()
        self.echo = echo
        self.systems: list[str] = []

    def reply_for(self, messages: list[dict]) -> str:
        system = str(messages[0]["content"])
        self.systems.append(system)
        return self.echo if "[memory context]" in system else OWN_REPLY


def session_on(home: Home, stores: Stores, backend: ScriptedBackend,
               **memory: object) -> ChatSession:
    log, store = stores
    log.append(Remembered(text="Ann grows roses in her garden"), stream="memory")
    store.catch_up_all()
    session = ChatSession(home, log, store, backend,
                          Config(memory=MemoryConfig(**memory)),  # type: ignore[arg-type]
                          tools=False)
    return started(session)


def test_an_echo_is_never_shown_and_asked_again_without_the_start_block(
        home: Home, stores: Stores) -> None:
    backend = EchoesWithStartBlock()
    session = session_on(home, stores, backend)
    assert "Ann grows roses" in session.memory_block
    shown: list[str] = []
    ends: list[str] = []
    reply = session.send(MESSAGE, on_token=shown.append,
                         on_reply_end=lambda r: ends.append(r.text))
    assert reply.text == OWN_REPLY and "".join(shown) == OWN_REPLY
    assert ends == [OWN_REPLY]     # the echo's call never reached the caller
    first, again = backend.systems
    assert "Ann grows roses" in first and "[memory context]" not in again
    (turn,) = stores[0].read(types=["AssistantTurn"])
    assert turn.payload["text"] == OWN_REPLY
    # the start block stays for the next message, and is read ahead again for it: the
    # second asking left the server's prompt cache without it
    assert "Ann grows roses" in session.messages()[0]["content"]
    assert session.warming is not None
    session.warming.join(5)
    assert backend.warmed[-1] == session.messages() and len(backend.warmed) == 2


class EchoesWithAnyMemory(ScriptedBackend):
    """Repeats the message whenever the prompt holds memory: the start block or a note."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[list[dict]] = []

    def reply_for(self, messages: list[dict]) -> str:
        self.requests.append(messages)
        said = str(messages[-1]["content"]).split("\n\n")[-1]
        memory = any("[memory" in str(m["content"]) for m in messages)
        return said if memory and said != "Hello!" else OWN_REPLY


def test_the_second_asking_keeps_the_notes_and_is_the_last(home: Home, stores: Stores) -> None:
    """Asked again, the model reads the message's note still; an echo then is shown as it
    is: one more call at most, never a loop."""
    log, store = stores
    seed(log)
    store.catch_up_all()
    backend = EchoesWithAnyMemory()
    session = started(ChatSession(home, log, store, backend, Config(), tools=False))
    session.send("Hello!")        # a first message's note is capped: none here
    backend.requests.clear()
    shown: list[str] = []
    message = "What do I like about my garden and my violin these days?"
    reply = session.send(message, on_token=shown.append)
    assert reply.text == message == "".join(shown) and session.echoes == 1
    first, again = backend.requests
    assert "[memory context]" in first[0]["content"]
    assert "[memory context]" not in again[0]["content"]
    assert "[memory note]" in first[-1]["content"] == again[-1]["content"]
    assert "[memory context]" in session.messages()[0]["content"]   # back for the next


def test_an_echo_through_the_terminal_filter_prints_only_the_reply(
        home: Home, stores: Stores) -> None:
    """The chat's terminal side (cli/chat.py) gets the pieces through its tool-call filter."""
    printed: list[str] = []
    shown = ToolCallFilter(printed.append)
    session = session_on(home, stores, EchoesWithStartBlock())
    session.send(MESSAGE, on_token=shown.token, on_reply_end=shown.reply_end)
    assert "".join(printed) == OWN_REPLY


def test_a_reply_that_parts_from_the_message_streams_once(home: Home, stores: Stores) -> None:
    backend = EchoesWithStartBlock(echo="Thanks for the support! Your garden sounds lovely.")
    session = session_on(home, stores, backend)
    shown: list[str] = []
    reply = session.send(MESSAGE, on_token=shown.append)
    assert reply.text == "Thanks for the support! Your garden sounds lovely."
    assert "".join(shown) == reply.text and len(backend.systems) == 1
    assert len(backend.warmed) == 1               # read ahead at the start only
    assert len(shown) > 1          # streamed piece by piece, not held to the end


def test_without_a_start_block_an_echo_is_left_as_it_is(home: Home, stores: Stores) -> None:
    backend = EchoesWithStartBlock()
    backend.echo = OWN_REPLY
    session = session_on(home, stores, backend, inject_on_start=False)
    assert session.memory_block == ""
    reply = session.send(OWN_REPLY)          # the model says it back: nothing to ask again
    assert reply.text == OWN_REPLY and len(backend.systems) == 1


def test_echoes_compares_the_openings() -> None:
    assert echoes("  thanks for the support with the garden party, you…", MESSAGE)
    assert not echoes("Thanks for the support!", MESSAGE)
    assert echoes("Hi Ann!", "hi ann!") and not echoes("Hi Ann! How are you?", "Hi Ann!")
    assert not echoes("", "") and not echoes("anything", "   ")


def test_the_guard_holds_only_what_could_still_be_an_echo() -> None:
    shown: list[str] = []
    guard = EchoGuard(MESSAGE, shown.append)
    for piece in ("Thanks ", "for ", "the "):
        guard.token(piece)
    assert shown == []                        # so far the message's own words
    guard.token("roses!")                     # parts from it: everything shows
    assert "".join(shown) == "Thanks for the roses!"
    guard.end(ChatReply("Thanks for the roses!", ChatStats(None, None, 0, None)))
    assert not guard.echoed
    shown.clear()
    guard = EchoGuard(MESSAGE, shown.append)
    for piece in MESSAGE.split(" "):
        guard.token(piece + " ")
    guard.end(ChatReply(MESSAGE, ChatStats(None, None, 0, None)))
    assert guard.echoed and shown == []
    shown.clear()
    guard = EchoGuard("Hi Ann!", shown.append)      # a short message: only itself echoes it
    for piece in ("Hi ", "Ann! ", "How "):
        guard.token(piece)
    assert shown == ["Hi Ann! How "]                 # parted from it: shown, not held to the end
    guard.token("are you?")
    assert shown[-1] == "are you?"
    thirty = "Tell me about the garden party"               # as long as an opening
    shown.clear()
    guard = EchoGuard(thirty, shown.append)
    for piece in (thirty, " please!"):
        guard.token(piece)
    guard.end(ChatReply(thirty + " please!", ChatStats(None, None, 0, None)))
    assert len(thirty) == 30 and guard.echoed and shown == []


# --- repeats: a reply that says an earlier reply of the session again ---------------------------

class RepeatsItself(ScriptedBackend):
    """Like the 0.5B model once a session locks in: gives the last reply in the prompt again
    when there is one, else a reply of its own to the message."""

    def __init__(self, fresh: str = "A fresh reply about {}") -> None:
        super().__init__()
        self.fresh = fresh
        self.requests: list[list[dict]] = []

    def reply_for(self, messages: list[dict]) -> str:
        self.requests.append(messages)
        replies = [str(m["content"]) for m in messages if m["role"] == "assistant"]
        said = str(messages[-1]["content"]).split("\n\n")[-1]
        return replies[-1] if replies else self.fresh.format(said.lower().rstrip("?!."))


def test_a_repeat_is_never_shown_and_asked_again_without_the_earlier_exchanges(
        home: Home, stores: Stores) -> None:
    backend = RepeatsItself()
    session = session_on(home, stores, backend)
    first = session.send("How are the roses doing this spring?").text
    assert first == "A fresh reply about how are the roses doing this spring"
    backend.requests.clear()
    shown: list[str] = []
    ends: list[str] = []
    reply = session.send("And the tulips?", on_token=shown.append,
                         on_reply_end=lambda r: ends.append(r.text))
    assert reply.text == "A fresh reply about and the tulips"
    assert "".join(shown) == reply.text and ends == [reply.text]  # the repeat never shown
    assert session.repeats == 1 and session.echoes == 0
    repeated, again = backend.requests
    assert [m["role"] for m in repeated] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in again] == ["system", "user"]   # the earlier exchange left out
    assert again[0] == repeated[0] and again[-1] == repeated[-1]  # start block, note kept
    turns = [e.payload["text"] for e in stores[0].read(types=["AssistantTurn"])]
    assert turns == [first, reply.text]
    # the history is whole again for the next message, and read ahead again for it
    assert [m["role"] for m in session.messages()] == ["system", "user", "assistant",
                                                       "user", "assistant"]
    assert session.warming is not None
    session.warming.join(5)
    assert backend.warmed[-1] == session.messages() and len(backend.warmed) == 2


def test_a_short_reply_may_come_again(home: Home, stores: Stores) -> None:
    """"You're welcome!" twice is no lock-in: only a reply of 30 characters or more is
    taken for a repeat."""
    backend = RepeatsItself(fresh="You're welcome!")
    session = session_on(home, stores, backend)
    session.send("Thanks for the tip about mulch!")
    backend.requests.clear()
    assert session.send("Thanks again!").text == "You're welcome!"
    assert len(backend.requests) == 1 and session.repeats == 0


def test_a_repeat_asked_again_is_shown_whatever_it_says(home: Home, stores: Stores) -> None:
    """One asking more, never a loop: a model that repeats whatever it is asked is shown."""
    backend = RepeatsItself(fresh="Roses like a sunny spot and deep watering.")
    session = session_on(home, stores, backend)
    session.send("Where should the roses go?")
    backend.requests.clear()
    reply = session.send("And how often should I water them?")
    assert reply.text == "Roses like a sunny spot and deep watering."
    assert len(backend.requests) == 2 and session.repeats == 1


def test_copies_are_told_by_the_guard() -> None:
    reply = ChatReply("Roses like a sunny spot and deep watering.", ChatStats(None, None, 0, None))
    guard = EchoGuard("Where now?", None, ["Roses like a sunny spot and deep watering, mostly."])
    for piece in ("Roses like a ", "sunny spot and deep watering."):
        guard.token(piece)
    guard.end(reply)
    assert guard.repeated and not guard.echoed and guard.copied
    parting = EchoGuard("Where now?", None, [reply.text])
    parting.token("Roses need sun.")
    assert parting.streaming and parting.held == ""   # parted: shown at once


class SearchesFirst(ScriptedBackend):
    """Calls memory_search (as text) for every message, then answers from the result."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[list[dict]] = []

    def reply_for(self, messages: list[dict]) -> str:
        self.requests.append(messages)
        last = str(messages[-1]["content"])
        if last.startswith("[tool result"):
            return f"From your notes, reply number {len(self.requests)} is this one."
        said = last.split("\n\n")[-1]
        return json.dumps({"name": "memory_search", "arguments": {"query": said}})


def test_a_second_tool_call_is_no_repeat(home: Home, stores: Stores) -> None:
    """A call opens as the session's earlier call did: it is run, not asked again."""
    backend = SearchesFirst()
    session = session_on(home, stores, backend)
    session.tools = True
    session.send("Where do the roses grow best in the garden?")
    backend.requests.clear()
    reply = session.send("And which roses did Ann plant last year?")
    assert reply.text.startswith("From your notes")
    assert len(backend.requests) == 2 and session.repeats == 0   # the call, then the answer
