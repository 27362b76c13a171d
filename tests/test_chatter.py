"""Chatter: the heuristic's statements that keep nothing worth keeping are left out of what
mining keeps (workers/mining/chatter.py), by a model trained on LoCoMo's observations."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from events import EventLog, Home
from projections import open_store
from projections.memories import list_memories
from tests.conftest import fp32_embedder, run, write_transcript
from workers.mining import chatter as chatter_module
from workers.mining.candidates import Candidate
from workers.mining.chatter import Chatter, counts, load_chatter
from workers.mining.chunks import Chunk, Turn
from workers.mining.mine import chatter_in


def test_the_installed_model_tells_chatter_from_what_a_person_tells(
        exported_model: Path) -> None:
    """Reactions and promises to look at something are chatter; what someone is, has and
    does is not, whoever says it ("The user" as LongMemEval's people are named)."""
    model = load_chatter()
    assert model is not None
    said = [("Sam totally agrees.", "Sam"), ("Sam will definitely check them out.", "Sam"),
            ("Sam remembers that.", "Sam"), ("The user will definitely check them out.", "user"),
            ("Sam adopted a guinea pig named Oscar.", "Sam"),
            ("Sam works as a nurse at the city hospital.", "Sam"),
            ("The user has been learning Portuguese for two years.", "user"),
            ("The user is allergic to shellfish.", "user")]
    vectors = fp32_embedder(exported_model).embed([s for s, _ in said])
    assert model.is_chatter(vectors, said) == [True] * 4 + [False] * 4


def test_counts_leave_out_the_speakers_name() -> None:
    assert counts("Sam adopted a guinea pig named Oscar.", "Sam") == (5, 3)
    assert counts("Sam loves Sam's pottery.", "Sam") == (2, 1)
    assert counts("The user loves pottery.", "user") == (2, 1)


def always_chatter(tmp_path: Path, dims: int = 4) -> Chatter:
    """A model that calls every statement it judges chatter (all-zero weights, a bias far
    below its threshold)."""
    weights = tmp_path / "chatter.npz"
    np.savez(weights, w=np.zeros(dims + 2, dtype=np.float32), b=np.float32(-10),
             threshold=np.float32(0.5))
    return Chatter(weights)


def test_only_a_plain_life_statement_is_judged(tmp_path: Path) -> None:
    """A value (it sets an attribute), a note asked for, another type of memory and a
    statement without a vector (no model) are never left out."""
    turn = Turn(1, 1, "e1", "r1", "user", "Sam", "…", "2024-01-01T00:00:00Z", True)
    chunk = Chunk("s", [turn])
    candidates = [Candidate("user_preference", "Sam totally agrees.", turns=[1]),
                  Candidate("user_preference", "Sam lives in Oslo.", subject="sam|home",
                            turns=[1]),
                  Candidate("user_preference", "Sam is allergic to nuts.", asked=True,
                            turns=[1]),
                  Candidate("tool_use", "pytest fails with the old plugin.", turns=[1]),
                  Candidate("user_preference", "Sam agrees again.", turns=[1])]
    vector = np.ones(4, dtype=np.float32)
    left = chatter_in(chunk, candidates, [vector, vector, vector, vector, None],
                      always_chatter(tmp_path))
    assert left == {0}


def test_without_its_weights_nothing_is_chatter(tmp_path: Path) -> None:
    assert load_chatter(tmp_path / "missing.npz") is None


TURNS = [("Sam", "I adopted a guinea pig last week, his name is Oscar."),
         ("Ria", "Aww, that's adorable! Send me a picture of him."),
         ("Sam", "I totally agree. I can't wait to hear more about it."),
         ("Ria", "I started volunteering at the animal shelter on Saturdays."),
         ("Sam", "That's great. I remember that.")]


def mined_contents(home: Home, tmp_path: Path) -> list[str]:
    write_transcript(tmp_path / "t.jsonl", [
        {"session": "s1", "at": f"2024-03-04T09:0{i}:00Z", "role": "user" if i % 2 else
         "assistant", "name": name, "text": text, "ref": f"r{i}"}
        for i, (name, text) in enumerate(TURNS)])
    run("import", str(tmp_path / "t.jsonl"))
    run("mine")
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        store.catch_up_all()
        return [m.content for m in list_memories(store.db, None, ("active",))]


def test_mining_leaves_chatter_out(embedding: Home, tmp_path: Path) -> None:
    """The night's heuristic pass keeps the guinea pig and the volunteering, not the
    agreeing and remembering; what it left out is in its event, for anyone to read back."""
    contents = mined_contents(embedding, tmp_path)
    assert any("Oscar" in c for c in contents), contents
    assert any("shelter" in c for c in contents), contents
    assert not any("agree" in c or "remember" in c or "hear" in c for c in contents), contents
    with EventLog(embedding.events_db) as log:
        left_out = [s for e in log.iter_all() if e.type == "MemoriesMined"
                    for s in e.payload.get("chatter", [])]
    assert left_out == ["Sam totally agrees.", "Sam can't wait to hear more about it."]


def test_without_the_model_mining_keeps_what_it_did(embedding: Home, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same turns with no chatter weights: the agreeing is kept, as before the model."""
    monkeypatch.setattr(chatter_module, "WEIGHTS", tmp_path / "missing.npz")
    contents = mined_contents(embedding, tmp_path)
    assert any("agree" in c for c in contents), contents
