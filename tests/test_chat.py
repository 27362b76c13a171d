"""The chat session: events, injection within budget, rolling compression, retries, and the
REPL through click with the scripted backend (the same code path as the HTTP backends)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cli.main import cli
from events import EventLog, Home
from events.config import Config, MemoryConfig, RollingSummaryConfig
from events.log import NewEvent
from events.types import MemoriesMined, ProfileSet, Remembered
from workers.chat.instruction import BRIEF, GENERAL
from workers.chat.session import COMPRESSED_PREFIX, ChatSession
from workers.llm import ContextLengthExceeded, ScriptedBackend
from workers.models.llama_server import MINING_MODEL

from .conftest import Stores, rules


def config(**summary: object) -> Config:
    return Config(memory=MemoryConfig(rolling_summary=RollingSummaryConfig(**summary)))  # type: ignore[arg-type]


def test_a_session_records_every_event(home: Home, stores: Stores, tmp_path: Path) -> None:
    log, store = stores
    log.append(ProfileSet(fields={"name": "Ann"}), stream="profile")
    log.append(Remembered(text="Ann keeps bees"), stream="memory")
    mined = MemoriesMined(session="old", memories=[
        {"id": "hives", "type": "user_preference", "content": "Ann's hives stand behind the shed"}])
    log.append_many([NewEvent(stream="memory", data=mined)])
    store.catch_up_all()
    backend = ScriptedBackend(rules(tmp_path, {"match": "bees", "reply": "Your bees are fine."},
                                    {"match": "hives", "reply": "Behind the shed."}))
    session = ChatSession(home, log, store, backend, config())
    session.start()
    tokens: list[str] = []
    reply = session.send("how are my bees?", on_token=tokens.append)
    session.send("and where are my hives?")
    session.end()
    assert reply.text == "Your bees are fine." and "".join(tokens) == "Your bees are fine."
    events = log.read(stream=session.id)
    assert [e.type for e in events] == ["SessionStarted", "MemoryInjected", "UserTurn",
                                        "AssistantTurn", "MemoryInjected", "UserTurn",
                                        "AssistantTurn", "SessionEnded"]
    start, note = events[1].payload, events[4].payload
    assert (start["kind"], note["kind"]) == ("start", "turn")
    assert start["injected_tokens"] <= start["budget_tokens"] == session.budget
    assert (note["memory_tokens"] == start["injected_tokens"] + note["injected_tokens"]
            <= session.budget)
    messages = [m["content"] for m in session.messages()]
    assert "- name: Ann" in messages[0]  # the profile: in the start block, the system prompt
    assert "Ann keeps bees" in messages[0]  # so is the note Ann asked to keep
    assert messages[1] == "how are my bees?"  # a short first message: nothing to wait for
    assert "hives stand behind the shed" in messages[3]  # a note for the second message
    assert messages[3].endswith("and where are my hives?")
    assert events[2].payload["text"] == "how are my bees?"  # the log keeps the user's words
    assert events[5].payload["text"] == "and where are my hives?"
    assert events[3].payload["reply_tokens"] and events[7].payload["turns"] == 2


def test_history_is_compressed_at_the_threshold(home: Home, stores: Stores, tmp_path: Path) -> None:
    log, store = stores
    long_reply = " ".join(["word"] * 120)
    backend = ScriptedBackend(rules(tmp_path,
                                    {"match": "^Summarise|decisions", "reply": "We chose X."},
                                    {"reply": long_reply}), context_window=1000)
    notes: list[str] = []
    session = ChatSession(home, log, store, backend, config(warn_at_pct=0.8, keep_turns=2),
                          notify=notes.append)
    session.start()
    for i in range(8):
        session.send(f"message {i}")
        assert (session.context_use() < 0.8
                or not session.history[0].content.startswith(COMPRESSED_PREFIX))
    compressed = log.read(types=["HistoryCompressed"])
    assert compressed and any("compressing older turns" in n for n in notes)
    assert session.history[0].content.startswith(COMPRESSED_PREFIX)
    assert len(session.history) <= 1 + 2 + 2
    assert all(len(e.payload["replaced"]) >= 1 for e in compressed)


class Recording(ScriptedBackend):
    def __init__(self, script: Path) -> None:
        super().__init__(script)
        self.requests: list[list[dict]] = []

    def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
        self.requests.append(messages)
        return super().chat(messages, **kw)


def test_a_compression_summarises_what_was_said_not_the_memory_notes(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    log, store = stores
    mined = MemoriesMined(session="old", memories=[
        {"id": "hives", "type": "user_preference", "content": "Ann's hives stand behind the shed"}])
    log.append_many([NewEvent(stream="memory", data=mined)])
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"match": "^user: hello", "reply": "Ann asked twice."},
                              {"reply": "Behind the shed."}))
    session = ChatSession(home, log, store, backend, config(keep_turns=0))
    session.start()
    session.send("hello there")
    session.send("and where are my hives again?")
    assert "behind the shed" in session.history[2].content  # the second message's note
    assert session.compress(force=True) == "Ann asked twice."
    transcript = backend.requests[-1][1]["content"]
    assert "user: and where are my hives again?" in transcript
    assert "behind the shed" not in transcript and "[memory note]" not in transcript


class OverflowOnce(ScriptedBackend):
    def __init__(self) -> None:
        super().__init__(None, context_window=4096)
        self.calls = 0

    def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == 3:  # the third turn's first try
            raise ContextLengthExceeded("context length exceeded")
        return super().chat(messages, **kw)


def test_context_length_exceeded_compresses_and_retries_once(home: Home, stores: Stores) -> None:
    log, store = stores
    session = ChatSession(home, log, store, OverflowOnce(), config())
    session.start()
    session.send("one")
    session.send("two")
    reply = session.send("three")
    assert reply.text == "echo: three"
    assert len(log.read(types=["HistoryCompressed"])) == 1


def test_an_interrupted_reply_is_recorded_as_such(home: Home, stores: Stores,
                                                  tmp_path: Path) -> None:
    log, store = stores
    backend = ScriptedBackend(rules(tmp_path, {"reply": "one two three four five"}))
    session = ChatSession(home, log, store, backend, config())
    session.start()
    seen: list[str] = []

    def stop_after_two(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 2:
            raise KeyboardInterrupt

    reply = session.send("go", on_token=stop_after_two)
    assert reply.interrupted
    (turn,) = log.read(types=["AssistantTurn"])
    assert turn.payload["interrupted"] is True and turn.payload["text"] == reply.text != ""
    assert "five" not in turn.payload["text"]


def test_chat_repl_end_to_end(home: Home, tmp_path: Path) -> None:
    script = rules(tmp_path, {"match": "tea", "reply": "Green tea it is."})
    keys = ("what tea do I like?\n/status\n/remember I like green tea\n/recall green tea\n"
            "/nope\n/exit\n")
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--script", str(script)],
                                input=keys, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "assistant> Green tea it is." in out
    assert "backend scripted, model scripted" in out
    assert "Remembered" in out and "I like green tea" in out
    assert "Unknown command /nope." in out and "Session ended (1 turns)." in out
    with EventLog(home.events_db) as log:
        types = [e.type for e in log.read()]
    assert types[:4] == ["SessionStarted", "MemoryInjected", "UserTurn", "AssistantTurn"]
    assert types[-1] == "SessionEnded"
    verified = CliRunner().invoke(cli, ["replay", "--verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "DIFFERS" not in verified.output


def test_the_compression_notice_starts_its_own_line(home: Home, tmp_path: Path) -> None:
    """The notice comes while the reply's line is still open; it must not run on from it."""
    home.config_file.write_text("memory:\n  rolling_summary: {warn_at_pct: 0.05, keep_turns: 1}\n")
    script = rules(tmp_path, {"match": "^Summarise", "reply": "We talked."},
                   {"reply": "A long enough reply." + " and so on" * 60})
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--script", str(script)],
                                input="one\ntwo\n/exit\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum(line.startswith("assistant> A long enough reply.") for line in lines) == 2
    notices = [line for line in lines if "compressing older turns]" in line]
    assert notices and all(line.startswith("[context ~") for line in notices), result.output
    assert "" not in lines[lines.index(notices[0]):lines.index(notices[0]) + 2]  # no blank line


def test_chat_with_no_server_is_a_clear_error(home: Home) -> None:
    result = CliRunner().invoke(cli, ["chat", "--backend", "ollama", "--base-url",
                                      "http://127.0.0.1:9"], input="/exit\n")
    assert result.exit_code == 1
    assert "Error:" in result.output and "Traceback" not in result.output


def test_secrets_typed_into_the_chat_stay_out_of_memory(home: Home, stores: Stores) -> None:
    log, store = stores
    secrets = ["sk-proj-Q8vN3mX0aLq7pR2tY9uW4eK1zz", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA",
               "hunter2-Pa55word"]
    first = ChatSession(home, log, store, ScriptedBackend(None), config())
    first.start()
    first.send(f"my openai key is {secrets[0]} and github token {secrets[1]}")
    first.send(f"the staging db password: {secrets[2]}")
    first.end()
    store.catch_up_all()
    second = ChatSession(home, log, store, ScriptedBackend(None), config())
    second.start()
    second.send("what is my openai key and the staging db password?")
    block = second.memory_text()
    assert "[secret]" in block and "openai key" in block
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for path in home.root.rglob("*"):
        if path.is_file() and not path.name.startswith("events.db"):
            data = path.read_bytes()
            assert not any(s.encode() in data for s in secrets), path
    for s in secrets:
        assert s not in block
    assert any(secrets[0] in e.payload.get("text", "") for e in log.read(types=["UserTurn"]))


def test_the_system_prompt_expects_the_user_to_talk_about_their_life(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """A model the instruction table does not name is told a person may tell it of their
    life or ask it something, and to reply briefly either way: told nothing of how to
    reply, the 0.5B model refused 16 of 40 such LoCoMo messages ("I'm sorry, but I can't
    assist with that"), and a refusal in the history begot more
    (benchmarks/bench_chat_refusals.py). The system message the chat sends says so."""
    log, store = stores
    backend = ScriptedBackend(rules(tmp_path, {"match": "Leeds", "reply": "Welcome to Leeds!"}))
    session = ChatSession(home, log, store, backend, config())
    session.start()
    session.send("I moved to Leeds last week; my sister is helping me unpack.")
    session.end()
    system = session.messages(tools=False)[0]
    assert system["role"] == "system"
    assert system["content"].startswith(GENERAL)
    assert ("The user may tell you about their life or ask you something; either way, reply "
            "briefly.") in system["content"]


def test_the_installed_1_5b_model_is_only_told_to_reply_briefly(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """The model `diarist serve-model --model 1.5b` serves answered in more words with the
    sentence on the user's life, and did not refuse without it: the chat that talks to it
    sends "Reply briefly." alone, before the memory's instruction."""
    log, store = stores
    backend = ScriptedBackend(rules(tmp_path, {"match": "Leeds", "reply": "Welcome to Leeds!"}),
                              MINING_MODEL.alias)
    session = ChatSession(home, log, store, backend, config())
    session.start()
    session.send("I moved to Leeds last week; my sister is helping me unpack.")
    session.end()
    content = session.messages(tools=False)[0]["content"]
    assert content.startswith(BRIEF) and "their life" not in content
    assert content.index("Reply briefly.") < content.index("Use the memory context")
