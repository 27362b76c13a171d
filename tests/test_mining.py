"""Mining: sessions → typed memories and journal lines, by the heuristic extractor, the
scripted backend (the same parser and loop as a real server) and a real HTTP server."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from events import EventLog, Home
from events.transcript import import_file
from events.types import (
    HistoryCompressed,
    MemoryInjected,
    Remembered,
    SessionEnded,
    SessionStarted,
    ToolCalled,
    UserTurn,
)
from projections import open_store
from projections.memories import get_memory, list_memories
from projections.mining import mining_totals, waiting_sessions
from workers.llm import BackendUnavailable
from workers.mining.chunks import Chunk, Turn, cut_chunks, strip_injected
from workers.mining.extract import MinerSpec, extract, to_candidate
from workers.mining.heuristic import asked_notes, heuristic_candidates
from workers.mining.mine import mine
from workers.pass_lock import PassRunning, pass_lock
from workers.sync.replay import verify

from .conftest import rules, run, write_transcript
from .fake_llm import fake_llm

HEURISTIC = MinerSpec()


def turn(session: str, at: str, role: str, name: str, text: str, ref: str) -> dict:
    return {"session": session, "at": at, "role": role, "name": name, "text": text, "ref": ref}


def import_turns(home: Home, tmp_path: Path, turns: list[dict], name: str = "t.jsonl") -> None:
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / name, turns))


def week(home: Home, tmp_path: Path) -> None:
    """Two imported sessions on two days, with facts in both speakers' turns."""
    import_turns(home, tmp_path, [
        turn("w/1", "2024-03-01T09:00:00Z", "user", "Maya", "Hi Sam! I live in Berlin now.", "r1"),
        turn("w/1", "2024-03-01T09:00:30Z", "assistant", "Sam", "Nice. I prefer tea to coffee.",
             "r2"),
        turn("w/1", "2024-03-01T09:01:00Z", "user", "Maya", "How was your weekend?", "r3"),
        turn("w/2", "2024-03-05T18:00:00Z", "user", "Maya", "I adopted a greyhound called Juno.",
             "r4"),
        turn("w/2", "2024-03-05T18:00:30Z", "assistant", "Sam", "Wow! Congratulations.", "r5"),
    ])


def memories(home: Home, statuses: tuple[str, ...] = ("active",)) -> list:
    with open_store(home) as store:
        store.catch_up_all()
        return list_memories(store.db, None, statuses)


def events_of(home: Home, type_: str) -> list:
    with EventLog(home.events_db) as log:
        return log.read(types=[type_])


# --- the heuristic extractor ---------------------------------------------------------------


def test_heuristic_mines_first_person_facts_with_refs_and_journals_their_days(
        home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    report = mine(home, HEURISTIC)
    assert (report.sessions, report.chunks, report.turns) == (2, 2, 5)
    found = {m.content: m for m in memories(home)}
    # third-person statements that name who, each citing its one turn; "How was your
    # weekend?" (a question) and "Wow! Congratulations." (a reaction) are not kept
    assert set(found) == {"Maya lives in Berlin now.", "Sam prefers tea to coffee.",
                          "Maya adopted a greyhound called Juno."}
    berlin = found["Maya lives in Berlin now."]
    assert (berlin.type, berlin.source, berlin.refs, berlin.subject) == (
        "workspace_profile", "heuristic", ["r1"], "maya|home")
    assert found["Sam prefers tea to coffee."].type == "user_preference"
    # each memory on the journal of the day it was said (the sessions' own days)
    assert sorted(p.name for p in home.memory_dir.glob("*.md")) == ["2024-03-01.md",
                                                                   "2024-03-05.md"]
    day = (home.memory_dir / "2024-03-01.md").read_text()
    assert "- 09:00:00 [heuristic] Maya lives in Berlin now." in day
    assert "greyhound" in (home.memory_dir / "2024-03-05.md").read_text()
    mined = events_of(home, "MemoriesMined")
    assert [e.payload["model"] for e in mined] == ["heuristic", "heuristic"]
    assert [e.occurred_at[:10] for e in mined] == ["2024-03-01", "2024-03-05"]


def test_an_imported_assistant_under_a_models_name_is_no_source(
        home: Home, tmp_path: Path) -> None:
    # a hand-made transcript whose model is called "AI" or "Bot": its words are context,
    # as an "assistant"'s are, never a person's facts; a person's name still is one
    import_turns(home, tmp_path, [
        turn("a/1", "2024-03-01T09:00:00Z", "user", "Maya", "I live in Berlin now.", "r1"),
        turn("a/1", "2024-03-01T09:00:30Z", "assistant", "AI", "I prefer tea to coffee.", "r2"),
        turn("a/2", "2024-03-02T09:00:00Z", "user", "Maya", "I adopted a cat called Juno.", "r3"),
        turn("a/2", "2024-03-02T09:00:30Z", "assistant", "Bot", "I live in a data centre.",
             "r4"),
        turn("a/3", "2024-03-03T09:00:00Z", "user", "Maya", "Hi Sam!", "r5"),
        turn("a/3", "2024-03-03T09:00:30Z", "assistant", "Sam", "I prefer tea to coffee.", "r6"),
    ])
    mine(home, HEURISTIC)
    assert {m.content for m in memories(home)} == {
        "Maya lives in Berlin now.", "Maya adopted a cat called Juno.",
        "Sam prefers tea to coffee."}


def test_a_second_run_mines_nothing_and_new_turns_only_are_mined_later(
        home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    mine(home, HEURISTIC)
    assert mine(home, HEURISTIC).chunks == 0
    with open_store(home) as store:
        store.catch_up_all()
        assert waiting_sessions(store.db) == []
    # a longer re-import of w/2 appends one turn: only it is mined
    import_turns(home, tmp_path, [turn("w/2", "2024-03-05T18:01:00Z", "user", "Maya",
                                       "I always walk Juno before breakfast.", "r6")], "more.jsonl")
    report = mine(home, HEURISTIC)
    assert (report.chunks, report.turns, report.new) == (1, 1, 1)
    assert len(events_of(home, "MemoriesMined")) == 3


def test_a_chat_assistant_is_context_and_injected_memory_is_never_mined(home: Home) -> None:
    """What memory told the model — the injected block, a tool's result, a rolling summary,
    the assistant repeating it, a user pasting the block back — is not a new user fact."""
    s = "chat/1"
    with EventLog(home.events_db) as log:
        log.append(SessionStarted(session=s, backend="scripted", model="m"), stream=s)
        log.append(MemoryInjected(session=s, budget_tokens=512, injected_tokens=20,
                                  items=["x"]), stream=s)
        log.append(UserTurn(session=s, text="Where do I live?", name="user"), stream=s)
        log.append(ToolCalled(session=s, name="memory_search", arguments={"query": "live"},
                              result="- I live in Oslo"), stream=s)
        from events.types import AssistantTurn
        log.append(AssistantTurn(session=s, text="I live in Oslo, you told me. I love Oslo.",
                                 name="m"), stream=s)
        log.append(HistoryCompressed(session=s, replaced=[], summary="The user loves Oslo."),
                   stream=s)
        log.append(UserTurn(session=s, name="user", text=(
            "[memory context]\n[relevant experience]\n- I live in Oslo\n- I love skiing\n"
            "\nThanks. I prefer short answers.")), stream=s)
        log.append(SessionEnded(session=s, turns=2), stream=s)
    mine(home, HEURISTIC)
    assert [m.content for m in memories(home)] == ["The user prefers short answers."]


def test_strip_injected_keeps_what_follows_the_block() -> None:
    assert strip_injected("before\n[memory context]\n[knowledge]\n- a fact\n  more\nafter") == \
        "before\nafter"


def test_remember_that_questions_and_chatter() -> None:
    turns = [Turn(1, 1, "e1", "r1", "user", "user",
                  "Remember that the deploy key lives in the vault. Do you like jazz? Ok.",
                  "2024-01-01T00:00:00Z", True),
             Turn(2, 2, "e2", "r2", "user", "user", "Please remember to run make lint before "
                  "pushing. pytest doesn't work with the old plugin.", "2024-01-01T00:00:00Z",
                  True)]
    found = heuristic_candidates(Chunk("s", turns))
    assert [(c.content, c.kind, c.confidence, c.turns) for c in found] == [
        ("The deploy key lives in the vault", "recommendation", 0.9, [1]),
        ("Remember to run make lint before pushing", "recommendation", 0.9, [2]),
        ("pytest doesn't work with the old plugin.", "pitfall", 0.6, [2])]
    # a person's own words in the third person, relative time resolved from the turn
    said = Turn(1, 1, "e1", "r1", "user", "Maya", "Yesterday I moved to Porto! Do you like it? "
                "Haha, sure.", "2024-03-01T10:00:00Z", True)
    [moved] = heuristic_candidates(Chunk("s", [said]))
    assert (moved.content, moved.subject, moved.type) == (
        "On 29 February 2024 Maya moved to Porto.", "maya|home", "workspace_profile")
    assert found[1].action == "run make lint before pushing" and found[1].type == "project_fact"
    assert found[2].type == "tool_use"


def test_a_habit_is_a_workflow_and_a_thought_with_never_or_always_is_not() -> None:
    from workers.mining.heuristic import type_of

    assert type_of("I usually do a warm-up before playing.") == "workflow"
    assert type_of("I never realized how much the compass changed trade.") is None
    assert type_of("I always wanted to see the fjords.") is None
    assert type_of("I always feel like I'm walking on eggshells with papers.") is None
    assert type_of("I always struggle with staying consistent.") is None
    assert type_of("I go running every morning.") == "workflow"
    assert type_of("I've been waking up at 7:30 every day, and I want to make the most of"
                   " it.") == "workflow"          # the wish comes after the habit
    # a wish or a question about a routine is none
    assert type_of("I also want to set a reminder to stretch every morning.") is None
    assert type_of("I'm looking forward to not taking meds every day.") is None
    assert type_of("I usually do yoga after meditation, so I'm wondering if I should come"
                   " earlier.") is None
    # a habit in a clause after the main one, which MEMORY.md does not show, types nothing
    said = Turn(1, 1, "e1", "r1", "user", "user", "I'm also worried about my laptop's battery"
                " life, as I often work on the go.", "2024-01-01T00:00:00Z", True)
    assert [c.type for c in heuristic_candidates(Chunk("s", [said]))] == ["user_preference"]



@pytest.mark.parametrize(("sentence", "type_"), [
    ("I'm planning to go to the beach near Santa Cruz.", "user_preference"),   # "go", a verb
    ("I'm planning to build a home on my new land.", "user_preference"),
    ("I'm going to finish the script for my next movie.", "user_preference"),
    ("I'm planning to use the Publix app for the cashback.", "user_preference"),
    ("I'm planning to move the build script to the new server.", "project_fact"),  # two
    ("I'm going to pin pytest below 8.", "project_fact"),     # a word of software only
])
def test_a_plan_is_about_a_project_only_when_it_is_about_software(sentence: str,
                                                                  type_: str) -> None:
    """Words that are software's and also everyday English ("go", "test", "script",
    "build", "app") make a project fact only two together."""
    from workers.mining.heuristic import type_of

    assert type_of(sentence) == type_

@pytest.mark.parametrize(("sentence", "type_"), [
    # work on software of one's own is a project fact; on anything else, a life statement
    ("I'm building a Flask app called ledgerly, it tracks shared household expenses.",
     "project_fact"),
    ("We're migrating the backend from Postgres to SQLite.", "project_fact"),
    ("I'm building a treehouse for my kids.", "user_preference"),
    ("I'm developing a new recipe for my sourdough starter.", "user_preference"),
    # a tool in use, told in any tense; a team's habit is a workflow as a person's is
    ("I've been using Matplotlib and Seaborn for data visualization in Python.", "tool_use"),
    ("I'm using Docker for the dev database.", "tool_use"),
    ("We always run make lint before pushing.", "workflow"),
    ("We usually watch a film and have pizza on Fridays.", None),   # a family's: no work
    # "API" is also a brand of aquarium care: alone it is no software
    ("I've been using API CO2 booster for my plants.", "user_preference"),
])
def test_a_coding_users_work_is_typed_as_work(sentence: str, type_: str | None) -> None:
    from workers.mining.heuristic import type_of

    assert type_of(sentence) == type_


def test_a_tool_note_is_about_software_when_the_chat_shows_code() -> None:
    """"click" is no word of software on its own; in a chat whose turns show code (the
    assistant's fenced block), "I'm using click for the commands" is a tool note, and work
    on a project there a project's; not a plan (a project fact heads every block). The same
    words in a chat with no code stay preferences."""
    user = Turn(1, 1, "e1", "r1", "user", "Maya",
                "I'm using click for the commands. I'm building tidewatch for my sailing club."
                " I'm going to visit my mum this weekend.",
                "2026-03-02T09:00:00Z", source=True)
    code = Turn(2, 2, "e2", "r2", "assistant", "assistant",
                "Like this:\n```python\n@click.group()\ndef cli():\n    pass\n```",
                "2026-03-02T09:00:30Z", source=False)
    plain = Turn(2, 2, "e2", "r2", "assistant", "assistant", "Sounds good, go for it.",
                 "2026-03-02T09:00:30Z", source=False)
    assert [c.type for c in heuristic_candidates(Chunk("s", [user, code]))] == [
        "tool_use", "project_fact", "user_preference"]
    assert [c.type for c in heuristic_candidates(Chunk("s", [user, plain]))] == [
        "user_preference", "user_preference", "user_preference"]
    # a note asked to be kept is typed so too
    asked = dataclasses.replace(user, text="Please remember that I use uv for packaging.")
    assert [c.type for c in asked_notes(Chunk("s", [asked, code]))] == ["tool_use"]
    assert [c.type for c in asked_notes(Chunk("s", [asked, plain]))] == ["user_preference"]


def test_a_failure_and_the_fix_said_after_it_are_one_memory() -> None:
    """A coding session's failure, then its fix: one tool note that tells both, citing both
    turns; the failure alone would stay in MEMORY.md as if still true."""
    said = [(1, "pytest keeps failing on CI with 'could not connect to server' errors."),
            (2, "Yes, that was it, I added a health check to the postgres service and it "
                "passes now.")]
    turns = [Turn(n, n, f"e{n}", f"r{n}", "user", "user", text, "2024-03-01T10:00:00Z", True)
             for n, text in said]
    [note] = [c for c in heuristic_candidates(Chunk("s", turns)) if c.type == "tool_use"]
    assert note.content == ("pytest keeps failing on CI with 'could not connect to server' "
                            "errors; fixed: the user added a health check to the postgres "
                            "service and it passes now.")
    assert (note.kind, note.turns) == ("workaround", [1, 2])
    # a failure with no fix after it stays one of its own
    [failure] = heuristic_candidates(Chunk("s", turns[:1]))
    assert (failure.kind, failure.content) == ("pitfall", said[0][1])
    # … unless its speaker says later that it works, though not how: no longer true
    works = [*turns[:1], Turn(2, 2, "e2", "r2", "assistant", "assistant", "Set TZ=UTC in the "
                              "workflow, then.", "2024-03-01T10:01:00Z", False),
             Turn(3, 3, "e3", "r3", "user", "user", "done, passes w/ TZ=UTC locally too. nice",
                  "2024-03-01T10:02:00Z", True)]
    assert heuristic_candidates(Chunk("s", works)) == []
    # … as someone else saying so does not
    works[2] = dataclasses.replace(works[2], speaker="Sam")
    assert [c.kind for c in heuristic_candidates(Chunk("s", works))] == ["pitfall"]


def test_already_active_memories_are_reinforced_not_mined_again(home: Home,
                                                                 tmp_path: Path) -> None:
    import datetime as dt

    with EventLog(home.events_db) as log:
        note = log.append(Remembered(text="The user prefers tea to coffee."),
                          stream="memory", occurred_at=dt.datetime(2024, 2, 1, tzinfo=dt.UTC))
    import_turns(home, tmp_path, [
        turn("s", "2024-03-01T09:00:00Z", "user", "user", "Well, I PREFER tea to coffee!", "r1"),
        turn("s", "2024-03-01T09:01:00Z", "user", "user", "I prefer tea to coffee.", "r2"),
        turn("s", "2024-03-01T09:02:00Z", "user", "user", "I drink it black.", "r3")])
    report = mine(home, HEURISTIC)
    assert (report.new, report.reinforced, report.dropped) == (1, 1, 2)
    again = get_memory_now(home, note.id)
    assert again.refs == ["r1", "r2"] and again.last_seen == "2024-03-01T09:02:00.000000Z"
    assert [m.content for m in memories(home)] == ["The user prefers tea to coffee.",
                                                   "The user drinks it black."]
    assert get_memory_now(home, note.id).relevancy == 1.0


def get_memory_now(home: Home, memory_id: str):  # type: ignore[no-untyped-def]
    with open_store(home) as store:
        store.catch_up_all()
        return get_memory(store.db, memory_id)


def test_long_sessions_are_cut_into_chunks_of_one_day_within_the_budget() -> None:
    turns = [Turn(0, i, f"e{i}", f"r{i}", "user", "Ann", f"message {i} " + "word " * 30,
                  f"2024-01-0{1 + i // 30}T10:{i % 60:02d}:00Z", True) for i in range(60)]
    chunks = cut_chunks("s", turns, chunk_tokens=400)
    assert len(chunks) > 4 and sum(len(c.turns) for c in chunks) == 60
    assert all(len({t.at[:10] for t in c.turns}) == 1 for c in chunks)
    assert [t.n for t in chunks[1].turns] == list(range(1, len(chunks[1].turns) + 1))
    assert cut_chunks("s", turns, chunk_tokens=400) == chunks  # deterministic


def test_sessions_that_have_not_ended_wait_until_idle(home: Home) -> None:
    import datetime as dt

    with EventLog(home.events_db) as log:
        log.append(UserTurn(session="chat/open", text="I love sailing", name="user"),
                   stream="chat/open", occurred_at=dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC))
    assert mine(home, HEURISTIC, now=dt.datetime(2024, 1, 1, 13, tzinfo=dt.UTC)).chunks == 0
    assert mine(home, HEURISTIC, now=dt.datetime(2024, 1, 1, 19, tzinfo=dt.UTC)).new == 1


# --- a model: the scripted backend ---------------------------------------------------------


def scripted(tmp_path: Path, *lines: dict) -> MinerSpec:
    return MinerSpec("scripted", script=str(rules(tmp_path, *lines)))


def answer(*memories: dict) -> str:
    return json.dumps({"memories": list(memories)})


def test_a_model_gives_typed_memories_with_kind_confidence_tags_subject_and_refs(
        home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    spec = scripted(tmp_path, {"match": "Berlin", "reply": "Sure!\n```json\n" + answer(
        {"type": "workspace_profile", "content": "Maya lives in Berlin", "subject": "home city",
         "kind": "pattern", "confidence": 0.9, "turns": [1]},
        {"type": "user_preference", "content": "Sam prefers tea to coffee", "subject": "drink",
         "kind": "recommendation", "confidence": 1.4, "turns": [2, 99]},
        {"type": "user_preference", "content": "Maya enjoys quantum chromodynamics",
         "subject": "", "kind": "pattern", "confidence": 0.8, "turns": [3]},
        {"type": "habit", "content": "Sam drinks tea", "subject": "", "kind": "whatever",
         "turns": []}) + "\n```\nHope this helps."},
        {"reply": answer()})
    report = mine(home, spec)
    assert (report.calls, report.new, report.failures, report.model) == (2, 3, 0, "scripted")
    found = {m.content: m for m in memories(home)}
    assert set(found) == {"Maya lives in Berlin", "Sam prefers tea to coffee", "Sam drinks tea"}
    maya = found["Maya lives in Berlin"]
    assert (maya.type, maya.kind, maya.confidence, maya.subject, maya.refs, maya.source) == (
        "workspace_profile", "pattern", 0.9, "maya|home city", ["r1"], "scripted")
    tea = found["Sam prefers tea to coffee"]
    assert (tea.confidence, tea.refs, tea.kind, tea.tags) == (
        1.0, ["r2"], "recommendation", ["prefers", "tea", "coffee"])
    drinks = found["Sam drinks tea"]  # unknown type and kind mapped; turns found by its words
    assert (drinks.type, drinks.kind, drinks.refs, drinks.confidence) == (
        "user_preference", "pattern", ["r2"], 0.8)
    assert "[scripted] Maya lives in Berlin" in (home.memory_dir / "2024-03-01.md").read_text()


def test_a_models_memory_is_written_as_a_statement_of_the_turn_it_cites(home: Home,
                                                                       tmp_path: Path) -> None:
    """As the heuristic's statements are: the speaker's own words left in it in the third
    person, "last month" said on 10 March 2024 dated February."""
    import_turns(home, tmp_path, [turn("m/1", "2024-03-10T18:00:00Z", "user", "Maya",
                                       "I moved to Lisbon last month, I love my street.", "r1")])
    spec = scripted(tmp_path, {"reply": answer(
        {"type": "workspace_profile", "content": "Maya moved to Lisbon last month",
         "subject": "home city", "turns": [1]},
        {"type": "user_preference", "content": "Maya moved and I love my street",
         "turns": [1]})})
    assert mine(home, spec).new == 2
    assert sorted(m.content for m in memories(home)) == [
        "Maya moved and Maya loves Maya's street", "Maya moved to Lisbon in February 2024"]


def test_a_broken_answer_is_retried_once_with_the_error_shown(home: Home,
                                                              tmp_path: Path) -> None:
    week(home, tmp_path)
    spec = scripted(tmp_path,
                    {"match": "could not be used", "reply": answer(
                        {"type": "user_preference", "content": "Maya lives in Berlin",
                         "subject": "", "kind": "pattern", "confidence": 0.8, "turns": [1]})},
                    {"match": "Berlin", "reply": "Here are the memories: none of them JSON"},
                    {"reply": answer()})
    report = mine(home, spec)
    assert (report.calls, report.failures, report.new) == (3, 0, 1)
    assert events_of(home, "MiningFailed") == []


def test_two_broken_answers_record_a_failure_and_the_heuristic_stands_in(
        home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    spec = scripted(tmp_path, {"match": "Berlin|could not be used", "reply": "I cannot do that."},
                    {"reply": answer()})
    report = mine(home, spec)
    assert report.failures == 1
    [failed] = events_of(home, "MiningFailed")
    assert failed.payload["session"] == "w/1" and "not valid JSON" in failed.payload["error"]
    assert failed.payload["reply"] == "I cannot do that."
    mined = {e.payload["session"]: e.payload for e in events_of(home, "MemoriesMined")}
    assert mined["w/1"]["model"] == "heuristic" and "not valid JSON" in mined["w/1"]["fallback"]
    assert "Maya lives in Berlin now." in [m.content for m in memories(home)]
    with open_store(home) as store:  # not lost: the session counts as mined, with a failure
        assert mining_totals(store.db) | {} == {"sessions": 2, "waiting": 0, "chunks": 2,
                                                "memories": 2, "failures": 1}


def test_an_unreachable_server_stops_the_pass_and_loses_nothing(home: Home,
                                                                tmp_path: Path) -> None:
    week(home, tmp_path)
    spec = MinerSpec("openai", model="m", base_url="http://127.0.0.1:9", timeout=2)
    with pytest.raises(BackendUnavailable):
        mine(home, spec)
    assert events_of(home, "MemoriesMined") == [] and events_of(home, "MiningFailed") == []
    assert mine(home, HEURISTIC).sessions == 2  # nothing was marked mined


def test_truncated_and_single_quoted_answers_are_recovered() -> None:
    chunk = Chunk("s", [Turn(1, 1, "e", "r1", "user", "Ann", "I use neovim with lazy.nvim",
                             "2024-01-01T00:00:00Z", True)])
    good = to_candidate({"content": "Ann uses neovim", "turns": [1]}, chunk)
    assert good is not None and good.turns == [1]
    assert to_candidate({"content": "Ann hates quantum physics", "turns": [1]}, chunk) is None
    assert to_candidate("Ann uses neovim with lazy", chunk) is not None
    from workers.llm.lenient_json import loads_lenient
    from workers.mining.extract import memory_items

    truncated = '{"memories": [{"content": "Ann uses neovim", "turns": [1]}, {"content": "An'
    assert memory_items(loads_lenient(truncated)) == [{"content": "Ann uses neovim",
                                                       "turns": [1]}]
    assert memory_items(loads_lenient("[{'content': 'Ann uses neovim', 'turns': [1]}]"))
    # the cap cut a memory after its text was whole: kept, cited by its words (turn 1)
    cut = ('{"memories": [{"content": "Ann uses neovim", "turns": [1]}, '
           '{"content": "Ann uses lazy.nvim", "type": "tool_use", "subject": "plugin man')
    items = memory_items(loads_lenient(cut))
    assert items == [{"content": "Ann uses neovim", "turns": [1]},
                     {"content": "Ann uses lazy.nvim", "type": "tool_use"}]
    kept = to_candidate(items[1], chunk)
    assert kept is not None and kept.turns == [1] and kept.content == "Ann uses lazy.nvim"


def test_dry_run_appends_nothing(home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    with EventLog(home.events_db) as log:
        head = log.head()
    report = mine(home, HEURISTIC, dry_run=True)
    assert report.new == 3 and report.dry_run
    with EventLog(home.events_db) as log:
        assert log.head() == head


def test_two_mining_passes_never_run_at_once(home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    with pass_lock(home, "mine"):
        with pytest.raises(PassRunning):
            mine(home, HEURISTIC)
        result = run("mine", ok=False)
        assert result.exit_code == 1 and "another mine pass is running" in result.output
    assert mine(home, HEURISTIC).new == 3


def test_replay_reproduces_mined_memories_and_journals_without_a_model(
        home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    mine(home, scripted(tmp_path, {"match": "Berlin", "reply": answer(
        {"type": "workspace_profile", "content": "Maya lives in Berlin", "subject": "home",
         "kind": "pattern", "confidence": 0.9, "turns": [1]})}, {"reply": answer()}))
    assert all(v.same for v in verify(home))
    before = {p.name: p.read_text() for p in home.memory_dir.glob("*.md")}
    run("replay")
    assert {p.name: p.read_text() for p in home.memory_dir.glob("*.md")} == before


# --- a real HTTP server (the openai backend) -------------------------------------------------


def test_the_openai_backend_sends_the_schema_and_keeps_the_prompt_prefix_cached(
        home: Home, tmp_path: Path) -> None:
    import_turns(home, tmp_path, [
        turn(f"s{i}", f"2024-01-0{i + 1}T10:00:00Z", "user", "Ann", f"I like topic {i}", f"r{i}")
        for i in range(3)])
    with fake_llm() as llm:
        report = mine(home, MinerSpec("openai", base_url=llm.url, constrained=True))
        bodies = llm.chat_calls()
    assert report.new == 3 and report.model == "fake-miner"
    assert {b["messages"][0]["content"] for b in bodies} == {bodies[0]["messages"][0]["content"]}
    assert all(b["cache_prompt"] is True and b["temperature"] == 0 and b["stream"] is False
               for b in bodies)
    assert bodies[0]["response_format"]["type"] == "json_schema"
    assert sorted(m.content for m in memories(home)) == [f"Ann likes topic {i}" for i in range(3)]


def test_the_schema_is_sent_only_when_mining_json_schema_is_true(
        home: Home, tmp_path: Path) -> None:
    from workers.night import mine_now, spec_for

    sent = {}
    for setting in ("default", "true"):
        if setting != "default":
            home.config_file.write_text(f"mining:\n  json_schema: {setting}\n", encoding="utf-8")
        import_turns(home, tmp_path, [turn(f"s-{setting}", "2024-01-01T10:00:00Z", "user",
                                           "Ann", f"I like green tea {setting}", f"r-{setting}")],
                     f"{setting}.jsonl")
        with fake_llm() as llm:
            report = mine_now(home, spec_for(home, backend="openai", base_url=llm.url))
            sent[setting] = ["response_format" in b for b in llm.chat_calls()]
        assert report.new == 1  # parsed leniently either way
    assert sent == {"default": [False], "true": [True]}


def test_parallel_extraction_asks_several_chunks_at_once_and_appends_the_same_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    talk = [turn(f"s{i}", f"2024-01-{i + 1:02d}T10:00:00Z", "user", "Ann", f"I like topic {i}",
                 f"r{i}") for i in range(7)]
    mined = {}
    for parallel in (1, 3):
        home = Home(tmp_path / f"p{parallel}").ensure()
        monkeypatch.setenv("DIARIST_HOME", str(home.root))
        home.config_file.write_text(f"mining:\n  parallel: {parallel}\n", encoding="utf-8")
        import_turns(home, tmp_path, talk, f"t{parallel}.jsonl")
        with fake_llm(delay=0.3) as llm:
            report = mine(home, MinerSpec("openai", base_url=llm.url))
        assert report.chunks == 7 and report.new == 7
        assert llm.most_at_once == parallel
        mined[parallel] = [(e.meta["idempotency_key"],
                            [{k: v for k, v in m.items() if k != "events"}  # ids of this log
                             for m in e.payload["memories"]])
                           for e in events_of(home, "MemoriesMined")]
    assert mined[3] == mined[1]  # the same events, in the chunks' order


def test_the_mine_command_prints_a_summary(home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    out = run("mine", "--dry-run").output
    assert "Dry run: mined 2 session(s), 2 chunk(s) of 5 turns with heuristic" in out
    assert "+ workspace_profile Maya lives in Berlin now." in out
    out = run("mine").output
    assert "memories: 3 new" in out and "journals: 2 day(s), 2024-03-01 … 2024-03-05" in out
    assert "mined 0 session(s)" in run("mine").output


def test_extract_without_source_lines_asks_nothing(tmp_path: Path) -> None:
    chunk = Chunk("chat/x", [Turn(1, 1, "e", "r", "assistant", "m", "I love Oslo",
                                  "2024-01-01T00:00:00Z", False)])
    spec = scripted(tmp_path, {"reply": "not json"})
    result = extract(chunk, spec)
    assert (result.calls, result.candidates) == (0, [])


def test_a_model_profile_that_is_no_identity_fact_is_retyped(tmp_path: Path) -> None:
    chunk = Chunk("s", [Turn(1, 1, "e", "r1", "user", "Nora",
                             "I adopted a cat called Biscuit and I live in Porto",
                             "2024-01-01T00:00:00Z", True)])
    cat = to_candidate({"content": "Nora adopted a cat", "type": "workspace_profile",
                        "turns": [1]}, chunk)
    home = to_candidate({"content": "Nora lives in Porto", "type": "workspace_profile",
                         "turns": [1]}, chunk)
    assert cat is not None and cat.type == "user_preference" and cat.kind == "pattern"
    assert home is not None and home.type == "workspace_profile"


def test_no_secret_reaches_the_mining_prompt(home: Home, tmp_path: Path) -> None:
    import_turns(home, tmp_path, [turn("s", "2024-01-01T10:00:00Z", "user", "Ann",
                                       "I like my token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                                       "r1")])
    with fake_llm() as llm:
        mine(home, MinerSpec("openai", base_url=llm.url))
        bodies = json.dumps(llm.chat_calls())
    assert "[secret]" in bodies and "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in bodies


def test_forgetting_a_turn_forgets_what_was_mined_from_it(home: Home, tmp_path: Path) -> None:
    week(home, tmp_path)
    mine(home, HEURISTIC)
    with EventLog(home.events_db) as log:
        berlin_turn = log.get("r1")
    run("memory", "forget", berlin_turn.id)  # by the turn's event id
    assert "Berlin" not in (home.memory_dir / "2024-03-01.md").read_text()
    run("memory", "forget", "r4")  # by its ref
    assert not (home.memory_dir / "2024-03-05.md").exists()
    assert [m.content for m in memories(home)] == ["Sam prefers tea to coffee."]


def test_the_pass_reports_its_progress_turn_by_turn(home: Home, tmp_path: Path) -> None:
    import contextlib

    week(home, tmp_path)
    seen: list[tuple[str, int, list[int]]] = []

    @contextlib.contextmanager
    def recording(total: int, label: str):  # type: ignore[no-untyped-def]
        steps: list[int] = []
        seen.append((label, total, steps))
        yield steps.append

    mine(home, HEURISTIC, progress=recording)
    [(label, total, steps)] = seen
    assert (label, total) == ("Mining", 5) and sum(steps) == 5 and len(steps) == 2  # 2 chunks


def test_the_mining_model_and_server_are_chosen_apart_from_the_chats(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from events.config import Config, LLMConfig
    from workers.mining.extract import MINING_URL_ENV, miner_spec

    monkeypatch.delenv(MINING_URL_ENV, raising=False)
    assert not miner_spec(Config()).uses_model  # no model configured: the heuristic
    chat_only = Config(llm=LLMConfig(backend="openai", model="qwen-0.5b",
                                     base_url="http://chat/v1"))
    spec = miner_spec(chat_only)
    assert (spec.backend, spec.model, spec.base_url) == ("openai", "qwen-0.5b", None)
    night = Config(llm=LLMConfig(backend="openai", model="qwen-0.5b", base_url="http://chat/v1",
                                 mining_model="qwen2.5-coder-1.5b",
                                 mining_base_url="http://night/v1"))
    spec = miner_spec(night)
    assert (spec.model, spec.base_url) == ("qwen2.5-coder-1.5b", "http://night/v1")
    monkeypatch.setenv(MINING_URL_ENV, "http://env/v1")
    assert miner_spec(night).base_url == "http://env/v1"
    assert miner_spec(night, base_url="http://flag/v1", model="m").model == "m"
    assert miner_spec(night, base_url="http://flag/v1").base_url == "http://flag/v1"
    assert not miner_spec(night, heuristic=True).uses_model
