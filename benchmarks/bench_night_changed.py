"""One default night over histories whose facts change, dated long before today.

    python benchmarks/bench_night_changed.py [--seeds 1,2,3] [--people 4] [--json]

The changed-facts generator (:mod:`workers.eval.changed_facts`) writes people who chat
with an assistant over eight sessions weeks apart (from January 2024: more than a year
before today), among small talk; some facts change from session to session (home city,
job, a pet, a pet's name, a favourite drink, a hobby). Each person is imported into a fresh
home and one night runs as ``diarist worker`` runs it, with nothing configured
(:func:`workers.schedule.run_night`). Then MEMORY.md is read:

- **current**: the share of changed facts whose current value MEMORY.md states;
- **replaced**: the share of replaced values MEMORY.md still states (want 0); a new pet
  is one more, not one instead, so the older pets are not counted;
- **assistant lines**: lines of MEMORY.md that say what the assistant said (want 0);
- **lines** and **characters** of MEMORY.md;
- **in the start block**: the share of changed facts whose current value the next chat
  session's start block states (the default 2,048-token window: 512 tokens of memory, half
  of them the start block), which is all a session's first question is answered from.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from memory_md_lines import start_block  # noqa: E402

from events import EventLog, Home  # noqa: E402
from events.transcript import import_file  # noqa: E402
from workers.eval.changed_facts import ASSISTANT, ATTRIBUTES, REPLIES, generate  # noqa: E402
from workers.eval.dataset import write_layout  # noqa: E402
from workers.mining.distribute import LocalExtractor  # noqa: E402
from workers.schedule import run_night  # noqa: E402

CHANGED = ("changed-fact", "changed-state")


def values_of(answer: str) -> tuple[str, ...]:
    """The values an answer's attribute takes, or none for an attribute whose new value is
    one more (a new pet), which leaves the old one true."""
    for attribute in ATTRIBUTES:
        if answer in attribute.values:
            return () if attribute.adds else attribute.values
    return (answer,)


def night(conv, work: Path) -> dict:  # type: ignore[no-untyped-def]
    home = Home(work / conv.id)
    home.ensure()
    [transcript, _] = write_layout([conv], work / f"{conv.id}-files")
    with EventLog(home.events_db) as log:
        import_file(log, transcript)
    run_night(home, lambda h, spec: LocalExtractor(spec))
    start = start_block(home.root).casefold()
    path = home.memory_dir / "MEMORY.md"
    text = path.read_text() if path.exists() else ""
    low = text.casefold()
    by_ref = {t["ref"]: t["text"] for t in conv.turns}
    current = replaced = replaced_total = in_start = 0
    missing: list[str] = []
    kept: list[str] = []
    questions = [q for q in conv.questions if q.category in CHANGED]
    for question in questions:
        current += question.answer.casefold() in low
        in_start += question.answer.casefold() in start
        if question.answer.casefold() not in low:
            missing.append(question.answer)
        olds = {v for ref in question.stale for v in values_of(question.answer)
                if v.casefold() in by_ref[ref].casefold() and v != question.answer}
        replaced_total += len(olds)
        kept += sorted(v for v in olds if v.casefold() in low)
        replaced += sum(1 for v in olds if v.casefold() in low)
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assistant = sum(1 for line in lines if ASSISTANT.casefold() in line.casefold()
                    or any(r.rstrip(".!").casefold() in line.casefold() for r in REPLIES))
    return {"conv": conv.id, "changed": len(questions), "current": current,
            "replaced_total": replaced_total, "replaced": replaced, "in_start": in_start,
            "assistant": assistant,
            "lines": len(lines), "chars": len(text), "memory_md": text,
            "missing": missing, "kept": kept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--people", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", action="store_true", help="print each MEMORY.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="diarist-night-") as work:
        for seed in (int(s) for s in args.seeds.split(",")):
            for conv in generate(seed, people=args.people).conversations:
                rows.append(night(conv, Path(work)))
    total = {k: sum(r[k] for r in rows) for k in ("changed", "current", "replaced_total",
                                                   "replaced", "assistant", "lines", "chars",
                                                   "in_start")}
    if args.json:
        print(json.dumps({"rows": [{k: v for k, v in r.items() if k != "memory_md"}
                                   for r in rows], "total": total}, indent=1))
        return
    for r in rows:
        if args.show:
            print(f"--- {r['conv']}\n{r['memory_md']}")
            print(f"current values missing: {r['missing']}; replaced values kept: {r['kept']}")
    print("| histories | changed facts | current value stated | replaced value stated |"
          " assistant lines | MEMORY.md lines (mean) | chars (mean) |"
          " current value in the start block |")
    print("|---|---|---|---|---|---|---|---|")
    n = len(rows)
    print(f"| {n} | {total['changed']} | {total['current'] / total['changed']:.1%} |"
          f" {total['replaced'] / max(total['replaced_total'], 1):.1%}"
          f" ({total['replaced']}/{total['replaced_total']}) | {total['assistant']} |"
          f" {total['lines'] / n:.1f} | {total['chars'] / n:.0f} |"
          f" {total['in_start'] / total['changed']:.1%} |")


if __name__ == "__main__":
    main()
