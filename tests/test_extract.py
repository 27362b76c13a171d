"""The shadow journal: lenient parsing of small models' answers, dedup against today's
journal, the FactsExtracted event and its projection, prompt hygiene, idempotency, replay,
the config switch and the chat REPL."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from events import EventLog, Home
from events.config import Config, MemoryConfig
from events.types import Remembered
from projections import ProjectionStore, open_store
from projections.journal import entries_for
from workers.chat.instruction import GENERAL
from workers.chat.session import ChatSession
from workers.chat.shadow_journal import EXTRACT_PROMPT, clean_facts, parse_facts, shadow_journal
from workers.llm import ScriptedBackend

from .conftest import Stores


class Recording(ScriptedBackend):
    """A scripted backend that keeps every message list it was asked."""

    def __init__(self, extraction_reply: str, chat_reply: str = "Noted.") -> None:
        super().__init__(None, model="tiny")
        self.extraction_reply, self.chat_reply = extraction_reply, chat_reply
        self.calls: list[list[dict]] = []

    def reply_for(self, messages: list[dict]) -> str:
        self.calls.append(messages)
        return (self.extraction_reply if messages[0]["content"] == EXTRACT_PROMPT
                else self.chat_reply)

    def extraction_calls(self) -> list[list[dict]]:
        return [m for m in self.calls if m[0]["content"] == EXTRACT_PROMPT]



def exchange(home: Home, log: EventLog, store: ProjectionStore, backend,
             text: str = "I keep bees in the garden"):  # type: ignore[no-untyped-def]
    session = ChatSession(home, log, store, backend, Config())
    session.start()
    session.send(text)
    assert session.last_turn is not None
    return session, *session.last_turn


@pytest.mark.parametrize("reply, expected", [
    ('["User keeps bees", "Works on diarist"]', ["User keeps bees", "Works on diarist"]),
    ('{"facts": ["User keeps bees"]}', ["User keeps bees"]),
    ('{"new": ["User keeps bees"]}', ["User keeps bees"]),
    ('```json\n["User keeps bees"]\n```', ["User keeps bees"]),
    ('Sure! Here are the facts:\n```\n["User keeps bees"]\n```\nHope it helps.',
     ["User keeps bees"]),
    ('Here you go: ["User keeps bees"] done', ["User keeps bees"]),
    ('[{"fact": "User keeps bees"}, {"text": "Works on diarist"}, {"x": 1}]',
     ["User keeps bees", "Works on diarist"]),
    ("- User keeps bees\n* Works on diarist\n1. Lives in Kent",
     ["User keeps bees", "Works on diarist", "Lives in Kent"]),
    ('"User keeps bees"', ["User keeps bees"]),
    ("[]", []), ("", []), ("None.", []), ("Nothing new", []), ("No new facts.", []),
    ("I don't think anything here is worth remembering", []), ("{not json", []), ("42", []),
])
def test_reply_shapes(reply: str, expected: list[str]) -> None:
    assert clean_facts(parse_facts(reply), []) == expected


def test_cleaning_drops_short_duplicate_known_and_caps() -> None:
    facts = ["", "ok", "User keeps bees", "user  KEEPS bees.", "Likes tea", "x" * 300,
             "a1 fact", "a2 fact", "a3 fact", "a4 fact"]
    out = clean_facts(facts, ["likes tea"])
    assert out[0] == "User keeps bees" and "Likes tea" not in out
    assert len(out) == 5 and len(out[1]) == 200
    assert all(len(f) <= 200 for f in out)


def test_facts_are_recorded_and_journalled(home: Home, stores: Stores) -> None:
    log, store = stores
    backend = Recording('["User keeps bees"]')
    session, user_id, assistant_id = exchange(home, log, store, backend)
    event = shadow_journal(home, log, session.id, user_id, assistant_id, backend, store=store)
    assert event is not None and event.type == "FactsExtracted" and event.stream == "memory"
    assert event.payload["from_events"] == [user_id, assistant_id]
    assert event.payload["refs"] == [user_id, assistant_id]
    assert event.payload["facts"] == ["User keeps bees"] and event.payload["model"] == "tiny"
    assert event.meta["causation_id"] == assistant_id
    assert event.meta["idempotency_key"] == f"facts:{assistant_id}"
    store.catch_up_all()
    date = log.get(user_id).occurred_at[:10]
    assert [e[3] for e in entries_for(store.db, date)] == ["User keeps bees"]
    assert "[tiny] User keeps bees" in (home.memory_dir / f"{date}.md").read_text()


def test_nothing_new_appends_nothing(home: Home, stores: Stores) -> None:
    log, store = stores
    backend = Recording("[]")
    session, user_id, assistant_id = exchange(home, log, store, backend)
    before = log.head()
    assert shadow_journal(home, log, session.id, user_id, assistant_id, backend,
                          store=store) is None
    assert log.head() == before and not log.read(types=["FactsExtracted"])


def test_facts_already_in_todays_journal_are_dropped(home: Home, stores: Stores) -> None:
    log, store = stores
    log.append(Remembered(text="User keeps bees"), stream="memory")
    backend = Recording('["user keeps  bees", "Bees are in the garden"]')
    session, user_id, assistant_id = exchange(home, log, store, backend)
    event = shadow_journal(home, log, session.id, user_id, assistant_id, backend, store=store)
    assert event is not None and event.payload["facts"] == ["Bees are in the garden"]
    (prompt,) = backend.extraction_calls()
    assert "- User keeps bees" in prompt[1]["content"]  # today's journal given as known


def test_prompt_holds_only_the_two_turns(home: Home, stores: Stores) -> None:
    log, store = stores
    log.append(Remembered(text="Injected-only memory about zebras"), stream="memory")
    store.catch_up_all()
    backend = Recording('["User keeps bees"]', chat_reply="Bees are lovely.")
    session, user_id, assistant_id = exchange(home, log, store, backend, "zebras and bees")
    assert "Injected-only memory about zebras" in session.memory_text()  # it was injected
    shadow_journal(home, log, session.id, user_id, assistant_id, backend, store=store)
    (messages,) = backend.extraction_calls()
    text = json.dumps(messages)
    assert messages[0] == {"role": "system", "content": EXTRACT_PROMPT} and len(messages) == 2
    assert GENERAL not in text and session.memory_text() not in text
    assert "user: zebras and bees" in messages[1]["content"]
    assert "assistant: Bees are lovely." in messages[1]["content"]
    # the journal line "Injected-only memory…" is today's journal, shown only as already known
    assert messages[1]["content"].count("zebras") == 2


def test_the_same_turn_twice_appends_once(home: Home, stores: Stores) -> None:
    log, store = stores
    backend = Recording('["User keeps bees"]')
    session, user_id, assistant_id = exchange(home, log, store, backend)
    first = shadow_journal(home, log, session.id, user_id, assistant_id, backend, store=store)
    again = shadow_journal(home, log, session.id, user_id, assistant_id, backend, store=store)
    assert first is not None and again is None
    assert len(log.read(types=["FactsExtracted"])) == 1 and len(backend.extraction_calls()) == 1


def test_replay_brings_the_lines_back_without_the_model(home: Home, stores: Stores) -> None:
    log, store = stores
    backend = Recording('["User keeps bees"]')
    session, user_id, assistant_id = exchange(home, log, store, backend)
    shadow_journal(home, log, session.id, user_id, assistant_id, backend, store=store)
    store.catch_up_all()
    calls = len(backend.calls)
    date = log.get(user_id).occurred_at[:10]
    day = home.memory_dir / f"{date}.md"
    day.unlink()
    rebuilt = CliRunner().invoke(cli, ["replay"], catch_exceptions=False)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "User keeps bees" in day.read_text()
    verified = CliRunner().invoke(cli, ["replay", "--verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "DIFFERS" not in verified.output
    assert len(backend.calls) == calls


def test_shadow_journal_config_is_validated(home: Home) -> None:
    from events.config import load_config

    assert load_config(home).memory.shadow_journal is False  # off by default
    home.config_file.write_text("memory:\n  shadow_journal: true\n")
    assert load_config(home) == Config(memory=MemoryConfig(shadow_journal=True))
    home.config_file.write_text("memory:\n  shadow_journal: yes please\n")
    result = CliRunner().invoke(cli, ["recall", "x"])
    assert result.exit_code != 0
    assert "`memory.shadow_journal` must be true or false, got 'yes please'" in result.output


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "script.jsonl"
    lines = [{"match": "New facts \\(JSON list\\)", "reply": '["User keeps bees"]'},
             {"reply": "How lovely."}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_chat_repl_with_the_shadow_journal(home: Home, tmp_path: Path) -> None:
    """No worker runs: the chat extracts on its background thread, and at session end it has
    waited for it and caught the projections up (nothing else runs after it here)."""
    result = CliRunner().invoke(
        cli, ["chat", "--backend", "scripted", "--script", str(_script(tmp_path)),
              "--shadow-journal"],
        input="I keep bees\n/exit\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "assistant> How lovely." in result.output
    assert "(journal: +1 fact(s))" in result.output
    with EventLog(home.events_db) as log:
        (facts,) = log.read(types=["FactsExtracted"])
        turns = [e.id for e in log.read(types=["UserTurn", "AssistantTurn"])]
        head = log.head()
    assert facts.payload["from_events"] == turns
    day = home.memory_dir / f"{facts.occurred_at[:10]}.md"
    assert "User keeps bees" in day.read_text()  # projected by the chat before it exited
    with open_store(home) as store:
        assert all(s.position == head for s in store.status())
    journal = CliRunner().invoke(cli, ["journal", facts.occurred_at[:10]], catch_exceptions=False)
    assert "User keeps bees" in journal.output
    verified = CliRunner().invoke(cli, ["replay", "--verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "DIFFERS" not in verified.output


def test_chat_repl_without_the_switch_extracts_nothing(home: Home, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--script",
                                      str(_script(tmp_path))],
                                input="I keep bees\n/exit\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with EventLog(home.events_db) as log:
        assert not log.read(types=["FactsExtracted"])
