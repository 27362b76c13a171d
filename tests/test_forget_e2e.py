"""Forgetting, end to end: after `diarist memory forget`, the forgotten text is in no file
and no table under the home — journals, MEMORY.md, the search index, vectors — except the
event log itself (history changes only through `redact`)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from events import EventLog, Home
from events.types import LongTermRewritten
from projections import open_store
from projections.items import content_hash

from .conftest import make_turns, run, write_transcript

NOTE = "my bike lock combination is tangerine-5150"
TURN = "I secretly adopted an axolotl named Quizzleworth"


def occurrences(home: Home, needles: list[str]) -> list[str]:
    """Every place under the home (bar the event log) that still holds one of the needles:
    raw file bytes (free pages and WAL included) and every row of every table."""
    found = []
    for path in sorted(home.root.rglob("*")):
        if not path.is_file() or path.name.startswith("events.db"):
            continue
        data = path.read_bytes().lower()
        found += [f"{path.name}: {n}" for n in needles if n.lower().encode() in data]
        if data.startswith(b"sqlite format 3"):
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                for row in db.execute(f'SELECT * FROM "{table}"'):
                    text = json.dumps([str(v) for v in row]).lower()
                    found += [f"{path.name}:{table}: {n}" for n in needles if n.lower() in text]
            db.close()
    return found


@pytest.mark.parametrize("key_kind", ["memory id", "turn ref"])
def test_forget_leaves_no_trace_outside_the_log(model_home: Home, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                key_kind: str) -> None:
    monkeypatch.delenv("DIARIST_NO_EMBED")
    turns = make_turns(12)
    turns[4]["text"] = TURN
    run("import", str(write_transcript(tmp_path / "t.jsonl", turns)))
    note_id = run("remember", NOTE).output.split()[1]
    with EventLog(model_home.events_db) as log:
        log.append(LongTermRewritten(content=f"# Notes\n- {NOTE}\n- {TURN}\n- keep me\n"),
                   stream="memory")
    assert "embeddings:" in run("sync").output
    with open_store(model_home) as store:
        hashes = [r[0] for r in store.db.execute("SELECT content_hash FROM vector_items")]
        assert (store.db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
                >= len(set(hashes)) > 0)

    if key_kind == "memory id":
        key, needles, query = note_id, ["tangerine-5150", "bike lock combination"], "bike lock"
    else:
        key, needles, query = "t:s1:4", ["Quizzleworth", "axolotl"], "axolotl"
    recalled = json.loads(run("recall", query, "--json", "--budget", "0").stdout)
    assert any(needles[0].lower() in i["content"].lower() for i in recalled["items"])
    assert occurrences(model_home, needles)  # the check can see it before

    assert "Forgot" in run("memory", "forget", key, "--reason", "test").output
    run("sync")
    recalled = json.loads(run("recall", query, "--json", "--budget", "0").stdout)
    assert not any(needles[0].lower() in i["content"].lower() for i in recalled["items"])
    assert occurrences(model_home, needles) == []
    assert "keep me" in (model_home.memory_dir / "MEMORY.md").read_text()
    with open_store(model_home) as store:
        gone = content_hash(NOTE) if key_kind == "memory id" else content_hash(f"Ann: {TURN}")
        assert store.db.execute("SELECT COUNT(*) FROM embeddings WHERE content_hash = ?",
                                (gone,)).fetchone()[0] == 0
        assert store.db.execute("SELECT COUNT(*) FROM vector_items WHERE content_hash = ?",
                                (gone,)).fetchone()[0] == 0
    with EventLog(model_home.events_db) as log:  # the log keeps what was said
        assert any(needles[0].lower() in json.dumps(e.payload).lower() for e in log.read())
    assert "DIFFERS" not in run("replay", "--verify").output
