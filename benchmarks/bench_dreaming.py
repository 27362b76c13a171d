"""Dreaming over 100,000 memories (target: under 60 s on this machine).

    python benchmarks/bench_dreaming.py [--memories 100000] [--json]

Run it alone (``flock /tmp/diarist-bench.lock …``).

Set-up (not timed): a fresh home gets the memories as ``MemoriesMined`` events (1,000 a
event, dated over two years): people × attributes × values from word lists, of which 2 %
repeat another memory's text (exact duplicates, in other words or case), 2 % are near
duplicates (the same sentence with "really" added), and 1 % set the same attribute of the
same person again, later (conflicts). The projections are caught up. Vectors: embedding
100,000 texts with the real model takes ~5 min here and is the worker's job as memories
arrive, not the dream's, so the cache is filled with synthetic 384-d unit vectors instead —
clustered (4,000 centres; each memory = centre + noise), a near duplicate = its original's
vector + a little noise (cosine ≈ 0.95), an exact duplicate = the same text, hence the
same vector. An ``EmbeddingModelChosen`` names the synthetic model.

Timed: ``workers.dreaming.dream.dream`` — the whole pass as ``diarist dream`` runs it:
catch-up, loading the active memories and their vectors, exact and near-duplicate
grouping, conflicts, fading, appending the decisions and projecting them. Also timed on
their own (same data): the near-duplicate pair search, and a second dream (nothing to do).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from events import EventLog, Home, NewEvent  # noqa: E402
from events.types import EmbeddingModelChosen, MemoriesMined  # noqa: E402
from projections import open_store  # noqa: E402
from projections.items import content_hash  # noqa: E402
from projections.vector_cache import active_key  # noqa: E402

PEOPLE = [f"{a}{b}" for a in ("Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo",
                              "Jo") for b in ("", "lee", "ton", "ra", "mi")]
VERBS = ["likes", "plays", "collects", "reads about", "cooks", "visits", "studies", "fixes",
         "paints", "writes about", "hikes to", "teaches", "builds", "sells", "photographs"]
THINGS = [f"{adj} {noun}" for adj in ("green", "old", "tiny", "rare", "loud", "quiet", "red",
                                      "fast", "odd", "warm", "cold", "wild")
          for noun in ("tea", "chess", "stamps", "novels", "pasta", "museums", "maths",
                       "bikes", "lakes", "jazz", "robots", "ferns", "clocks", "kites",
                       "maps", "boats")]
CITIES = ["Berlin", "Lisbon", "Porto", "Oslo", "Rome", "Lyon", "Turin", "Gdansk", "Cork"]
NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def build(home: Home, n: int, seed: int = 11) -> dict[str, int]:
    import numpy as np

    rng = random.Random(seed)
    vec_rng = np.random.default_rng(seed)
    centres = vec_rng.standard_normal((4000, 384)).astype(np.float32)
    memories: list[dict] = []
    vectors: dict[str, np.ndarray] = {}
    planted = {"exact": 0, "near": 0, "conflict": 0}
    start = NOW - dt.timedelta(days=730)
    for i in range(n):
        roll = rng.random()
        person = rng.choice(PEOPLE)
        if memories and roll < 0.02:
            original = rng.choice(memories)
            text = original["content"].upper() if rng.random() < 0.5 else \
                original["content"].rstrip(".") + "!"
            planted["exact"] += 1
        elif memories and roll < 0.04:
            original = rng.choice(memories)
            who, rest = original["content"].split(" ", 1)
            text = f"{who} really {rest}"
            vectors[text] = vectors[original["content"]] + \
                0.07 * vec_rng.standard_normal(384).astype(np.float32)
            planted["near"] += 1
        elif roll < 0.05:
            text = f"{person} lives in {rng.choice(CITIES)}"
            planted["conflict"] += 1
        else:
            text = f"{person} {rng.choice(VERBS)} {rng.choice(THINGS)} #{i}"
        subject = f"{person.lower()}|home" if " lives in " in text else ""
        memories.append({"id": f"b{i:06d}", "type": "user_preference", "content": text,
                         "subject": subject, "confidence": 0.8, "refs": [f"r{i}"]})
        if text not in vectors:
            vectors[text] = 1.4 * centres[rng.randrange(4000)] + \
                vec_rng.standard_normal(384).astype(np.float32)
    with EventLog(home.events_db) as log:
        log.append(EmbeddingModelChosen(model="synthetic-384", dimension=384,
                                        checksum="0" * 64), stream="memory")
        batch = []
        for k in range(0, n, 1000):
            at = start + dt.timedelta(days=730 * k / n)
            batch.append(NewEvent(stream="memory", occurred_at=at, data=MemoriesMined(
                session=f"bench/{k}", model="bench", memories=memories[k:k + 1000])))
        log.append_many(batch)
    with open_store(home) as store:
        store.catch_up_all(batch_size=10)
        key = active_key(store.db)
        rows = []
        for text, vec in vectors.items():
            unit = (vec / np.linalg.norm(vec)).astype(np.float32)
            rows.append((content_hash(text), key, unit.tobytes()))
        store.db.execute("BEGIN IMMEDIATE")
        store.db.executemany("INSERT OR REPLACE INTO embeddings (content_hash, model, vector)"
                             " VALUES (?, ?, ?)", rows)
        store.db.execute("COMMIT")
    return planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from workers.dreaming.dream import dream
    from workers.dreaming.similarity import near_pairs

    work = Path(tempfile.mkdtemp(prefix="diarist-bench-dream-"))
    try:
        home = Home(work / "home").ensure()
        t0 = time.monotonic()
        planted = build(home, args.memories)
        setup = time.monotonic() - t0
        from projections.memory_vectors import memory_vectors

        with open_store(home) as store:
            t0 = time.monotonic()
            ids, matrix = memory_vectors(store.db)
            load_s = time.monotonic() - t0
        assert matrix is not None
        t0 = time.monotonic()
        pairs = near_pairs(matrix, 0.9)
        pairs_s = time.monotonic() - t0
        t0 = time.monotonic()
        report = dream(home, now=NOW, embed=False)
        dream_s = time.monotonic() - t0
        t0 = time.monotonic()
        again = dream(home, now=NOW, embed=False)
        again_s = time.monotonic() - t0
        out = {"memories": report.memories, "setup_seconds": round(setup, 1),
               "dream_seconds": round(dream_s, 2), "vector_load_seconds": round(load_s, 2),
               "near_pair_search_seconds": round(pairs_s, 2), "near_pairs": len(pairs),
               "planted": planted, "merged_groups": report.merged_groups,
               "merged": report.merged, "superseded": report.superseded,
               "archived": report.archived, "events": report.events,
               "second_dream_seconds": round(again_s, 2), "second_dream_events": again.events}
        if args.json:
            print(json.dumps(out))
        else:
            for k, v in out.items():
                print(f"{k:>26}: {v}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
