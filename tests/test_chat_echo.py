"""A reply that repeats the person's message (never shown, asked again without the start
block) or an earlier reply (asked again without the earlier exchanges).

The backends below are the scripted one (the same SSE parser and streaming loop as the HTTP
backends) with one change each: like the 0.5B model, one echoes the message when the system
prompt holds the start block, another gives the last reply in the prompt again."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.chat import ReplyLine, ToolCallFilter
from cli.main import cli
from events import Home
from events.config import Config, MemoryConfig
from events.types import Remembered
from workers.chat.echo import ASKING_AGAIN, EchoGuard, Recital, echoes
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
    notices: list[str] = []
    session.notify = notices.append
    reply = session.send(MESSAGE, on_token=shown.append,
                         on_reply_end=lambda r: ends.append(r.text))
    assert reply.text == OWN_REPLY and "".join(shown) == OWN_REPLY
    assert ends == [OWN_REPLY]     # the echo's call never reached the caller
    assert notices == [ASKING_AGAIN["echo"]]   # the person is told why the wait
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
        self.echo_alone = False

    def reply_for(self, messages: list[dict]) -> str:
        self.requests.append(messages)
        said = str(messages[-1]["content"]).split("\n\n")[-1]
        memory = any("[memory" in str(m["content"]) for m in messages)
        return said if (memory or self.echo_alone) and said != "Hello!" else OWN_REPLY


def test_the_second_asking_keeps_the_notes_and_a_copy_again_is_asked_alone(
        home: Home, stores: Stores) -> None:
    """Asked again, the model reads the message's note still; an echo then is asked a last
    time with the message alone (no memory, no earlier exchanges), and that reply is shown
    whatever it says: three calls at most, never a loop."""
    log, store = stores
    seed(log)
    store.catch_up_all()
    backend = EchoesWithAnyMemory()
    notices: list[str] = []
    session = started(ChatSession(home, log, store, backend, Config(), tools=False,
                                  notify=notices.append))
    session.send("Hello!")        # a first message's note is capped: none here
    backend.requests.clear()
    shown: list[str] = []
    message = "What do I like about my garden and my violin these days?"
    reply = session.send(message, on_token=shown.append)
    assert reply.text == OWN_REPLY == "".join(shown)
    assert session.asked_again == {"echo": 1, "repeat": 0, "recital": 0, "alone": 1}
    assert notices == [ASKING_AGAIN["echo"], ASKING_AGAIN["alone"]]
    first, again, alone = backend.requests
    assert "[memory context]" in first[0]["content"]
    assert "[memory context]" not in again[0]["content"]
    assert "[memory note]" in first[-1]["content"] == again[-1]["content"]
    assert [m["role"] for m in alone] == ["system", "user"]
    assert "[memory" not in alone[0]["content"] and alone[1]["content"] == message
    assert "[memory context]" in session.messages()[0]["content"]   # back for the next
    backend.echo_alone = True     # a model that echoes whatever it is asked: shown
    backend.requests.clear()
    assert session.send(message).text == message and len(backend.requests) == 3


def test_an_echo_through_the_terminal_filter_prints_only_the_reply(
        home: Home, stores: Stores) -> None:
    """The chat's terminal side (cli/chat.py) gets the pieces through its tool-call filter."""
    printed: list[str] = []
    shown = ToolCallFilter(printed.append)
    session = session_on(home, stores, EchoesWithStartBlock())
    session.send(MESSAGE, on_token=shown.token, on_reply_end=shown.reply_end)
    assert "".join(printed) == OWN_REPLY


def test_a_notice_before_the_reply_is_followed_by_the_reply_line_s_prefix(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal: a notice while the model is asked again (only the prefix shown) gets
    a line of its own and the prefix again; one after the reply's first piece (the
    compression notice) only a line of its own; an error ends the reply line for good."""
    line = ReplyLine()
    line.start("assistant> ")
    line.note(ASKING_AGAIN["echo"])
    line.write("Glad it went well!")
    line.note("[context ~80% full — compressing older turns]")
    line.start("assistant> ")
    line.end()
    line.note("Error: the server closed the stream")
    assert capsys.readouterr().out.splitlines() == [
        "assistant> ", ASKING_AGAIN["echo"], "assistant> Glad it went well!",
        "[context ~80% full — compressing older turns]", "assistant> ",
        "Error: the server closed the stream"]


def test_the_chat_tells_the_person_it_asks_again(home: Home, stores: Stores,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`diarist chat` in a terminal: the echo never shows; a notice says why the wait, then
    the reply comes on its own `assistant> ` line."""
    log, store = stores
    log.append(Remembered(text="Ann grows roses in her garden"), stream="memory")
    store.catch_up_all()
    monkeypatch.setattr("workers.llm.make_backend", lambda *_a, **_k: EchoesWithStartBlock())
    result = CliRunner().invoke(cli, ["chat", "--no-tools"], input=f"{MESSAGE}\n/exit\n",
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"assistant> \n{ASKING_AGAIN['echo']}\nassistant> {OWN_REPLY}\n" in result.output
    assert MESSAGE not in result.output.replace(f"you> {MESSAGE}", "")


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
    assert session.asked_again["repeat"] == 1 and session.asked_again["echo"] == 0
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
    assert len(backend.requests) == 1 and session.asked_again["repeat"] == 0


def test_a_repeat_asked_again_is_shown_whatever_it_says(home: Home, stores: Stores) -> None:
    """One asking more, never a loop: a model that repeats whatever it is asked is shown."""
    backend = RepeatsItself(fresh="Roses like a sunny spot and deep watering.")
    session = session_on(home, stores, backend)
    session.send("Where should the roses go?")
    backend.requests.clear()
    reply = session.send("And how often should I water them?")
    assert reply.text == "Roses like a sunny spot and deep watering."
    assert len(backend.requests) == 2 and session.asked_again["repeat"] == 1


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
    assert len(backend.requests) == 2            # the call, then the answer
    assert session.asked_again["repeat"] == 0


# --- recitals: a reply written as the memory in its prompt is ------------------------------------

class RecitesMemory(ScriptedBackend):
    """Like the 0.5B model answering a remark it has nothing to say to: copies its prompt's
    memory, title and line, whenever there is memory in the prompt."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[list[dict]] = []

    def reply_for(self, messages: list[dict]) -> str:
        self.requests.append(messages)
        lines = [line for m in messages for line in str(m["content"]).splitlines()
                 if line.startswith("- ")]
        return f"[most relevant]\n{lines[0]}" if lines else OWN_REPLY


def test_a_recital_is_never_shown_and_asked_again_without_memory(
        home: Home, stores: Stores) -> None:
    log, store = stores
    seed(log)
    store.catch_up_all()
    backend = RecitesMemory()
    session = started(ChatSession(home, log, store, backend, Config(), tools=False))
    shown: list[str] = []
    ends: list[str] = []
    reply = session.send("What do I like about my garden these days?", on_token=shown.append,
                         on_reply_end=lambda r: ends.append(r.text))
    assert reply.text == OWN_REPLY == "".join(shown) and ends == [OWN_REPLY]
    assert session.asked_again == {"echo": 0, "repeat": 0, "recital": 1, "alone": 0}
    recited, again = backend.requests
    assert "[memory context]" in recited[0]["content"]
    assert not any(line.startswith("- ") for m in again for line in m["content"].splitlines())
    assert again[-1]["content"] == "What do I like about my garden these days?"
    (turn,) = stores[0].read(types=["AssistantTurn"])
    assert turn.payload["text"] == OWN_REPLY
    # the memory is back for the next message, and read ahead again for it
    assert "[memory context]" in session.messages()[0]["content"]
    assert session.warming is not None
    session.warming.join(5)
    assert backend.warmed[-1] == session.messages() and len(backend.warmed) == 2


def test_a_recital_asked_again_with_a_note_in_an_earlier_message(
        home: Home, stores: Stores) -> None:
    """Asked again, no message of the history carries its note; the notes stay for the
    next message."""
    log, store = stores
    seed(log)
    store.catch_up_all()
    backend = RecitesMemory()
    session = started(ChatSession(home, log, store, backend,
                                  Config(memory=MemoryConfig(inject_on_start=False)),
                                  tools=False))
    session.send("What do I like about my garden and my violin these days?")
    assert any(m.note for m in session.history)
    backend.requests.clear()
    session.send("And what else do I like?")
    assert session.asked_again["recital"] == 2
    again = backend.requests[-1]
    assert all("[memory note]" not in m["content"] for m in again)
    assert "[memory note]" in session.messages()[1]["content"]


MEMORY = """[memory context]
[knowledge]
- (9 August 2023, 3 years ago) Tim: Thanks for asking! I'm reading a fantasy book.
[memory note]
[most relevant]
- (25 May 2023, 3 years ago) Caroline: My goal is to give kids a loving home.
- Caroline paints landscapes by the lake every summer."""


def test_recitals_are_told_by_the_memory_s_form() -> None:
    recital = Recital(MEMORY)
    assert recital.speakers == {"tim", "caroline"}
    for reply in ("[memory note]\n[most relevant]\n- (17 July 2023) Melanie: Wow!",
                  "[9 August 2023, 3 years ago] Tim: Thanks for asking!",
                  "- (1 May 2023) Caroline: A new one",
                  "Caroline: That's a great idea!"):
        assert recital.reply(reply), reply
    for reply in ("Tim's book sounds like fun!", "[Project Title]: Alley Reconstruction",
                  "- Water the roses at dawn", "Note: it rains today", "", "Caroline!",
                  # a line's words without its form may be the answer asked for
                  "Caroline paints landscapes by the lake every summer."):
        assert not recital.reply(reply), reply
    assert not Recital("").reply("[most relevant]\n- (1 May 2023) Tim: hi")


def test_the_guard_holds_a_first_line_only_while_it_could_recite() -> None:
    shown: list[str] = []
    guard = EchoGuard("Hello there, how are you?", shown.append, [], MEMORY)
    for piece in ("[9 August", " 2023] Tim:", " Thanks!\n", "More words"):
        guard.token(piece)
    assert shown == []                  # a recital: held to the end
    guard.end(ChatReply("[9 August 2023] Tim: Thanks!\nMore words",
                        ChatStats(None, None, 0, None)))
    assert guard.recited and guard.copied and shown == []
    guard = EchoGuard("Hello there, how are you?", shown.append, [], MEMORY)
    for piece in ("- Water", " the roses", " at dawn\n", "and dusk"):
        guard.token(piece)
    assert shown == ["- Water the roses at dawn\n", "and dusk"]  # shown once the line ended
    guard = EchoGuard("Hello there, how are you?", shown.append, [], MEMORY)
    guard.token("Ti")
    assert guard.held == "Ti"           # could still be "Tim:"
    guard.token("m's book!")
    assert guard.streaming and shown[-1] == "Tim's book!"
