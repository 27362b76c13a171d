"""What mining distills, against what LoCoMo's annotators kept.

    python benchmarks/bench_observations.py [--convs conv-26,conv-30] [--dream] [--json]
    python benchmarks/bench_observations.py --backend openai --base-url http://127.0.0.1:8080

For each LoCoMo dev conversation: a fresh home, ``import``, the settle the night starts with
(the embedding model exported, the turns embedded), then ``mine`` as the default night runs
it (the configured extractor: with no model configured, the heuristic one; with
``--backend``, that model), and each session's mined memories are set against LoCoMo's own
observations of that session (``<conv>.observations.jsonl``), by MiniLM cosine (fp32):

- **observation recall**: the share of observations that some memory of the same session
  states (cosine ≥ 0.6; 0.70 is the median between an observation and its own evidence
  turn, 0.36 against another turn of the session);
- **precision**: the share of memories that state some observation of their session;
- **refs**: the median number of turns a memory cites;
- **quotes**: the share of memories written as a quote ("Name: …") instead of a statement.

Also the mining time and memories per session. ``--dream`` then dreams as the night does and
counts what it superseded (LoCoMo's people rarely change a single-valued fact, so each
supersede is one to read: ``--show-supersedes`` prints them). Needs ``../shared/bench/locomo``
beside the checkout.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog, Home  # noqa: E402
from events.config import load_config  # noqa: E402
from events.transcript import import_file  # noqa: E402
from projections import open_store  # noqa: E402
from projections.memories import list_memories  # noqa: E402
from workers.mining.extract import miner_spec  # noqa: E402
from workers.mining.mine import mine  # noqa: E402
from workers.sync.catch_up import settle  # noqa: E402

CONVS = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
MATCH = 0.6
QUOTE = re.compile(r"^[A-Z][\w.'’ -]{0,40}:\s")
STATUSES = ("active", "superseded", "archived")


def embedder(models: Path):  # type: ignore[no-untyped-def]
    from projections.embedding import OnnxEmbedder
    from workers.models.embedding import export_model

    if not (models / "model-fp32.onnx").exists():
        export_model(models)
    return OnnxEmbedder(models / "model-fp32.onnx", models / "tokenizer.json")


def mined(conv: str, work: Path, backend: str | None, base_url: str | None,
          model: str | None, dreams: list | None = None) -> tuple[dict[str, list], float, int]:
    """(session → mined memories, seconds mining, turns) for one conversation; with
    ``dreams`` (a list), a dream after mining, and its supersedes added to the list as
    (subject, [replaced contents], new content)."""
    home = Home(work / conv)
    home.ensure()
    with EventLog(home.events_db) as log:
        import_file(log, LOCOMO / f"{conv}.transcript.jsonl")
    settle(home)  # as the night does before mining: the embedding model (the attribute
    # classifier and the near-duplicate check need it) and the turns' vectors
    spec = miner_spec(load_config(home), backend=backend, base_url=base_url, model=model)
    started = time.monotonic()
    report = mine(home, spec, now=None)
    seconds = time.monotonic() - started
    if dreams is not None:
        from workers.dreaming.dream import dream

        dream(home)
    with open_store(home) as store:
        store.catch_up_all()
        memories = [m for m in list_memories(store.db, None, STATUSES)
                    if m.source not in ("", "user", "agent")]
        if dreams is not None:
            by_id = {m.id: m for m in memories}
            for event in store.log.iter_all():
                if event.type == "MemorySuperseded":
                    new = by_id[event.payload["by"]]
                    dreams.append((new.subject, [by_id[i].content for i in event.payload["ids"]
                                                 if i in by_id], new.content))
    by_session: dict[str, list] = defaultdict(list)
    for memory in memories:
        by_session[memory.session].append(memory)
    return by_session, seconds, report.turns


def score(conv: str, memories: dict[str, list], embed) -> dict:  # type: ignore[no-untyped-def]
    observations: dict[str, list[str]] = defaultdict(list)
    for line in (LOCOMO / f"{conv}.observations.jsonl").read_text().splitlines():
        row = json.loads(line)
        observations[row["session"]].append(row["fact"])
    stated = matching = total = 0
    refs: list[int] = []
    quotes = 0
    for session, facts in observations.items():
        found = memories.get(session, [])
        total += len(found)
        refs += [len(m.refs) for m in found]
        quotes += sum(1 for m in found if QUOTE.match(m.content))
        if not found:
            continue
        cosines = embed.embed(facts) @ embed.embed([m.content for m in found]).T
        stated += int((cosines.max(axis=1) >= MATCH).sum())
        matching += int((cosines.max(axis=0) >= MATCH).sum())
    n_obs = sum(len(f) for f in observations.values())
    return {"conv": conv, "sessions": len(observations), "observations": n_obs,
            "memories": total, "recall": stated / n_obs, "precision": matching / max(total, 1),
            "median_refs": statistics.median(refs) if refs else 0,
            "quotes": quotes / max(total, 1), "stated": stated, "matching": matching}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--convs", default=",".join(CONVS))
    parser.add_argument("--backend", default=None, help="a model backend (default: the "
                        "night's own choice, the heuristic extractor with none configured)")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--models", type=Path, default=Path("/tmp/diarist-bench-minilm"))
    parser.add_argument("--dream", action="store_true",
                        help="dream after mining and count the supersedes")
    parser.add_argument("--show-supersedes", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not LOCOMO.is_dir():
        raise SystemExit(f"no LoCoMo dev set at {LOCOMO}")
    embed = embedder(args.models)
    rows = []
    with tempfile.TemporaryDirectory(prefix="diarist-obs-") as work:
        for conv in args.convs.split(","):
            dreams: list | None = [] if args.dream or args.show_supersedes else None
            memories, seconds, turns = mined(conv, Path(work), args.backend, args.base_url,
                                             args.model, dreams)
            row = score(conv, memories, embed)
            row.update(seconds=round(seconds, 1), turns=turns,
                       per_session=round(row["memories"] / row["sessions"], 1))
            if dreams is not None:
                row.update(supersedes=len(dreams),
                           superseded=sum(len(old) for _, old, _ in dreams))
                for subject, old, new in dreams if args.show_supersedes else []:
                    print(f"{conv} {subject}: {old} -> {new!r}")
            rows.append(row)
    overall = {"conv": "all", "observations": sum(r["observations"] for r in rows),
               "memories": sum(r["memories"] for r in rows),
               "sessions": sum(r["sessions"] for r in rows),
               "turns": sum(r["turns"] for r in rows),
               "seconds": round(sum(r["seconds"] for r in rows), 1)}
    if rows and "supersedes" in rows[0]:
        overall.update(supersedes=sum(r["supersedes"] for r in rows),
                       superseded=sum(r["superseded"] for r in rows))
    overall["recall"] = sum(r["stated"] for r in rows) / overall["observations"]
    overall["precision"] = sum(r["matching"] for r in rows) / max(overall["memories"], 1)
    overall["per_session"] = round(overall["memories"] / overall["sessions"], 1)
    overall["median_refs"] = statistics.median(r["median_refs"] for r in rows)
    overall["quotes"] = sum(r["quotes"] * r["memories"] for r in rows) / max(
        overall["memories"], 1)
    if args.json:
        print(json.dumps({"rows": rows, "overall": overall}, indent=1))
        return
    print("| conversation | sessions | observations | memories/session | observation recall |"
          " precision | median refs | quotes | mining s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in [*rows, overall]:
        print(f"| {r['conv']} | {r['sessions']} | {r['observations']} | {r['per_session']} |"
              f" {r['recall']:.3f} | {r['precision']:.3f} | {r['median_refs']:g} |"
              f" {r['quotes']:.1%} | {r['seconds']} |")
    if "supersedes" in overall:
        print()
        print("| conversation | supersedes by the dream | memories superseded |")
        print("|---|---|---|")
        for r in [*rows, overall]:
            print(f"| {r['conv']} | {r['supersedes']} | {r['superseded']} |")


if __name__ == "__main__":
    main()
