"""Recall: fixed head order, budget, dedupe, weighting, the JSON contract and the CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from events import EventLog, Home
from events.transcript import import_file
from events.types import (
    AssistantTurn,
    LongTermRewritten,
    MemoriesMined,
    MemoryFlagged,
    ProfileSet,
    ProjectFactsDetected,
    Remembered,
    UserTurn,
)
from projections import ProjectionStore
from projections.recall import recall
from projections.tokens import estimate

from .conftest import make_turns, run, write_transcript


def seed(log: EventLog) -> None:
    log.append(ProfileSet(fields={"name": "Ann", "languages": "Python, Go"}), stream="profile")
    log.append(ProjectFactsDetected(facts=[{"key": "build", "value": "hatch",
                                            "sources": ["pyproject.toml"]}]),
               stream="profile")
    log.append(LongTermRewritten(content="# Preferences\n- Ann prefers small commits\n"),
               stream="memory")
    for i in range(30):
        log.append(UserTurn(session="s", text=f"we talked about gardening tomatoes day {i}"),
                   stream="s", ref=f"c:{i}")
    log.append(Remembered(text="Ann grows tomatoes on the balcony", type="user_preference"),
               stream="memory")


def test_order_is_profile_facts_memory_md_then_scored(log: EventLog,
                                                      store: ProjectionStore) -> None:
    seed(log)
    store.catch_up_all()
    result = recall(store.db, "tomatoes balcony", budget=0, k=5)
    sources = [i.source for i in result.items]
    assert sources[:4] == ["workspace_profile", "workspace_profile", "project_fact", "long_term"]
    assert len(sources) == 4 + 5
    assert result.items[4].content == "Ann grows tomatoes on the balcony"  # best match first
    assert result.items[2].content == "build: hatch"


def test_many_mined_project_facts_leave_room_for_the_scored_part(
        log: EventLog, store: ProjectionStore) -> None:
    """The head (profile and project facts) takes at most a quarter of the budget; the facts
    that do not fit compete in the scored part, where a relevant one is still found."""
    from projections.weights import HEAD_FACTS_SHARE

    seed(log)
    log.append(MemoriesMined(session="m", memories=[{  # the oldest fact: no room in the head
        "id": "old", "type": "project_fact", "confidence": 0.8,
        "content": "The deploy script for Kestrel lives in tools/ship.sh"}]), stream="memory")
    facts = [{"id": f"f{i}", "type": "project_fact", "confidence": 0.8,
              "content": f"Project Zephyr milestone {i} uses the module number {i}"}
             for i in range(200)]
    log.append(MemoriesMined(session="m", memories=facts), stream="memory")
    store.catch_up_all()
    zephyr = "Which module number does a Zephyr milestone use?"
    head = recall(store.db, zephyr, budget=512, k=0).items
    facts = [i for i in head if i.source in ("workspace_profile", "project_fact")]
    assert sum(i.source == "project_fact" for i in facts) > 1
    assert sum(i.tokens for i in facts) <= HEAD_FACTS_SHARE * 512
    assert "old" not in {i.id for i in head}  # it does not answer the question
    assert "old" not in {i.id for i in recall(store.db, "", budget=512, k=0).items}  # newest
    # first: with no question the facts that answer nothing fill the head
    result = recall(store.db, "where is the Kestrel deploy script?", budget=512, k=10)
    assert any(i.id == "old" for i in result.items)  # found, not crowded out
    assert any(i.source == "turn" for i in recall(store.db, "gardening tomatoes day 7",
                                                  budget=512, k=10).items)


def test_a_question_gets_only_the_project_facts_that_answer_it(
        log: EventLog, store: ProjectionStore) -> None:
    """Within a budget a question's head holds the project facts that share its words (an
    unrelated one, read first, misleads a small model); the profile stays, and a chat's
    start block (the whole head) and a recall without a budget hold them all."""
    seed(log)
    log.append(MemoriesMined(session="m", memories=[{
        "id": "ship", "type": "project_fact", "confidence": 0.8,
        "content": "On 2 May Ann chose to ship the Kestrel release by hand"}]), stream="memory")
    store.catch_up_all()

    def facts(query: str, budget: int, **kw: bool) -> set[str]:
        items = recall(store.db, query, budget=budget, k=3, **kw).items
        return {i.id for i in items if i.source == "project_fact"}

    asked = recall(store.db, "gardening tomatoes", budget=512, k=3).items
    assert "ship" not in {i.id for i in asked}
    assert [i.source for i in asked[:2]] == ["workspace_profile", "workspace_profile"]
    assert "ship" in facts("how did Ann ship the Kestrel release?", 512)
    assert "ship" in facts("gardening tomatoes", 0)
    assert "ship" in facts("gardening tomatoes", 512, whole_long_term=True)


def test_a_mined_fact_that_does_not_read_alone_heads_no_block(
        log: EventLog, store: ProjectionStore) -> None:
    """The head is read first in every block: a mined fact there must read on its own, as a
    scored one and a MEMORY.md line must ("this transducer": which one?)."""
    seed(log)
    log.append(MemoriesMined(session="m", memories=[
        {"id": "this", "type": "project_fact", "confidence": 0.8,
         "content": "Ann is going to be using this pressure transducer for the airspeed rig"},
        {"id": "rig", "type": "project_fact", "confidence": 0.8,
         "content": "Ann is building an airspeed rig with a pitot tube"}]), stream="memory")
    store.catch_up_all()
    head = [i.id for i in recall(store.db, "", budget=512, k=0).items
            if i.source == "project_fact"]
    assert "rig" in head and "this" not in head
    assert "this" not in [i.id for i in recall(store.db, "Which pressure transducer is Ann "
                                                "using?", budget=512, k=5).items]


@pytest.mark.parametrize("budget", [20, 50, 64, 100, 300, 512])
def test_budget_is_never_exceeded(log: EventLog, store: ProjectionStore, budget: int) -> None:
    seed(log)
    store.catch_up_all()
    result = recall(store.db, "gardening tomatoes", budget=budget, k=100)
    assert result.used_tokens <= budget
    assert result.used_tokens == sum(i.tokens for i in result.items)
    assert all(i.tokens == estimate(i.content) for i in result.items)
    if budget >= 64:
        assert result.items[0].source == "workspace_profile"  # factual memory first


def test_same_content_from_two_sources_counts_once(log: EventLog, store: ProjectionStore) -> None:
    log.append(Remembered(text="Ann likes rye bread"), stream="memory")  # journal + memory item
    store.catch_up_all()
    result = recall(store.db, "rye bread", budget=0, k=10)
    assert [i.content for i in result.items] == ["Ann likes rye bread"]


def test_turn_hits_come_with_the_reply(log: EventLog, store: ProjectionStore) -> None:
    log.append(UserTurn(session="s", text="I adopted a greyhound", name="Ann"), stream="s",
               ref="c:1")
    log.append(UserTurn(session="s", text="Lovely! What is its name?", name="Bob"), stream="s",
               ref="c:2")
    log.append(UserTurn(session="t", text="Unrelated", name="Bob"), stream="t", ref="c:3")
    store.catch_up_all()
    (item,) = recall(store.db, "greyhound", budget=0, k=10).items
    assert item.content == "Ann: I adopted a greyhound\nBob: Lovely! What is its name?"
    assert item.refs == ["c:1", "c:2"]


def test_flagged_and_superseded_memories_weigh_less_or_vanish(log: EventLog,
                                                              store: ProjectionStore) -> None:
    mined = [{"id": f"m{i}", "type": "workflow", "content": f"run the linter before commit {i}"}
             for i in range(2)]
    log.append(MemoriesMined(session="s", memories=mined), stream="memory")
    store.catch_up_all()
    first = [i.id for i in recall(store.db, "linter commit", budget=0, k=10).items]
    for _ in range(3):
        log.append(MemoryFlagged(ids=[first[0]]), stream="memory")
    for _ in range(8):
        log.append(MemoryFlagged(ids=[first[1]]), stream="memory")  # archived
    store.catch_up_all()
    after = recall(store.db, "linter commit", budget=0, k=10).items
    memory_ids = [i.id for i in after if i.source == "memory"]
    assert first[1] not in memory_ids


def test_a_mined_statement_that_needs_its_turn_is_no_recall_item(
        log: EventLog, store: ProjectionStore) -> None:
    """"Joanna named her Tilly" stands in for nothing: its turn, which names the turtle, is
    what recall shows; a person's own note in the same words stays theirs."""
    log.append(UserTurn(session="s", text="My new turtle! I named her Tilly.", name="Joanna"),
               stream="s", ref="c:1")
    log.append(MemoriesMined(session="s", model="heuristic", memories=[
        {"id": "loose", "type": "user_preference", "content": "Joanna named her Tilly.",
         "refs": ["c:1"]},
        {"id": "alone", "type": "user_preference", "content": "Joanna named the turtle Tilly.",
         "refs": ["c:1"]}]), stream="memory")
    log.append(Remembered(text="Named her Tilly", type="user_preference"), stream="memory")
    store.catch_up_all()
    found = {i.id for i in recall(store.db, "Tilly named", budget=0, k=10).items}
    assert "alone" in found and "loose" not in found
    assert any(i.source == "turn" for i in recall(store.db, "Tilly named", 0, 10).items)
    assert any(i.content == "Named her Tilly" for i in recall(store.db, "Tilly named", 0, 10).items)


def test_without_vectors_recall_answers_from_fts(log: EventLog, store: ProjectionStore) -> None:
    seed(log)
    store.catch_up_all()
    result = recall(store.db, "gardening", budget=512, k=10, semantic=None)
    assert any(i.source == "turn" for i in result.items)


def test_cli_recall_json_contract(home: Home, tmp_path: Path) -> None:
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(20))))
    run("sync", "--no-embed")
    out = json.loads(run("recall", "topic 3", "--json", "--k", "3", "--budget", "0").stdout)
    assert set(out) == {"query", "budget", "used_tokens", "items"}
    assert out["query"] == "topic 3" and out["budget"] == 0
    assert len(out["items"]) == 3
    for item in out["items"]:
        assert set(item) == {"source", "id", "content", "score", "tokens", "at", "refs"}
        assert item["source"] == "turn" and item["refs"][0].startswith("t:s1:")


def test_cli_recall_batch(home: Home, tmp_path: Path) -> None:
    run("import", str(write_transcript(tmp_path / "t.jsonl", make_turns(20))))
    run("sync", "--no-embed")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "topic 1"}\n\n{"id": 7, "query": "AND( * \\""}\n')
    lines = [json.loads(x)
             for x in run("recall", "--queries", str(queries), "--json").stdout.splitlines()]
    assert [x["id"] for x in lines] == ["a", 7]
    assert all(x["used_tokens"] <= 512 for x in lines)
    queries.write_text('{"id": "a"}\nnot json\n')
    bad = run("recall", "--queries", str(queries), "--json", ok=False)
    assert f"{queries}:1: expected" in bad.output and f"{queries}:2: not valid JSON" in bad.output
    assert "give either QUERY or --queries" in run("recall", ok=False).output


def test_cli_recall_reads_last_week_from_when_the_query_is_asked(home: Home,
                                                                   tmp_path: Path) -> None:
    """`--at` (or a --queries line's "at") says when the query is asked: "last week" is the
    week before that one, and the dinner said then comes first."""
    dinners = ["a mushroom risotto", "a lentil curry", "a fish pie", "a bean chilli"]
    turns = [{"session": f"d{n}", "at": f"2024-03-{4 + 7 * n:02d}T19:00:00Z", "role": "user",
              "name": "Ann", "text": f"Tonight I cooked {dinner} for dinner.", "ref": f"d:{n}"}
             for n, dinner in enumerate(dinners)]
    run("import", str(write_transcript(tmp_path / "t.jsonl", turns)))
    run("sync", "--no-embed")
    question = "What did I cook last week?"
    for at, dinner in [("2024-03-13", "lentil curry"), ("2024-03-27T09:00:00Z", "bean chilli")]:
        found = json.loads(run("recall", question, "--at", at, "--json").stdout)
        assert dinner in found["items"][0]["content"], (at, found["items"][0])
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": 1, "query": question, "at": "2024-03-20"}) + "\n")
    (line,) = [json.loads(x) for x in
               run("recall", "--queries", str(queries), "--json").stdout.splitlines()]
    assert "fish pie" in line["items"][0]["content"]


def test_cli_remember_journal_memory(home: Home) -> None:
    out = run("remember", "I prefer tabs", "--type", "user_preference").output
    memory_id = out.split()[1]
    assert "I prefer tabs" in run("journal").output
    assert "No journal entry for 2001-01-01." in run("journal", "2001-01-01").output
    assert "not a date: 'someday'" in run("journal", "someday", ok=False).output
    assert memory_id in run("memory", "list").output
    assert json.loads(run("memory", "show", memory_id).output)["content"] == "I prefer tabs"
    flagged = run("memory", "flag", memory_id, "--reason", "unsure").output
    assert "confidence 0.90, active" in flagged
    assert "user_preference    active     1" in run("memory", "status").output
    assert "Forgot" in run("memory", "forget", memory_id).output
    assert "No memories." in run("memory", "list").output
    assert "nothing to forget for 'nope'" in run("memory", "forget", "nope", ok=False).output
    assert "no active memory 'nope'" in run("memory", "flag", "nope", ok=False).output
    assert "nothing to remember" in run("remember", "  ", ok=False).output
    assert "I prefer tabs" not in run("journal").output


def test_replay_verify_passes_with_every_projection(home: Home, tmp_path: Path,
                                                    locomo26: Path) -> None:
    with EventLog(home.events_db) as log:
        import_file(log, locomo26)
        seed(log)
    run("remember", "Caroline likes pottery")
    run("sync", "--no-embed")
    verified = run("replay", "--verify").output
    for name in ("turns", "journal", "long_term", "memories", "search", "vectors"):
        assert f"{name}: ok" in verified


def test_memory_config_is_validated(home: Home) -> None:
    home.config_file.write_text("memory:\n  budget_pct: 1.5\n")
    assert ("`memory.budget_pct` must be a number in (0.0, 1.0], got 1.5"
            in run("recall", "x", ok=False).output)
    home.config_file.write_text("memory:\n  rolling_summary:\n    keep: 3\n")
    assert ("unknown key `memory.rolling_summary.keep`; allowed keys: enabled, warn_at_pct,"
            " keep_turns"
            in run("recall", "x", ok=False).output)
    home.config_file.write_text("memory:\n  top_k: 2\n")
    run("remember", "alpha one")
    run("remember", "alpha two")
    run("remember", "alpha three")
    assert len(json.loads(run("recall", "alpha", "--json").stdout)["items"]) == 2


def test_a_common_term_still_finds_when_the_rare_ones_match_nothing(
        log: EventLog, store: ProjectionStore) -> None:
    # "bees" is in every item (common: left out while a rarer term remains), but "remind"
    # and "please" are in none: the query must fall back on the term that does match
    for i in range(120):
        log.append(UserTurn(session="s", text=f"note {i}: the bees were calm today"),
                   stream="s", ref=f"c:{i}")
    store.catch_up_all()
    result = recall(store.db, "Remind me about the bees, please", budget=0, k=5, head=False)
    assert len(result.items) == 5 and all("bees" in i.content for i in result.items)


ESSAY = " ".join(f"Point {n}: kayaks need care and a dry place in the winter months."
                 for n in range(12))


def test_a_long_turn_is_recalled_as_passages_and_weighs_less(log: EventLog,
                                                             store: ProjectionStore) -> None:
    log.append(UserTurn(session="s", text="Tell me about kayak care"), stream="s", ref="c:0")
    log.append(AssistantTurn(session="s", text=ESSAY), stream="s", ref="c:1")
    log.append(UserTurn(session="t", text="My kayak needs care: I keep it in a dry place"),
               stream="t", ref="d:0")
    store.catch_up_all()
    within = recall(store.db, "kayak care dry place", budget=120, k=10, head=False)
    assert within.used_tokens <= 120
    assert within.items[0].refs == ["d:0"]  # what the person said beats the essay's pieces
    essay = [i for i in within.items if i.refs == ["c:1"]]
    assert essay and all(i.tokens < estimate(ESSAY) // 2 for i in essay)  # passages, not all
    whole = recall(store.db, "kayak care dry place", budget=0, k=10, head=False)
    (full,) = [i for i in whole.items if "c:1" in i.refs]
    assert all(f"Point {n}:" in full.content for n in range(12))  # no budget: the whole turn


def test_memory_md_comes_in_the_head_only(log: EventLog, store: ProjectionStore) -> None:
    """Within a budget MEMORY.md shows the lines that answer the question, in the head; its
    sections are not also scored items (one whole section would crowd out the turns)."""
    facts = "\n".join(f"- Ann planted {crop} in the garden bed number {i}"
                      for i, crop in enumerate(["beans", "kale", "leeks", "peas", "corn"] * 6))
    log.append(LongTermRewritten(content=f"# Garden\n{facts}\n- Ann grows tomatoes outside\n"),
               stream="memory")
    for i in range(30):
        log.append(UserTurn(session="s", text=f"the tomatoes in the garden did well, day {i}"),
                   stream="s", ref=f"c:{i}")
    store.catch_up_all()
    items = recall(store.db, "Which tomatoes does Ann grow outside?", budget=512, k=10).items
    memory_md = [i for i in items if i.source == "long_term"]
    assert [i.id for i in memory_md] == ["MEMORY.md"]
    assert memory_md[0].content == "# Garden\n- Ann grows tomatoes outside"
    assert sum(i.source == "turn" for i in items) == 10


ANN_MEMORY_MD = """# Memory

## Profile
- Ann moved to Leeds in May, Ann lives in Leeds now (since 3 May 2026)
- Ann keeps six hives of Buckfast bees on the allotment (since 1 April 2026)

## Preferences
- Ann likes her answers short, with the numbers first
- Ann prefers loose-leaf Assam tea in the morning
- Ann enjoys long walks along the canal at the weekend

## Workflows
- Ann checks every hive for queen cells each Sunday morning
- Ann writes the hive notes in a paper logbook and copies them to a spreadsheet

## Plans
- Ann is planning to take the honey to the farmers' market on 14 June 2026
"""


def _bullets(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_without_a_question_memory_md_fills_the_room_the_head_leaves(
        log: EventLog, store: ProjectionStore) -> None:
    """A chat's start block (no question yet) holds as much of MEMORY.md as fits, before any
    scored item: a session's first question, whose note is capped, is answered from it.
    Shown compactly: no title, no blank line, no line the profile already says."""
    log.append(MemoriesMined(session="s", memories=[{
        "id": "p1", "type": "workspace_profile",
        "content": "Big news: Ann moved to Leeds in May, Ann lives in Leeds now."}]),
        stream="memory")
    log.append(LongTermRewritten(content=ANN_MEMORY_MD), stream="memory")
    for i in range(20):
        log.append(UserTurn(session="s", text=f"the bees were calm on the allotment, day {i}"),
                   stream="s", ref=f"c:{i}")
    store.catch_up_all()
    budget = 240    # a 2,048-token window's start block, less its headers
    assert estimate(ANN_MEMORY_MD) > budget / 2  # over the share a question's lines may take
    items = recall(store.db, "", budget=budget, k=10, whole_long_term=True).items
    (memory_md,) = [i for i in items if i.source == "long_term"]
    shown = _bullets(memory_md.content)
    assert shown == [b for b in _bullets(ANN_MEMORY_MD) if "moved to Leeds" not in b]
    assert "# Memory" not in memory_md.content and "\n\n" not in memory_md.content
    assert [i.source for i in items][:2] == ["workspace_profile", "long_term"]
    assert sum(i.tokens for i in items) <= budget
    # a question still gets only MEMORY.md's lines that answer it
    asked = recall(store.db, "When does Ann check every hive?", budget=budget, k=10).items
    (lines,) = [i.content for i in asked if i.source == "long_term"]
    assert _bullets(lines) == ["- Ann checks every hive for queen cells each Sunday morning"]


def test_the_head_shows_a_mined_fact_as_its_memory_md_line_says_it(
        log: EventLog, store: ProjectionStore) -> None:
    """A mined profile fact is read in every block: without the headline or the words about
    the conversation it was said with, and "their" for the user, as its MEMORY.md line says
    it — which the block then leaves out as said. A person's own note keeps their words."""
    log.append(MemoriesMined(session="s", memories=[
        {"id": "p1", "type": "workspace_profile", "source": "heuristic",
         "content": "The user just realized the user didn't mention that the user recently "
                    "celebrated the user's 3-year anniversary at XYZ Corp."},
        {"id": "p2", "type": "workspace_profile", "source": "heuristic",
         "content": "Big news: the user moved to Leeds in May."},
        {"id": "p3", "type": "workspace_profile", "source": "user",
         "content": "Big news: my hives are Buckfast bees."}]), stream="memory")
    log.append(LongTermRewritten(content=(
        "# Memory\n\n## Profile\n"
        "- The user recently celebrated their 3-year anniversary at XYZ Corp (said 22 May 2026)\n"
        "- The user moved to Leeds in May (since 3 May 2026)\n"
        "- The user keeps a paper logbook\n")), stream="memory")
    store.catch_up_all()
    items = recall(store.db, "", budget=400, k=10, whole_long_term=True).items
    head = sorted(i.content for i in items if i.source == "workspace_profile")
    assert head == ["Big news: my hives are Buckfast bees.",
                    "The user moved to Leeds in May.",
                    "The user recently celebrated their 3-year anniversary at XYZ Corp."]
    (memory_md,) = [i.content for i in items if i.source == "long_term"]
    assert _bullets(memory_md) == ["- The user keeps a paper logbook"]


@pytest.mark.parametrize("budget", range(40, 200, 6))
def test_memory_md_cut_to_a_budget_leaves_no_heading_without_lines(
        log: EventLog, store: ProjectionStore, budget: int) -> None:
    log.append(LongTermRewritten(content=ANN_MEMORY_MD), stream="memory")
    store.catch_up_all()
    items = recall(store.db, "", budget=budget, k=10, whole_long_term=True).items
    for item in (i for i in items if i.source == "long_term"):
        lines = item.content.splitlines()
        assert lines and lines[-1].startswith("- ")
        assert all(line.startswith("- ") for n, line in enumerate(lines[1:])
                   if lines[n].startswith("#")), item.content


def test_a_persons_parent_heading_stays_above_its_sub_headings_lines(
        log: EventLog, store: ProjectionStore) -> None:
    log.append(LongTermRewritten(content="# Memory\n\n## Projects\n### diarist\n"
                                         "- diarist keeps its log in SQLite\n## Empty\n"),
               stream="memory")
    store.catch_up_all()
    items = recall(store.db, "", budget=200, k=10, whole_long_term=True).items
    (memory_md,) = [i.content for i in items if i.source == "long_term"]
    assert memory_md == "## Projects\n### diarist\n- diarist keeps its log in SQLite"
