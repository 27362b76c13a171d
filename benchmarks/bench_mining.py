"""Mining the LoCoMo dev conversations with a real model, and what it does for recall.

    python benchmarks/bench_mining.py --model 0.5b [--convs conv-26,conv-30]
        [--sessions N] [--ctx-size 4096] [--parallel 1] [--schema] [--keep DIR] [--json]
    python benchmarks/bench_mining.py --heuristic        # no model: the heuristic extractor

Run it alone (``flock /tmp/diarist-bench.lock …``): it measures time on a shared CPU.

1. Starts ``diarist serve-model --model M [--parallel N]`` (llama.cpp, all cores; N slots of
   ``--ctx-size`` tokens each, and ``mining.parallel: N``) on a free port; the joined
   weights are kept under ``--models`` (default ``/tmp/diarist-bench-models``) between runs.
2. A fresh home: ``import`` of the chosen conversations (the first ``--sessions`` sessions of
   each, when given), ``sync`` (embeddings), then evidence recall within 512 tokens for the
   non-adversarial questions whose evidence lies in those sessions — *without* mined memories.
3. ``mine`` in-process with the ``openai`` backend (the same path as ``diarist mine``), timed
   from the first chunk to the last: minutes per 1,000 turns, turns per hour, model calls and
   memories per session, failures, and where the time goes — prompt reading (the usage's
   prompt tokens are the whole prompt; llama.cpp re-reads only what its cache lacks) and
   writing (reply tokens at the server's reported tokens/s).
4. Quality: the share of mined memories whose refs contain some question's evidence; then
   ``sync`` again and evidence recall within 512 tokens *with* the mined memories.

``--keep DIR`` copies the mined home to ``DIR`` (its event log holds every mining decision),
so recall can be measured again later without a model: ``--recall-only DIR``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog, Home  # noqa: E402
from events.transcript import import_file  # noqa: E402
from projections import open_store  # noqa: E402
from workers.memory.recall import recall_each  # noqa: E402
from workers.mining.extract import MinerSpec  # noqa: E402
from workers.mining.mine import mine  # noqa: E402
from workers.sync.catch_up import sync  # noqa: E402
from workers.sync.replay import replay  # noqa: E402

CONVS = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(models: Path, model: str, port: int, ctx: int,
                 parallel: int = 1) -> subprocess.Popen:
    env = dict(os.environ, DIARIST_HOME=str(models), PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", "from cli.main import main; main()",
                             "serve-model", "--model", model, "--port", str(port),
                             "--ctx-size", str(ctx), "--parallel", str(parallel)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if json.loads(r.read()).get("status") == "ok":
                    return proc
        except (OSError, ValueError):
            pass
        if proc.poll() is not None:
            raise SystemExit(f"serve-model --model {model} exited with {proc.returncode}")
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("the model server did not come up")


def load(convs: list[str], sessions: int | None, work: Path) -> tuple[Path, list[dict]]:
    """A transcript of the chosen sessions, and the questions answerable from them."""
    lines, chosen_refs = [], set()
    for conv in convs:
        turns = [json.loads(x) for x in (LOCOMO / f"{conv}.transcript.jsonl").open()]
        names = list(dict.fromkeys(t["session"] for t in turns))[:sessions]
        keep = [t for t in turns if t["session"] in names]
        lines += keep
        chosen_refs |= {t["ref"] for t in keep}
    path = work / "subset.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in lines), encoding="utf-8")
    questions = []
    for conv in convs:
        for q in map(json.loads, (LOCOMO / f"{conv}.questions.jsonl").open()):
            if q["category"] != "adversarial" and q["evidence"] \
                    and set(q["evidence"]) <= chosen_refs:
                questions.append(q)
    return path, questions


def evidence_recall(home: Home, questions: list[dict]) -> float:
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        asked = [(q["id"], q["query"], None) for q in questions]
        by_id = {q["id"]: q for q in questions}
        scores = []
        for qid, result in recall_each(home, store, asked, 512, 10):
            refs = {r for item in result.items for r in item.refs}
            evidence = by_id[qid]["evidence"]
            scores.append(sum(e in refs for e in evidence) / len(evidence))
    return sum(scores) / len(scores) if scores else 0.0


def recall_again(kept: Path, convs: str, sessions: int | None, as_json: bool) -> None:
    """Evidence recall @512 over a kept home, its projections rebuilt from the log first
    (``replay``), so the figure is today's recall over the memories mined then."""
    work = Path(tempfile.mkdtemp(prefix="diarist-bench-mining-"))
    try:
        _path, questions = load(convs.split(","), sessions, work)
        home = Home(work / "home")
        shutil.copytree(kept, home.root)
        home.ensure()
        replay(home)
        sync(home)
        with EventLog(home.events_db) as log:
            memories = sum(len(e.payload["memories"]) for e in log.read(types=["MemoriesMined"]))
        out = {"home": str(kept), "memories": memories, "questions": len(questions),
               "recall512_with": round(evidence_recall(home, questions), 3)}
        print(json.dumps(out) if as_json else
              "\n".join(f"{key:>24}: {value}" for key, value in out.items()))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:  # noqa: C901 - a linear script
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["0.5b", "1.5b"], default="0.5b")
    parser.add_argument("--heuristic", action="store_true", help="no model at all")
    parser.add_argument("--convs", default=",".join(CONVS))
    parser.add_argument("--sessions", type=int, default=None,
                        help="the first N sessions of each conversation (a documented subset)")
    parser.add_argument("--ctx-size", type=int, default=4096)
    parser.add_argument("--models", type=Path, default=Path("/tmp/diarist-bench-models"))
    parser.add_argument("--schema", action="store_true",
                        help="send the JSON schema (mining.json_schema: true; default off)")
    parser.add_argument("--parallel", type=int, default=1,
                        help="server slots and chunks extracted at once (mining.parallel)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="copy the mined home here when done")
    parser.add_argument("--recall-only", type=Path, default=None, metavar="HOME",
                        help="measure recall @512 again over a home kept by --keep "
                             "(replayed with the current code; no model)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.recall_only:
        recall_again(args.recall_only, args.convs, args.sessions, args.json)
        return
    work = Path(tempfile.mkdtemp(prefix="diarist-bench-mining-"))
    server = None
    try:
        home = Home(work / "home").ensure()
        home.config_file.write_text(f"mining:\n  parallel: {args.parallel}\n", encoding="utf-8")
        path, questions = load(args.convs.split(","), args.sessions, work)
        with EventLog(home.events_db) as log:
            imported = import_file(log, path)
        sync(home)
        without = evidence_recall(home, questions)
        if args.heuristic:
            spec, name = MinerSpec(), "heuristic"
        else:
            port = free_port()
            server = start_server(args.models, args.model, port, args.ctx_size, args.parallel)
            spec = MinerSpec("openai", base_url=f"http://127.0.0.1:{port}/v1",
                             constrained=args.schema)
            name = f"qwen2.5-coder-{args.model}"
        chunk_times: list[float] = []
        write_s: list[float] = []

        def on_chunk(chunk: Any, extraction: Any) -> None:
            chunk_times.append(extraction.elapsed_ms / 1000)
            write_s.append(extraction.write_ms / 1000)

        started = time.monotonic()
        report = mine(home, spec, on_chunk=on_chunk)
        seconds = time.monotonic() - started
        evidence = {e for q in questions for e in q["evidence"]}
        with EventLog(home.events_db) as log:
            mined = [m for e in log.read(types=["MemoriesMined"]) for m in e.payload["memories"]]
            fallbacks = sum(1 for e in log.read(types=["MemoriesMined"]) if e.payload["fallback"])
            failed = [e.payload["error"][:120] for e in log.read(types=["MiningFailed"])]
        useful = sum(1 for m in mined if set(m.get("refs", [])) & evidence)
        sync(home)
        with_mined = evidence_recall(home, questions)
        sessions = report.sessions or 1
        out = {
            "extractor": name, "schema": args.schema, "conversations": args.convs,
            "sessions_per_conv": args.sessions,
            "ctx_size": args.ctx_size, "parallel": args.parallel, "turns": imported.turns,
            "sessions": report.sessions,
            "chunks": report.chunks, "calls": report.calls, "seconds": round(seconds, 1),
            "minutes_per_1000_turns": round(seconds / 60 / max(report.turns, 1) * 1000, 2),
            "turns_per_hour": round(report.turns / seconds * 3600) if seconds else None,
            "calls_per_session": round(report.calls / sessions, 2),
            "memories": len(mined), "memories_per_session": round(len(mined) / sessions, 2),
            "reinforced": report.reinforced, "failures": report.failures,
            "heuristic_fallbacks": fallbacks, "failure_errors": failed,
            "prompt_tokens": report.prompt_tokens, "reply_tokens": report.reply_tokens,
            "reply_tokens_per_call": round(report.reply_tokens / max(report.calls, 1), 1),
            "seconds_per_call": round(sum(chunk_times) / max(report.calls, 1), 2),
            "model_seconds": round(sum(chunk_times), 1),
            "writing_seconds": round(sum(write_s), 1),
            "reading_and_overhead_seconds": round(sum(chunk_times) - sum(write_s), 1),
            "outside_the_model_seconds": round(seconds - sum(chunk_times), 1),
            "share_with_evidence": round(useful / len(mined), 3) if mined else None,
            "questions": len(questions),
            "recall512_without": round(without, 3), "recall512_with": round(with_mined, 3),
        }
        if args.keep:
            shutil.copytree(home.root, args.keep)
        if args.json:
            print(json.dumps(out))
        else:
            for key, value in out.items():
                print(f"{key:>24}: {value}")
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
