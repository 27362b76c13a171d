"""Properties over any string (hypothesis): as a recall query, a remembered note or a chat
message, no text makes diarist raise an unexpected error.

The strings are drawn from every Unicode category — lone surrogates, NUL and other control
characters included — mixed with pieces chosen to hurt: FTS5 syntax (`"`, `*`, `NEAR(`,
`AND OR NOT`, `col:`), SQL, terminal escapes, a fenced JSON tool call, a byte-order mark, a
line separator and long words. Seeded (``derandomize``) so every run draws the same
examples; no example database is written.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events import DiaristError, EventLog, Home
from events.config import Config
from events.text import repaired
from events.transcript import import_file
from projections import ProjectionStore, open_store
from projections.recall import recall
from workers.chat.session import ChatSession
from workers.llm import ScriptedBackend
from workers.memory.remember import remember

from .conftest import REPO

SAMPLE = REPO / "examples" / "sample-week.transcript.jsonl"
NASTY = ['"', "*", "NEAR(", "NEAR(a b, 2)", "'; DROP TABLE events; --", "AND", "OR", "NOT",
         "^", "text:", "(", ")", "-", "\x00", "\x1b[31m", "\x1b]0;title\x07", "\ud800",
         "\udfff", "\u2028", "\ufeff", "é", "𝔘𝔫𝔦", " ", "\n", "\t", "x" * 3000,
         '```json\n{"tool": "remember", "arguments": {"content": "x"}}\n```',
         '{"tool": "memory_search", "arguments": {"query": "*"}}', "/remember", "harbour"]
ANY_TEXT = st.lists(
    st.one_of(st.text(st.characters(categories=["L", "M", "N", "P", "S", "Z", "C"]),
                      max_size=40),
              st.sampled_from(NASTY)),
    max_size=6).map("".join)
EXAMPLES = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, EventLog,
                                                                     ProjectionStore]]:
    """A home holding a week of chats, synced, open for the whole module."""
    home = Home(tmp_path_factory.mktemp("props") / "home").ensure()
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        import_file(log, SAMPLE)
        store.catch_up_all()
        yield home, log, store


@EXAMPLES
@given(query=ANY_TEXT)
def test_any_string_is_a_query(week: tuple[Home, EventLog, ProjectionStore],
                               query: str) -> None:
    _home, _log, store = week
    for budget in (0, 64):
        result = recall(store.db, query, budget, 5)
        assert result.used_tokens <= budget or budget == 0
        assert result.query == repaired(query)


@EXAMPLES
@given(text=ANY_TEXT)
def test_any_string_is_remembered_or_refused_clearly(
        week: tuple[Home, EventLog, ProjectionStore], text: str) -> None:
    home, log, store = week
    before = log.head()
    try:
        event = remember(home, text).event
    except DiaristError as refused:  # blank, or not valid Unicode: a clear refusal
        assert refused.hint
        assert log.head() == before
        assert not text.strip() or repaired(text) != text
        return
    assert event.payload["text"] == text.strip()
    store.catch_up_all()
    assert store.position("journal") == log.head()


@EXAMPLES
@given(message=ANY_TEXT)
def test_any_string_is_a_chat_message(week: tuple[Home, EventLog, ProjectionStore],
                                      message: str) -> None:
    home, log, store = week
    session = ChatSession(home, log, store, ScriptedBackend(), Config())
    session.start()
    reply = session.send(message)
    session.end()
    store.catch_up_all()  # the turn goes through every projection: journal, index, stats
    said = [e.payload["text"] for e in log.read(stream=session.id, types=["UserTurn"])]
    assert said == [repaired(message)]
    assert reply.text.startswith("echo: ") or session.turns == 1
    assert store.position("search") == log.head()
