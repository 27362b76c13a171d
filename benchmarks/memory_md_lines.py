"""What the lines of MEMORY.md and of the day's journals are, home by home, after a night.

    python benchmarks/memory_md_lines.py DIR

For each home under ``DIR`` (for example the homes of ``recall_dev.py … --homes DIR
--night``) with a ``memory/MEMORY.md``: its lines, the lines that do not read on their own
(:func:`projections.readable.self_contained`: "Tim is a huge fan of this genre"), and
for a LoCoMo conversation (a home named ``conv-…`` with its observations beside the
checkout) the lines that state one of LoCoMo's observations of the conversation (MiniLM
cosine ≥ 0.6, as ``bench_observations.py`` counts), and the pairs of its lines that say
much the same (MiniLM cosine ≥ 0.9, the dreaming's near-duplicate threshold, before its
guards), and the lines the next chat session's start block holds (the default 2,048-token
window), which a session's first question is answered from. Then the same for the
journals' lines (``memory/YYYY-MM-DD.md``), each against the observations of its own day.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog, Home  # noqa: E402
from events.config import Config  # noqa: E402
from projections import open_store  # noqa: E402
from projections.inject import budget_for  # noqa: E402
from projections.readable import self_contained  # noqa: E402
from workers.chat.memory import SessionMemory  # noqa: E402
from workers.consolidation.consolidate import bare  # noqa: E402

MATCH = 0.6
SAME = 0.9
WINDOW = 2048


def start_block(path: Path) -> str:
    """The start block a chat session on the home at ``path`` opens with (default config)."""
    config, home = Config(), Home(path)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        memory = SessionMemory(home, store, budget_for(WINDOW, config.memory.budget_pct),
                               config.memory.top_k, "chat/bench")
        return memory.build_start().text


def lines_of(path: Path) -> list[str]:
    return [bare(line[2:].strip()) for line in path.read_text().splitlines()
            if line.startswith("- ")]


def stating(lines: list[str], observations: list[str], embed) -> int:  # type: ignore[no-untyped-def]
    import numpy as np

    if not lines or not observations:
        return 0
    cosine = np.asarray(embed(lines)) @ np.asarray(embed(observations)).T
    return int((cosine.max(axis=1) >= MATCH).sum())


def close_pairs(lines: list[str], embed) -> int:  # type: ignore[no-untyped-def]
    """Pairs of ``lines`` at MiniLM cosine ≥ :data:`SAME`."""
    import numpy as np

    if len(lines) < 2:
        return 0
    vectors = np.asarray(embed(lines))
    return int((np.triu(vectors @ vectors.T, 1) >= SAME).sum())


def journal_lines(path: Path) -> list[str]:
    """A day's entries, without the time and source that open each."""
    return [re.sub(r"^\d\d:\d\d:\d\d \[[^\]]*\] ", "", line[2:].strip())
            for line in path.read_text().splitlines() if line.startswith("- ")]


def journals(home: Path, embed) -> str:  # type: ignore[no-untyped-def]
    """A row of the journals' table for one home."""
    days = sorted((home / "memory").glob("????-??-??.md"))
    lines = {day.stem: journal_lines(day) for day in days}
    total = sum(len(x) for x in lines.values())
    loose = sum(not self_contained(line) for x in lines.values() for line in x)
    observed = LOCOMO / f"{home.name}.observations.jsonl"
    stated = "—"
    if observed.exists() and embed is not None:
        facts = [json.loads(x) for x in observed.read_text().splitlines()]
        stated = str(sum(stating(x, [f["fact"] for f in facts if f["date"] == day], embed)
                         for day, x in lines.items()))
    mean = sum(len(line) for x in lines.values() for line in x) / max(total, 1)
    return (f"| {home.name} | {len(days)} | {total / max(len(days), 1):.1f} | {mean:.0f} |"
            f" {loose} | {stated} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("homes", type=Path, help="a folder of homes, one per conversation")
    parser.add_argument("--models", type=Path, default=Path("/tmp/diarist-bench-minilm"),
                        help="where the fp32 MiniLM export is (made there if missing)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_observations import embedder

    embed = embedder(args.models).embed
    print("| home | lines | characters a line (mean) | not reading on their own |"
          f" stating an observation | pairs at cosine ≥ {SAME} | in the start block |")
    print("|---|---|---|---|---|---|---|")
    for home in sorted(p for p in args.homes.iterdir() if (p / "memory/MEMORY.md").exists()):
        lines = lines_of(home / "memory" / "MEMORY.md")
        loose = sum(not self_contained(line) for line in lines)
        observed = LOCOMO / f"{home.name}.observations.jsonl"
        stated = "—"
        if observed.exists():
            facts = [json.loads(x)["fact"] for x in observed.read_text().splitlines()]
            stated = str(stating(lines, facts, embed))
        mean = sum(len(line) for line in lines) / max(len(lines), 1)
        block = start_block(home).casefold()
        started = sum(line.rstrip(". ").casefold() in block for line in lines)
        print(f"| {home.name} | {len(lines)} | {mean:.0f} | {loose} | {stated} |"
              f" {close_pairs(lines, embed)} | {started} |")
    print("\n| home | journal days | lines a day (mean) | characters a line (mean) |"
          " not reading on their own | stating an observation of the day |")
    print("|---|---|---|---|---|---|")
    for home in sorted(p for p in args.homes.iterdir() if (p / "memory").is_dir()):
        print(journals(home, embed))


if __name__ == "__main__":
    main()
