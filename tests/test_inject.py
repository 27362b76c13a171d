"""The injected memory block: fits its budget with thousands of memories, factual first."""
from __future__ import annotations

import pytest

from events import EventLog
from events.log import NewEvent
from events.types import MemoriesMined, ProfileSet, ProjectFactsDetected, UserTurn
from projections import ProjectionStore
from projections.inject import budget_for, build_injection
from projections.tokens import estimate


def test_budget_for() -> None:
    assert budget_for(2048, 0.25) == 512
    assert budget_for(8192, 0.1) == 819
    assert budget_for(None, 0.25) == 512


@pytest.mark.parametrize("window", [2048, 4096])
def test_block_fits_a_2048_window_with_thousands_of_memories(log: EventLog, store,  # type: ignore[no-untyped-def]
                                                             window: int) -> None:
    log.append(ProfileSet(fields={"name": "Ann", "role": "backend developer",
                                  "tools": "Python, Go"}),
               stream="profile")
    log.append(ProjectFactsDetected(facts=[{"key": "language", "value": "Python 3.11"},
                                           {"key": "tests", "value": "pytest"}]), stream="profile")
    memories = [{"id": f"m{i}", "type": "workflow",
                 "content": f"run the python test suite before release {i} with coverage {i % 7}"}
                for i in range(3000)]
    log.append(MemoriesMined(session="s", memories=memories), stream="memory")
    log.append_many([NewEvent("s", UserTurn(session="s", text=f"python release checklist item {i}"))
                     for i in range(500)])
    store.catch_up_all()
    budget = budget_for(window, 0.25)
    injection = build_injection(store.db, "python release tests", budget, k=1000)
    assert injection.injected_tokens == estimate(injection.text) <= budget
    assert injection.injected_tokens > budget * 0.6  # the budget is used, not wasted
    lines = injection.text.splitlines()
    assert lines[:2] == ["[memory context]", "[workspace profile]"]
    assert lines.index("[project facts]") < lines.index("[relevant experience]")
    assert "- name: Ann" in lines and "- language: Python 3.11" in lines


def test_tiny_budgets_give_an_empty_or_fitting_block(log: EventLog, store: ProjectionStore) -> None:
    log.append(ProfileSet(fields={"name": "Ann"}), stream="profile")
    store.catch_up_all()
    for budget in (0, 5, 20, 40):
        injection = build_injection(store.db, "anything", budget, k=10)
        assert injection.injected_tokens <= budget


def test_a_question_asked_outright_gets_the_lines_of_memory_md_that_answer_it(
        log: EventLog, store: ProjectionStore) -> None:
    """The chat's start block carries MEMORY.md whole (its query is the last session's
    words); a question asked outright (`diarist eval --answer`) gets the lines that answer
    it."""
    from events.types import LongTermRewritten

    log.append(LongTermRewritten(content="# Memory\n\n## Preferences\n"
                                 "- Nate loves action and sci-fi movies.\n"
                                 "- Joanna enjoys dramas and emotionally driven films.\n"),
               stream="memory")
    store.catch_up_all()
    question = "What kind of films does Joanna enjoy, dramas?"
    whole = build_injection(store.db, question, 400, 5).text
    asked = build_injection(store.db, question, 400, 5, whole_long_term=False).text
    assert "Nate loves" in whole and "Joanna enjoys" in whole
    assert "Nate loves" not in asked and "Joanna enjoys dramas" in asked


def test_a_question_asked_outright_reads_what_recall_ranked_before_memory_md(
        log: EventLog, store: ProjectionStore) -> None:
    """A MEMORY.md line chosen because it shares words with the question comes after the
    turn recall ranked first (a small model answers from the first lines it reads); the
    start block keeps MEMORY.md first."""
    from events.types import LongTermRewritten

    log.append(LongTermRewritten(content="# Memory\n\n## Preferences\n"
                                 "- Tim loves watching movies after the Thanksgiving feast.\n"),
               stream="memory")
    log.append(UserTurn(session="s", text="During Thanksgiving we always watch Home Alone.",
                        name="Tim"), stream="s")
    store.catch_up_all()
    question = "Which movie does Tim watch during Thanksgiving?"
    asked = build_injection(store.db, question, 400, 5, whole_long_term=False).text.splitlines()
    turn = next(i for i, line in enumerate(asked) if "Home Alone" in line)
    line = next(i for i, line in enumerate(asked) if "Tim loves watching" in line)
    assert turn < line, asked
    whole = build_injection(store.db, question, 400, 5).text.splitlines()
    assert next(i for i, x in enumerate(whole) if "Tim loves watching" in x) < \
        next(i for i, x in enumerate(whole) if "Home Alone" in x), whole


def test_the_evidence_block_is_the_named_turns_in_the_memory_form_within_the_budget(
        log: EventLog, store: ProjectionStore) -> None:
    """`eval --answer`'s ceiling: exactly the evidence turns, rendered as recall's turns are
    (dated, relative time dated beside the words), in log order, within the same budget."""
    import datetime as dt

    from events.log import NewEvent
    from projections.inject import build_evidence

    said = dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    log.append_many([NewEvent("s", UserTurn(session="s", text=text, name="Caroline"),
                              occurred_at=said + dt.timedelta(minutes=i), ref=f"c:{i}")
                     for i, text in enumerate([
                         "I went to a support group yesterday.", "Painting calms me.",
                         "We go camping next month, near the lake."] * 20)])
    store.catch_up_all()
    block = build_evidence(store.db, ["c:2", "c:0"], budget=512)
    assert block.text.splitlines() == [
        "[memory context]", "[knowledge]", "[most relevant]",
        "- (8 May 2023) Caroline: I went to a support group yesterday [7 May 2023].",
        "[other memories]",
        "- (8 May 2023) Caroline: We go camping next month [June 2023], near the lake."]
    assert block.injected_tokens == estimate(block.text)
    # read on a known day (a chat's, an eval question's), each line says how long ago
    later = build_evidence(store.db, ["c:0"], budget=512, today=dt.date(2023, 5, 29))
    assert later.text.splitlines()[-1] == (
        "- (8 May 2023, 3 weeks ago) Caroline: I went to a support group yesterday [7 May 2023].")
    # in the unit a question asks, as memory's block for it tells it (build_injection)
    asked = build_evidence(store.db, ["c:0"], budget=512, today=dt.date(2023, 5, 29),
                           question="How many days ago did Caroline go to a support group?")
    assert asked.text.splitlines()[-1].startswith("- (8 May 2023, 21 days ago) Caroline:")
    from projections.inject import build_injection
    question = "How many days ago did Caroline go to a support group?"
    memory = build_injection(store.db, question, 512, 16, whole_long_term=False,
                             today=dt.date(2023, 5, 29))
    assert "(8 May 2023, 21 days ago) Caroline: I went to a support group" in memory.text
    # a chat's start block is read for every question of a session: it keeps the usual age
    start = build_injection(store.db, question, 512, 16, today=dt.date(2023, 5, 29))
    assert "(8 May 2023, 3 weeks ago) Caroline: I went to a support group" in start.text
    many = build_evidence(store.db, [f"c:{i}" for i in range(60)], budget=120)
    assert 0 < many.injected_tokens <= 120 and len(many.items) < 60
    assert build_evidence(store.db, [], budget=512).text == ""


def test_knowledge_comes_most_relevant_first_as_the_system_prompt_says(
        log: EventLog, store: ProjectionStore) -> None:
    """The chat's system prompt tells the model the block's most relevant lines come first
    (a small model otherwise answers from a later line that merely shares the question's
    words): the [knowledge] lines are in recall's order, best score first."""
    from workers.chat.instruction import BY_MODEL, GENERAL

    for told in (GENERAL, *BY_MODEL.values()):
        assert "most relevant lines come first" in told
    for text in ("We ran the 5K charity run for veterans and their families.",
                 "The charity bake sale went well.",
                 "I ran a 5K last year.",
                 "My brother works for a charity that helps veterans."):
        session = f"s{len(text)}"  # one session each: no two are neighbours in one item
        log.append(UserTurn(session=session, text=text, name="John"), stream=session)
    store.catch_up_all()
    injection = build_injection(store.db, "What cause did John's 5K charity run support?",
                                400, 8, whole_long_term=False)
    lines = injection.text.splitlines()
    knowledge = [x for x in lines[lines.index("[knowledge]") + 1:] if x.startswith("- ")]
    scores = [i.score for i in injection.items if i.source == "turn"]
    assert len(knowledge) == len(scores) >= 3, injection.text
    assert scores == sorted(scores, reverse=True), scores
    assert "veterans and their families" in knowledge[0], knowledge
    # the best apart, under a title of its own: a model that reads on past the first line
    # answers from it more often (docs/benchmarks.md)
    at = lines.index("[knowledge]")
    assert lines[at + 1] == "[most relevant]" and lines[at + 2] == knowledge[0]
    assert lines[at + 3] == "[other memories]" and lines[at + 4:] == knowledge[1:]


def test_a_start_block_keeps_its_knowledge_together_and_a_lone_item_has_no_titles(
        log: EventLog, store: ProjectionStore) -> None:
    """Only a question's block puts its best match apart: a chat's start block, which
    MEMORY.md opens, keeps [knowledge] whole; one item needs no second title."""
    for n, text in enumerate(["We ran the 5K charity run for veterans.",
                              "The charity bake sale went well.", "I ran a 5K last year."]):
        log.append(UserTurn(session=f"s{n}", text=text, name="John"), stream=f"s{n}")
    store.catch_up_all()
    start = build_injection(store.db, "charity run 5K", 400, 8)
    assert "[knowledge]" in start.text and len(start.items) >= 2, start.text
    assert "[most relevant]" not in start.text and "[other memories]" not in start.text
    lone = build_injection(store.db, "charity run 5K", 400, 1, whole_long_term=False)
    lines = lone.text.splitlines()
    assert len(lone.items) == 1 and lines[:2] == ["[memory context]", "[knowledge]"]
    assert lines[2].startswith("- ") and "[most relevant]" not in lone.text, lone.text
