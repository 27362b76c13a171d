"""Passages: long turns are indexed and recalled as short runs of sentences that carry their
turn's speaker, time and ref; the budget is never exceeded."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events import EventLog
from events.types import AssistantTurn, SessionStarted, UserTurn
from projections import ProjectionStore
from projections.items import items_from, key_part
from projections.passages import (
    PASSAGE_TOKENS,
    SENTENCE_TOKENS,
    WHOLE_TURN_TOKENS,
    passages,
    sentences,
)
from projections.recall import recall
from projections.tokens import _PIECES, counts, estimate, estimate_counts, within

LONG_REPLY = (
    "I'm happy to help you with that! Losing a favourite necklace is frustrating.\n\n"
    "Here are some cleaning solutions for silver:\n\n"
    "1. **Silver Dip**: removes tarnish quickly. Dip, rinse with warm water and dry.\n"
    "2. **Silver Cream**: a gentle cream. Apply with a soft cloth and buff to a shine.\n"
    "3. **Baking soda and water**: mix one tablespoon of baking soda with two of water, "
    "apply the paste, wait fifteen minutes, rinse and dry.\n\n"
    "By the way, your cousin Dana's wedding is on the twelfth of June at the old mill in "
    "Bradford-on-Avon, so you may want the necklace cleaned before then. "
    "Remember to test a small, hidden area first and to store silver in an airtight bag.")


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def test_a_short_text_is_one_passage() -> None:
    assert passages("I keep three beehives.") == ["I keep three beehives."]
    assert passages("   ") == []


def test_long_text_becomes_passages_that_lose_no_word() -> None:
    parts = passages(LONG_REPLY)
    assert estimate(LONG_REPLY) > WHOLE_TURN_TOKENS and len(parts) > 3
    assert words(" ".join(parts)) == words(LONG_REPLY)  # nothing lost, nothing reordered
    for part in parts:
        assert estimate(part) <= max(PASSAGE_TOKENS, SENTENCE_TOKENS), part


def test_list_numbers_stay_with_their_item() -> None:
    found = sentences("Options:\n1. Dip it.\n2. Cream it.\n- or soak it\nDone.")
    assert found == ["Options:", "1. Dip it.", "2. Cream it.", "- or soak it", "Done."]


def test_a_sentence_without_ends_is_cut_at_words() -> None:
    run_on = " ".join(f"word{i}" for i in range(300))
    parts = passages(run_on)
    assert len(parts) > 1 and words(" ".join(parts)) == words(run_on)
    assert all(estimate(p) <= max(PASSAGE_TOKENS, SENTENCE_TOKENS) for p in parts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1).map(str.strip).filter(bool), min_size=1, max_size=12))
def test_a_runs_estimate_adds_up_from_its_pieces_counts(pieces: list[str]) -> None:
    """Runs are cut from summed counts, not by re-estimating the joined text: the two agree
    for any pieces joined by spaces (so the cut is the one a re-estimate would make)."""
    found = [counts(piece) for piece in pieces]
    joined_pieces = sum(p for p, _ in found)
    joined_chars = sum(c for _, c in found) + len(pieces) - 1
    assert estimate_counts(joined_pieces, joined_chars) == estimate(" ".join(pieces))


@settings(max_examples=500, deadline=None)
@given(st.text() | st.text(alphabet=st.characters(categories=["L", "N", "Pc"])))
def test_a_texts_pieces_are_counted_as_the_pattern_finds_them(text: str) -> None:
    """A word of letters and digits is counted without the pattern (one piece): the count
    is still the pattern's, for any text (digits and letters of any script, "_", "²")."""
    assert counts(text) == (len(_PIECES.findall(text)), len(text))


def test_a_runs_limit_is_a_most_pieces_and_a_most_characters() -> None:
    """Runs are cut at the counts :func:`within` gives: the estimate is within a limit
    exactly when neither is passed."""
    for limit in range(1, 130):
        most_pieces, most_chars = within(limit)
        for pieces in range(most_pieces + 3):
            for chars in range(most_chars + 3):
                assert (estimate_counts(pieces, chars) <= limit) == (
                    pieces <= most_pieces and chars <= most_chars), (limit, pieces, chars)


def test_a_long_turn_is_indexed_as_passages_with_its_ref(log: EventLog) -> None:
    long = log.append(AssistantTurn(session="s", text=LONG_REPLY, name="assistant"),
                      stream="s", ref="c:2")
    short = log.append(UserTurn(session="s", text="How do I clean silver?", name="Ann"),
                       stream="s", ref="c:1")
    items = items_from(long)
    assert len(items) > 3
    assert [key_part(i.key) for i in items] == list(range(len(items)))
    assert {i.id for i in items} == {long.id} and {i.refs for i in items} == {("c:2",)}
    assert all(i.content.startswith("assistant: ") and i.at == long.occurred_at for i in items)
    (whole,) = items_from(short)
    assert whole.key == f"turn:{short.id}" and whole.content == "Ann: How do I clean silver?"


@pytest.mark.parametrize("budget", [24, 48, 64, 100, 200, 512])
def test_recalled_passages_fit_the_budget_and_carry_only_their_turns_ref(
        log: EventLog, store: ProjectionStore, budget: int) -> None:
    for n in range(6):
        log.append(UserTurn(session="s", text=f"Question {n} about silver and weddings?",
                            name="Ann"), stream="s", ref=f"c:{2 * n}")
        log.append(AssistantTurn(session="s", text=LONG_REPLY.replace("Dana", f"Dana{n}"),
                                 name="assistant"), stream="s", ref=f"c:{2 * n + 1}")
    store.catch_up_all()
    result = recall(store.db, "When is Dana3's wedding?", budget=budget, k=50)
    assert result.used_tokens <= budget
    assert sum(estimate(i.content) for i in result.items) == result.used_tokens
    for item in result.items:
        assert len(item.refs) == 1  # a passage carries its own turn's ref, nothing else
    if budget >= 64:
        first = result.items[0]
        assert first.refs == ["c:7"] and "Dana3's wedding" in first.content
        assert estimate(first.content) < estimate(LONG_REPLY) / 2  # the passage, not the turn


def test_adjacent_passages_of_a_turn_join_one_item(log: EventLog,
                                                   store: ProjectionStore) -> None:
    log.append(AssistantTurn(session="s", text=LONG_REPLY, name="assistant"), stream="s",
               ref="c:1")
    store.catch_up_all()
    result = recall(store.db, "silver dip cream baking soda paste rinse", budget=0, k=50)
    assert len({r for i in result.items for r in i.refs}) == 1
    joined = [i for i in result.items if i.content.count("**") >= 4]
    assert joined, [i.content for i in result.items]  # two list items read as one passage
    text = joined[0].content
    assert text.startswith("assistant: ") and text.count("assistant: ") == 1
    assert text.index("Silver Dip") < text.index("Silver Cream")  # in the turn's order


def test_without_a_budget_a_models_reply_comes_after_the_message_it_answers(
        log: EventLog, store: ProjectionStore) -> None:
    """The evidence is usually what the person said; a long reply restates the topic and
    ranks higher. A named person's turn still comes with the turn that follows it."""
    log.append(UserTurn(session="s", text="My necklace from Dana needs a polish.", name="user"),
               stream="s", ref="c:1")
    log.append(AssistantTurn(session="s", text=LONG_REPLY, name="assistant"), stream="s",
               ref="c:2")
    log.append(UserTurn(session="p", text="Did you polish the trophy?", name="Ann"),
               stream="p", ref="p:1")
    log.append(AssistantTurn(session="p", text="I polished the trophy with baking soda paste.",
                             name="Bob"), stream="p", ref="p:2")
    log.append(UserTurn(session="p", text="It shines like new now.", name="Ann"),
               stream="p", ref="p:3")
    log.append(SessionStarted(session="q", backend="openai", model="qwen"), stream="q")
    log.append(UserTurn(session="q", text="Which ring do I wear on Sundays?", name="user"),
               stream="q", ref="q:1")
    log.append(AssistantTurn(session="q", text="Clean it with baking soda paste and polish.",
                             name="qwen"), stream="q", ref="q:2")  # a diarist chat's reply
    store.catch_up_all()
    items = recall(store.db, "baking soda paste silver polish", budget=0, k=10).items
    reply = next(i for i in items if "c:2" in i.refs)
    assert reply.refs == ["c:1", "c:2"] and reply.content.startswith("user: My necklace")
    assert "\nassistant: I'm happy to help" in reply.content  # the whole reply, after it
    chat = next(i for i in items if "q:2" in i.refs)
    assert chat.refs == ["q:1", "q:2"] and chat.content.startswith("user: Which ring")
    person = next(i for i in items if "p:2" in i.refs)
    assert person.refs == ["p:2", "p:3"] and person.content.startswith("Bob: I polished")
    with_budget = recall(store.db, "baking soda paste silver polish", budget=512, k=10).items
    assert all(i.refs != ["c:1", "c:2"] for i in with_budget)  # passages compete alone
