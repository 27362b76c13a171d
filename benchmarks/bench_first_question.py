"""A session's first question about what the night wrote into MEMORY.md, asked in the chat.

    diarist serve-model [--model 1.5b] --port 8080 &
    python benchmarks/recall_dev.py ../shared/bench/locomo --homes DIR --night
    python benchmarks/bench_first_question.py DIR [--base-url URL] [--code CHECKOUT]
        [--temperature T] [--tools] [--json]

For each LoCoMo home under ``DIR`` (after the default night), the conversation's
single-hop dev questions whose answer a line of its MEMORY.md states ("Which classical
musicians does Melanie enjoy listening to?": "- Melanie is a fan of both classical like
Bach and Mozart, …"): a line that contains the answer and shares at least
:data:`FROM_EVIDENCE` of its content words (past the speakers' names)
with the question's evidence turns, so a line that holds the answer's word by chance ("…
running, reading, or playing Melanie's violin" for the shoes Melanie runs in) does not
count. Each is the first message of a fresh ``diarist chat`` session (the default
config, a 2,048-token window, tools off; ``--tools``: on, as the config's default has
them) on a copy of its home, through the real backend. The first message's note is
capped, so the reply comes from the start block, read ahead while the person types. Prints
each reply (the session's ``AssistantTurn``), then how many contain the answer and the F1.

``--code`` runs the chat of another checkout (``git worktree add /tmp/base BASE``) on the
same homes and questions, to compare two versions. The chat samples at the server's
temperature by default (``llm.temperature: null``), so two runs differ by a few replies;
``--temperature 0`` sets ``llm.temperature`` in each copy's config, for a figure that
repeats.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog  # noqa: E402
from workers.eval.metrics import answer_f1, contains_answer  # noqa: E402
from workers.mining.text import content_words  # noqa: E402

FROM_EVIDENCE = 0.5   # of a line's words, at least, in the question's evidence turns


def words(text: str) -> set[str]:
    """The words of ``text`` that carry meaning (:func:`workers.mining.text.content_words`)."""
    return set(content_words(text))


def states_evidence(line: str, evidence: str, names: set[str]) -> bool:
    """Whether a MEMORY.md ``line`` restates the ``evidence`` turns: at least
    :data:`FROM_EVIDENCE` of its words, past the speakers' ``names``, are theirs."""
    said = words(line) - names
    return bool(said) and len(said & words(evidence)) >= FROM_EVIDENCE * len(said)


def questions(homes: Path) -> list[tuple[Path, dict]]:
    """(home, question) for the single-hop questions a line of each home's MEMORY.md answers
    from the question's evidence (:func:`states_evidence`)."""
    chosen = []
    for home in sorted(p for p in homes.iterdir() if (p / "memory/MEMORY.md").exists()):
        lines = [line[2:] for line in (home / "memory/MEMORY.md").read_text().splitlines()
                 if line.startswith("- ")]
        turns = [json.loads(x) for x in
                 (LOCOMO / f"{home.name}.transcript.jsonl").read_text().splitlines()]
        text = {t["ref"]: t["text"] for t in turns}
        names = {w for t in turns for w in words(t.get("name") or "")}
        for row in (LOCOMO / f"{home.name}.questions.jsonl").read_text().splitlines():
            q = json.loads(row)
            evidence = " ".join(text.get(ref, "") for ref in q["evidence"])
            if q["category"] == "single-hop" and any(
                    contains_answer(line, str(q["answer"]))
                    and states_evidence(line, evidence, names) for line in lines):
                chosen.append((home, q))
    return chosen


def first_reply(home: Path, question: str, base_url: str, code: Path, work: Path,
                temperature: float | None = None, tools: bool = False) -> str:
    """The reply to ``question`` as the first message of a chat on a copy of ``home``
    (with ``llm.temperature`` set when ``temperature`` is given)."""
    copy = work / "home"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(home, copy)
    if temperature is not None:
        config = copy / "diarist.yaml"
        settings = (yaml.safe_load(config.read_text()) or {}) if config.exists() else {}
        settings.setdefault("llm", {})["temperature"] = temperature
        config.write_text(yaml.safe_dump(settings))
    subprocess.run(
        [sys.executable, "-m", "cli", "chat", "--backend", "openai", "--base-url", base_url,
         "--tools" if tools else "--no-tools"], input=f"{question}\n/exit\n",
        capture_output=True, text=True, cwd=code, env=dict(os.environ, DIARIST_HOME=str(copy)),
        timeout=600, check=True)
    with EventLog(copy / "events.db") as log:
        said = [e.payload["text"] for e in log.read(types=["AssistantTurn"])
                if str(e.payload.get("session", "")).startswith("chat/")]
    return said[0].strip() if said else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("homes", type=Path, help="LoCoMo homes after the night, one a conversation")
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose chat runs")
    parser.add_argument("--temperature", type=float, default=None,
                        help="llm.temperature for the chat (default: the server's)")
    parser.add_argument("--tools", action="store_true",
                        help="the chat's memory tools on (the config's default)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="diarist-first-") as tmp:
        for home, q in questions(args.homes):
            reply = first_reply(home, q["query"], args.base_url, args.code.resolve(), Path(tmp),
                                args.temperature, args.tools)
            rows.append({"id": q["id"], "question": q["query"], "answer": q["answer"],
                         "reply": reply, "contains": contains_answer(reply, str(q["answer"])),
                         "f1": answer_f1(reply, str(q["answer"]), q["category"])})
            if not args.json:
                print(f"{q['id']}: {q['query']} → {reply[:100]}", flush=True)
    n = len(rows)
    contained = sum(r["contains"] or 0 for r in rows)
    f1 = sum(r["f1"] for r in rows) / n if n else 0.0
    if args.json:
        print(json.dumps({"rows": rows, "contains": contained, "questions": n, "f1": f1}))
    else:
        print(f"contain the answer: {contained:.0f} of {n}; F1 {f1:.3f}")


if __name__ == "__main__":
    main()
