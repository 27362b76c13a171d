"""How long the default night takes, and where the time goes.

    python benchmarks/bench_night.py [--convs conv-41,conv-30] [--json]

A fresh home imports LoCoMo dev conversations (conv-41 and conv-30: 1,032 turns), then the
night runs as ``diarist worker`` runs it, nothing configured, each phase timed: the first
settle (exporting the embedding model once, embedding the turns), mining, dreaming,
consolidation and the last settle (embedding what the night wrote). Run it alone: it
measures time on a shared CPU. Needs ``../shared/bench/locomo``.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog, Home  # noqa: E402
from events.config import load_config  # noqa: E402
from events.transcript import import_file  # noqa: E402
from workers.consolidation.consolidate import consolidate  # noqa: E402
from workers.dreaming.dream import dream  # noqa: E402
from workers.mining.extract import miner_spec  # noqa: E402
from workers.mining.mine import mine  # noqa: E402
from workers.sync.catch_up import settle  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--convs", default="conv-41,conv-30")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="diarist-night-") as work:
        home = Home(Path(work) / "home").ensure()
        turns = 0
        with EventLog(home.events_db) as log:
            for conv in args.convs.split(","):
                transcript = LOCOMO / f"{conv}.transcript.jsonl"
                import_file(log, transcript)
                turns += len(transcript.read_text().splitlines())
        spec = miner_spec(load_config(home))
        phases: dict[str, float] = {}
        memories = 0

        def timed(name: str, step):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            result = step()
            phases[name] = round(time.perf_counter() - started, 2)
            return result

        timed("settle (export model, embed turns)", lambda: settle(home))
        memories = timed("mine", lambda: mine(home, spec)).new
        timed("dream", lambda: dream(home))
        timed("consolidate", lambda: consolidate(home, spec))
        timed("settle (embed the night's writing)", lambda: settle(home))
    total = sum(phases.values())
    figures = {"turns": turns, "memories": memories, "phases_s": phases,
               "total_s": round(total, 1), "minutes_per_1000_turns": round(
                   total / 60 / turns * 1000, 2)}
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"{turns} turns, {memories} memories mined, {extractor(spec)}")
    for name, seconds in phases.items():
        print(f"  {name:<38} {seconds:7.2f} s")
    print(f"  {'total':<38} {total:7.2f} s = {figures['minutes_per_1000_turns']} min per "
          "1,000 turns")


def extractor(spec) -> str:  # type: ignore[no-untyped-def]
    return "with a model" if spec.uses_model else "no model (statements)"


if __name__ == "__main__":
    main()
