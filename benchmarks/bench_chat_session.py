"""Several questions in one chat session with a real small model: does each get its memory?

    python benchmarks/bench_chat_session.py [--conv conv-26] [--questions 12] [--seed 12]
                                            [--model 0.5b|1.5b] [--ctx 2048] [--night]

Starts `diarist serve-model` on a free port, imports a LoCoMo dev conversation into a
scratch home and syncs it as the README's main job does (embeddings included), then asks
``--questions`` of its answerable questions (a fixed random draw, adversarial ones left out)
one after another in *one* `ChatSession` on the `openai` backend, the defaults but for the
memory tools (off, as for a 0.5B model), each question worded as `diarist eval --answer`
words it. Twice, each on a fresh copy of the home:

- *notes give way* (the chat as it is): when the notes in the history leave a new message
  too little of the budget, the oldest leave the prompt
  (``workers.chat.memory.giving_way``);
- *notes stay*: ``giving_way`` patched to keep every note, so once the notes fill the
  budget no later message gets one (until a compression frees their share).

``--night`` runs the default night on the home first (mine, dream, consolidate, as the
worker does with nothing configured), so the start block holds the night's MEMORY.md, as
a person's sessions after the first night do; without it the start block holds recall only.

Per way: questions with a note, the replies' F1 and the replies that contain the answer
(`diarist eval`'s scores), notes that took earlier ones out, the median first-token time of the
questions after the first, and of those whose note took one out; the replies the chat held
back and asked again (echoes, repeats, recitals; alone: :mod:`workers.chat.echo`); the memory in
the prompt never exceeds the budget (checked).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_mining import free_port, start_server  # noqa: E402
from bench_real_chat import CLI  # noqa: E402

from events import EventLog, Home  # noqa: E402
from events.config import Config, MemoryConfig  # noqa: E402
from projections import open_store  # noqa: E402
from workers.chat import session as chat_session  # noqa: E402
from workers.eval.answer import INSTRUCTION  # noqa: E402
from workers.eval.metrics import answer_f1, contains_answer  # noqa: E402
from workers.llm import Backend, make_backend  # noqa: E402

GIVE_WAY, STAY = "notes give way", "notes stay"


def seeded_home(conv: str, root: Path, night: bool = False) -> Path:
    home = root / "seed"
    env = {"DIARIST_HOME": str(home)}
    for args in (["import", str(LOCOMO / f"{conv}.transcript.jsonl")], ["sync"]):
        subprocess.run([*CLI, *args], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, **env, "PYTHONPATH": str(REPO)})
    if night:
        from workers.eval.homes import night_over

        night_over(Home(home))
    return home


def questions(conv: str, n: int, seed: int) -> list[dict]:
    rows = [json.loads(line) for line in
            (LOCOMO / f"{conv}.questions.jsonl").read_text().splitlines()]
    rows = [q for q in rows if q["category"] != "adversarial" and q.get("answer")]
    return random.Random(seed).sample(rows, min(n, len(rows)))


@contextmanager
def open_chat(home: Home, backend: Backend,
              memory: bool = True) -> Iterator[chat_session.ChatSession]:
    """A started `ChatSession` on ``home``, the defaults but for the memory tools (off, as
    for a 0.5B model), its start block read by the server before the first message;
    ``memory`` off: no start block and no notes."""
    config = MemoryConfig(tools=False, inject_on_start=memory, turn_recall=memory)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session = chat_session.ChatSession(home, log, store, backend, Config(memory=config),
                                           tools=False)
        session.start()
        if session.warming is not None:
            session.warming.join(60)
        yield session


def run(seed_home: Path, root: Path, url: str, asked: list[dict], way: str) -> dict:
    home_dir = root / way.replace(" ", "-")
    shutil.copytree(seed_home, home_dir)
    home = Home(home_dir)
    backend = make_backend("openai", base_url=url, max_tokens=32, temperature=0)
    keep = chat_session.giving_way
    if way == STAY:
        chat_session.giving_way = lambda earlier, budget, start: 0
    rows = []
    try:
        with open_chat(home, backend) as session:
            for q in asked:
                start = session.injection.injected_tokens if session.injection else 0
                leaving = chat_session.giving_way(
                    [m.memory_tokens for m in session.history if m.note], session.budget, start)
                first: list[float] = []

                def on_token(_piece: str, first: list[float] = first) -> None:
                    if not first:
                        first.append(time.perf_counter())

                t0 = time.perf_counter()
                reply = session.send(f"{q['query']}\n{INSTRUCTION}", on_token=on_token)
                asked_at = [m for m in session.history if m.role == "user"]
                message = asked_at[-1] if asked_at else None
                note = message.memory_tokens if message is not None else 0
                assert session.memory_in_prompt() <= session.budget
                rows.append({"id": q["id"], "note": note, "gave_way": note > 0 and leaving > 0,
                             "ttft": (first[0] if first else time.perf_counter()) - t0,
                             "contains": contains_answer(reply.text, str(q["answer"])) or 0.0,
                             "f1": answer_f1(reply.text, str(q["answer"]), q["category"]),
                             "reply": reply.text})
            session.end()
    finally:
        chat_session.giving_way = keep
    return {"rows": rows, "budget": session.budget, "compressions": session.compressions,
            "asked_again": session.asked_again}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conv", default="conv-26")
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--model", default="0.5b", choices=["0.5b", "1.5b"])
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--night", action="store_true",
                        help="run the default night on the home before the session")
    parser.add_argument("--show", action="store_true", help="print every reply")
    args = parser.parse_args()
    asked = questions(args.conv, args.questions, args.seed)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="diarist-bench-session-") as tmp:
        root = Path(tmp)
        seed_home = seeded_home(args.conv, root, args.night)
        server = start_server(root / "models", args.model, port, args.ctx)
        try:
            url = f"http://127.0.0.1:{port}/v1"
            results = {way: run(seed_home, root, url, asked, way) for way in (GIVE_WAY, STAY)}
        finally:
            server.terminate()
            server.wait(30)
    print(f"{args.conv}, {len(asked)} questions (seed {args.seed}) in one session, "
          f"Qwen2.5-Coder-{args.model.upper()}, {args.ctx}-token window"
          + (", after the default night" if args.night else ""))
    print("| | questions with a note | F1 (mean) | replies containing the answer "
          "| notes that took one out | first token, median (questions 2–N) "
          "| of those whose note took one out |")
    print("|---|---|---|---|---|---|---|")
    for way, result in results.items():
        rows = result["rows"]
        later = [r["ttft"] for r in rows[1:]]
        gave = [r["ttft"] for r in rows if r["gave_way"]]
        print(f"| {way} | {sum(1 for r in rows if r['note'])} / {len(rows)} | "
              f"{statistics.mean(r['f1'] for r in rows):.3f} | "
              f"{sum(r['contains'] for r in rows):.0f} / {len(rows)} | "
              f"{sum(1 for r in rows if r['gave_way'])} | "
              f"{statistics.median(later):.2f} s | "
              + (f"{statistics.median(gave):.2f} s |" if gave else "— |"))
        if args.show:
            for r in rows:
                print(f"    {r['id']} note {r['note']} gave_way {r['gave_way']} "
                      f"contains {r['contains']:.0f}: {r['reply'][:80]!r}")
        again = result["asked_again"]
        print(f"    (compressions: {result['compressions']}; budget {result['budget']}; "
              f"asked again: {again['echo']} echoes, {again['repeat']} repeats, "
              f"{again['recital']} recitals; {again['alone']} alone)")


if __name__ == "__main__":
    main()
