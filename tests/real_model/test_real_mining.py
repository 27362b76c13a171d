"""A night's run against the real Qwen2.5-Coder-0.5B (issue 11): `diarist mine`, `dream` and
`consolidate` as processes over three short sessions with planted facts. The model's words
are not asserted; what the pipeline must guarantee is: every session mined by the model
itself (no session lost to malformed JSON: the answer — not constrained by a grammar, the
default ``mining.json_schema: false`` — is parsed leniently, so the heuristic never had to
stand in), typed memories for most planted facts, each traced to the
turn that said it, and a log that replays to the same projections. (What share of the
facts a 0.5B model finds is the benchmark's business: bench_mining.py; this asks for two of
the five planted ones.)"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from events import EventLog, Home
from projections import open_store
from projections.items import MEMORY_TYPES
from projections.memories import list_memories
from projections.mining import mining_totals
from workers.models.llama_server import MODEL_ALIAS

from ..conftest import diarist_cmd, subprocess_env, write_transcript

TURNS = [
    ("n/1", "2024-05-01T09:00:00Z", "user", "Nora", "Hi Tom! Big news: I moved to Porto.", "n1"),
    ("n/1", "2024-05-01T09:00:20Z", "assistant", "Tom", "Wow, congratulations! How is it?", "n2"),
    ("n/1", "2024-05-01T09:00:40Z", "user", "Nora", "Lovely. I work as a nurse now.", "n3"),
    ("n/2", "2024-05-03T18:00:00Z", "user", "Nora", "I adopted a cat called Biscuit.", "n4"),
    ("n/2", "2024-05-03T18:00:20Z", "assistant", "Tom", "So cute! What does Biscuit eat?", "n5"),
    ("n/2", "2024-05-03T18:00:40Z", "user", "Nora", "Fish, mostly. I prefer cats to dogs.", "n6"),
    ("n/3", "2024-05-05T20:00:00Z", "user", "Nora", "I run 5 km every morning.", "n7"),
    ("n/3", "2024-05-05T20:00:20Z", "assistant", "Tom", "Impressive! Where do you run?", "n8"),
    ("n/3", "2024-05-05T20:00:40Z", "user", "Nora", "Along the river Douro.", "n9"),
]
PLANTED = {"porto": "n1", "nurse": "n3", "biscuit": "n4", "cats": "n6", "5 km": "n7"}


def run(home: Home, *args: str) -> str:
    done = subprocess.run([*diarist_cmd(), *args], capture_output=True, text=True,
                          env=subprocess_env(home), timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def test_a_night_against_the_real_model(llm_server: str, home: Home, tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "t.jsonl", [
        dict(zip(("session", "at", "role", "name", "text", "ref"), t, strict=True))
        for t in TURNS])
    home.config_file.write_text(yaml.safe_dump({"llm": {"backend": "openai",
                                                        "base_url": llm_server}}))
    run(home, "import", str(path))
    out = run(home, "mine")
    assert f"with {MODEL_ALIAS}" in out
    run(home, "dream")
    run(home, "consolidate")
    with EventLog(home.events_db) as log:
        mined = log.read(types=["MemoriesMined"])
        failed = log.read(types=["MiningFailed"])
    # every session mined, by the model itself: none lost to malformed JSON
    assert sorted(e.payload["session"] for e in mined) == ["n/1", "n/2", "n/3"]
    assert failed == [] and {e.payload["model"] for e in mined} == {MODEL_ALIAS}
    with open_store(home) as store:
        store.catch_up_all()
        assert mining_totals(store.db)["waiting"] == 0
        # the transcript is from 2024: the dream archives what faded since
        memories = list_memories(store.db, None, ("active", "superseded", "archived"))
    assert memories and all(m.type in MEMORY_TYPES and m.refs for m in memories)
    refs_of = {r: t[4] for t in TURNS for r in [t[5]]}
    found = {}
    for keyword, ref in PLANTED.items():
        hits = [m for m in memories if keyword in m.content.lower() and ref in m.refs]
        if hits:
            found[keyword] = hits[0].content
    assert len(found) >= 2, (found, [(m.content, m.refs) for m in memories], refs_of)
    assert all(ref in refs_of for m in memories for ref in m.refs)  # refs name real turns
    # journals of the days the turns were said, and a log that replays without the model
    assert sorted(p.name for p in home.memory_dir.glob("2024-*.md"))
    verify = run(home, "replay", "--verify")
    assert "DIFFERS" not in verify, verify
    print(json.dumps(found, indent=1))
