"""The eval metrics on hand-made cases: ties, empty results, several evidence turns, a
question with no evidence; and the bootstrap intervals."""
from __future__ import annotations

import numpy as np
import pytest

from projections.recall import RecallItem
from workers.eval.metrics import (
    Ranked,
    answer_f1,
    contains_answer,
    evidence_recall,
    fill_budget,
    mean,
    mean_cosine,
    normalize_answer,
    recency,
    session_recall,
    share,
    top_k,
)
from workers.eval.stats import bootstrap_ci, paired_ci, ratio_ci


def item(*refs: str, score: float = 1.0, tokens: int = 10) -> Ranked:
    return Ranked(tuple(refs), score, tokens)


# --- evidence recall -------------------------------------------------------------------------

def test_evidence_recall_counts_each_evidence_ref_once() -> None:
    items = [item("a", "b"), item("c"), item("a")]
    assert evidence_recall(["a"], items) == 1.0
    assert evidence_recall(["a", "c", "x", "y"], items) == 0.5   # several evidence turns
    assert evidence_recall(["a", "a", "x"], items) == 0.5       # a repeated ref counts once
    assert evidence_recall(["x"], items) == 0.0


def test_no_evidence_is_undefined_and_empty_results_score_zero() -> None:
    assert evidence_recall([], [item("a")]) is None
    assert evidence_recall(["a"], []) == 0.0
    assert mean([None, 1.0, 0.0, None]) == 0.5
    assert mean([None]) is None


def test_top_k_keeps_recall_order_even_on_ties() -> None:
    tied = [item("a", score=0.5), item("b", score=0.5), item("c", score=0.5)]
    assert evidence_recall(["c"], top_k(tied, 2)) == 0.0
    assert evidence_recall(["b"], top_k(tied, 2)) == 1.0
    assert evidence_recall(["a", "b", "c"], top_k(tied, 5)) == 1.0


def test_it_takes_recall_items_as_they_come() -> None:
    recalled = [RecallItem("turn", "1", "Ann: hi\nBot: hello", 0.9, 12, "", ["r1", "r2"])]
    assert evidence_recall(["r2"], recalled) == 1.0


def test_fill_budget_skips_what_does_not_fit_like_recall() -> None:
    items = [item("a", tokens=200), item("b", tokens=400), item("c", tokens=50),
             item("d", tokens=10)]
    assert [i.refs for i in fill_budget(items, 256)] == [("a",), ("c",)]   # 250 used
    assert [i.refs for i in fill_budget(items, 265)] == [("a",), ("c",), ("d",)]
    assert [i.refs for i in fill_budget(items, 0)] == [("a",), ("b",), ("c",), ("d",)]
    assert fill_budget([], 512) == []
    # less room than any item needs: stop looking (recall's MIN_ITEM_TOKENS)
    assert [i.refs for i in fill_budget([item("a", tokens=250), item("e", tokens=1)], 256)] \
        == [("a",)]


def test_session_recall() -> None:
    session_of = {"a": "s1", "b": "s1", "c": "s2", "d": "s3"}
    assert session_recall({"s1", "s2"}, [item("b")], session_of) == 0.5
    assert session_recall({"s1", "s2"}, [item("b"), item("c")], session_of) == 1.0
    assert session_recall(set(), [item("a")], session_of) is None
    assert session_recall({"s1"}, [], session_of) == 0.0
    assert session_recall({"s3"}, [item("unknown")], session_of) == 0.0


# --- recency ---------------------------------------------------------------------------------

def test_recency_newest_above_every_stale() -> None:
    assert recency(["new"], ["old1", "old2"],
                   [item("new", score=0.9), item("old1", score=0.8), item("x", score=0.7),
                    item("old2", score=0.6)]) == 1.0
    assert recency(["new"], ["old1", "old2"],
                   [item("old2", score=0.9), item("new", score=0.8)]) == 0.0
    # stale items not recalled at all: the newest wins
    assert recency(["new"], ["old"], [item("x", score=0.9), item("new", score=0.5)]) == 1.0


def test_recency_ties_and_shared_items_are_not_wins() -> None:
    # equal scores: the order between them is arbitrary, so not "above"
    assert recency(["new"], ["old"], [item("new", score=0.5), item("old", score=0.5)]) == 0.0
    # one item holding both the new and the old statement does not rank above itself
    assert recency(["new"], ["old"], [item("new", "old", score=0.9)]) == 0.0


def test_recency_reads_the_items_in_the_order_a_question_block_shows_them() -> None:
    """Mined memories come before turns whatever their scores, MEMORY.md's lines after
    them (projections.inject.shown_rank); a score decides only within one group."""
    from projections.recall import RecallItem

    def shown(source: str, ref: str, score: float) -> RecallItem:
        return RecallItem(source, ref, ref, score, 10, "", [ref])

    newest_memory = [shown("turn", "old", 1.2), shown("memory", "new", 0.9)]
    assert recency(["new"], ["old"], newest_memory) == 1.0
    newest_line = [shown("long_term", "new", 1.0), shown("turn", "old", 0.8)]
    assert recency(["new"], ["old"], newest_line) == 0.0     # shown after the stale turn
    tied = [shown("turn", "new", 0.8), shown("journal", "old", 0.8)]
    assert recency(["new"], ["old"], tied) == 0.0            # one group: a tie is no win


def test_recency_undefined_without_stale_and_zero_without_relevant() -> None:
    assert recency(["new"], [], [item("new")]) is None
    assert recency([], ["old"], [item("old")]) is None
    assert recency(["new"], ["old"], []) == 0.0
    assert recency(["new"], ["old"], [item("old", score=0.2)]) == 0.0


# --- efficiency, relevancy -------------------------------------------------------------------

def test_share_and_mean_cosine() -> None:
    assert share(128, 512) == 0.25
    assert share(0, 0) is None
    query = np.array([1.0, 0.0])
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    assert mean_cosine(query, vectors) == pytest.approx((1.0 + 0.0 + 0.6) / 3)
    assert mean_cosine(query, np.zeros((0, 2))) is None


# --- answers ---------------------------------------------------------------------------------

def test_normalize_drops_case_punctuation_articles_and_and() -> None:
    assert normalize_answer("The Cat, and a Dog!") == "cat dog"
    assert normalize_answer("  7 May  2023. ") == "7 may 2023"


def test_f1_is_locomos_token_f1() -> None:
    assert answer_f1("Pim", "Pim") == 1.0
    assert answer_f1("My kitten is called Pim.", "Pim") == pytest.approx(2 * (1 / 5) / (1 + 1 / 5))
    assert answer_f1("running shoes", "run shoe") == 1.0     # Porter-stemmed
    assert answer_f1("", "Pim") == 0.0
    assert answer_f1("Lisbon", "") == 0.0
    assert answer_f1("no idea", "Pim") == 0.0


def test_f1_by_category() -> None:
    # multi-hop: each comma part of the answer against its best predicted part
    assert answer_f1("mug, pottery class", "pottery class, mug", "multi-hop") == 1.0
    assert answer_f1("mug", "pottery class, mug", "multi-hop") == 0.5
    # open-domain: only the answer before the first ';'
    assert answer_f1("Porto", "Porto; Portugal", "open-domain") == 1.0
    assert answer_f1("Porto", "Porto; Portugal") < 1.0


def test_containment_on_word_boundaries() -> None:
    assert contains_answer("She lives in Porto now.", "porto") == 1.0
    assert contains_answer("The answer is 7 May 2023", "7 May, 2023") == 1.0
    assert contains_answer("Portobello", "Porto") == 0.0
    assert contains_answer("anything", "") is None


# --- confidence intervals --------------------------------------------------------------------

def test_bootstrap_ci_is_seeded_and_brackets_the_mean() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, None]
    a, b = bootstrap_ci(values, seed=3), bootstrap_ci(values, seed=3)
    assert a == b and a is not None
    assert a.n == 7 and a.mean == pytest.approx(4.5 / 7)
    assert 0.0 <= a.low < a.mean < a.high <= 1.0
    assert bootstrap_ci([None, None]) is None
    one = bootstrap_ci([0.25])
    assert one is not None and (one.low, one.mean, one.high) == (0.25, 0.25, 0.25)


def test_paired_ci_uses_the_same_questions_for_both() -> None:
    better = [0.9, 0.8, 0.7, 1.0, 0.6, 0.9, 0.8, 0.75]
    worse = [v - 0.1 for v in better]
    d = paired_ci(better, worse, seed=1)
    # a constant gain has no spread when paired, whatever the spread of the questions
    assert d is not None and d.mean == pytest.approx(0.1)
    assert d.low == pytest.approx(0.1) and d.high == pytest.approx(0.1)
    # pairs with an undefined side are left out
    assert paired_ci([1.0, None, 0.0], [0.0, 1.0, None]) == paired_ci([1.0], [0.0])
    assert paired_ci([None], [1.0]) is None
    with pytest.raises(ValueError):
        paired_ci([1.0], [1.0, 0.0])


def test_ratio_ci_is_one_total_over_the_other_on_the_same_questions() -> None:
    memory = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, None]
    ceiling = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    r = ratio_ci(memory, ceiling, seed=3)
    assert r is not None and r == ratio_ci(memory, ceiling, seed=3)   # seeded
    assert r.n == 8 and r.mean == pytest.approx(5 / 7)   # the None question is left out
    assert r.low < r.mean < r.high <= 1.0
    # a share a resample cannot change has no spread: the same answers both ways
    same = ratio_ci([1.0, 0.0, 1.0], [1.0, 0.0, 1.0], seed=0)
    assert same is not None and (same.low, same.mean, same.high) == (1.0, 1.0, 1.0)
    assert ratio_ci([1.0, 1.0], [0.0, 0.0]) is None        # no ceiling to share
    assert ratio_ci([None], [1.0]) is None
    with pytest.raises(ValueError):
        ratio_ci([1.0], [1.0, 0.0])
