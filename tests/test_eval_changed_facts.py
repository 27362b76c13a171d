"""The changed-facts generator: deterministic, importable, and its questions point at the
right statements (the newest for what is true now, older ones for the past)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from events import EventLog
from events.transcript import import_file
from projections.recency import temporal_intent
from workers.eval.changed_facts import generate
from workers.eval.dataset import write_layout
from workers.eval.load import load_dataset


def _digest(directory: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(directory.iterdir()):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes_other_seed_other_data(tmp_path: Path) -> None:
    write_layout(generate(7), tmp_path / "a")
    write_layout(generate(7), tmp_path / "b")
    write_layout(generate(8), tmp_path / "c")
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")
    # the folder is the layout `diarist eval` reads, and reads back to the same dataset
    assert load_dataset(tmp_path / "a").conversations == generate(7).conversations


def test_the_generator_does_not_touch_global_random_state() -> None:
    import random

    random.seed(1)
    expected = random.random()
    random.seed(1)
    generate(3)
    assert random.random() == expected


def test_changed_facts_point_at_newest_and_stale_at_older() -> None:
    data = generate(0, people=3, sessions=8)
    times = {t["ref"]: t["at"] for c in data.conversations for t in c.turns}
    texts = {t["ref"]: t["text"] for c in data.conversations for t in c.turns}
    categories = {q.category for _, q in data.questions}
    assert categories == {"single-fact", "changed-fact", "changed-state", "past-event"}
    for conv, q in data.questions:
        assert q.evidence and all(ref in times for ref in q.evidence + q.stale)
        if q.category in ("changed-fact", "changed-state"):
            assert q.stale, q
            assert all(times[s] < times[q.evidence[0]] for s in q.stale)
            assert q.answer in texts[q.evidence[0]]
            assert all(q.answer not in texts[s] for s in q.stale)
        else:
            assert q.stale == ()
        assert conv.turns[-1]["at"] == q.at  # asked after the last session
    # a changed fact is asked with a present cue, or (changed-state) without one
    by_category = {c: [q.query for _, q in data.questions if q.category == c]
                   for c in ("changed-fact", "changed-state")}
    assert all(temporal_intent(query) == "present" for query in by_category["changed-fact"])
    assert all(temporal_intent(query) == "state" for query in by_category["changed-state"])
    # some past-event questions are about a statement that a later one replaced
    stale_refs = {s for _, q in data.questions for s in q.stale}
    past = [q for _, q in data.questions if q.category == "past-event"]
    assert any(set(q.evidence) <= stale_refs for q in past)
    assert sum(1 for q in past if q.query.startswith("When")) >= 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_conversation_imports(seed: int, tmp_path: Path) -> None:
    for conv in generate(seed, people=2).conversations:
        path = tmp_path / f"{conv.id}.jsonl"
        path.write_text("".join(conv.transcript_lines()), encoding="utf-8")
        with EventLog(tmp_path / f"{conv.id}.db") as log:
            assert import_file(log, path).turns == len(conv.turns)
