"""Does the chat's model reply, or refuse? Messages other people wrote, in one chat session.

    python benchmarks/bench_chat_refusals.py [--messages 12] [--model 0.5b|1.5b]
        [--base-url URL] [--system-prompt TEXT] [--temperature T] [--no-memory] [--night]
        [--homes DIR] [--show] [--json]

A person who tells a small model about their day should get a reply, not "I'm sorry, but I
can't assist with that". For each of the five LoCoMo dev conversations and the first five
LongMemEval dev questions' histories: the first half of its sessions is imported into a
scratch home and synced (the README's main job, embeddings included); then one
`ChatSession` with the defaults but for the memory tools (off, as for a 0.5B model) on the
`openai` backend is sent ``--messages`` of the user's turns from the later sessions, drawn
at random (seed 12) and sent in their order: LoCoMo's are one friend's messages to another,
LongMemEval's a person's requests to an assistant. Replies are capped at 64 tokens,
temperature 0 unless ``--temperature`` says otherwise (``--temperature server``: the
server's own, what `diarist chat` uses by default). A reply counts as a refusal when it says
it cannot help, assist, provide or discuss (:data:`REFUSAL`), an echo when it begins as
the message does (:func:`workers.chat.echo.echoes`: the first 30 characters), a
restatement when it is no echo but says the message again in other words
(:func:`restates`: "Maria, getting sponsors was difficult. …" to "Definitely, Maria!
Getting sponsors was difficult. …"; the chat does not hold these back), a repeat when
it begins as an earlier reply of its session does, a recital when its first line is written
as the memory in its prompt is (:class:`workers.chat.echo.Recital`: "[most relevant]",
"(9 August 2023) Tim: …"); the figures are how many of each, per source, and how many
replies the chat held back and asked again as echoes, repeats or recitals, and of those how
many were asked a last time with the message alone (the reply counted is the last), and the
median time from a message to its whole reply, by how many times it was asked more.
``--no-memory`` runs the same sessions without memory (no start block, no notes);
``--night`` after the default night over the imported half (MEMORY.md heads the start
block; keep those homes in another ``--homes`` directory).

The model server is started on a free port (``diarist serve-model --model``) unless
``--base-url`` names one. ``--system-prompt`` replaces the chat's instruction (the first
sentences of its system prompt, :mod:`workers.chat.instruction`) for this run, to compare
wordings; ``--homes DIR`` keeps the built homes there for the next run (each
session runs on a copy).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "bench"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_chat_session import open_chat  # noqa: E402
from bench_mining import free_port, start_server  # noqa: E402

from events import Home  # noqa: E402
from workers.chat import session as chat_session  # noqa: E402
from workers.chat.echo import Recital, echoes, opening  # noqa: E402
from workers.eval.dataset import Conversation  # noqa: E402
from workers.eval.homes import build_home, model_folder, night_over  # noqa: E402
from workers.eval.load import load_dataset  # noqa: E402
from workers.llm import make_backend  # noqa: E402

REFUSAL = re.compile(
    r"\b(can't|cannot|can not|unable to|not able to) (assist|help|provide|fulfill|discuss)"
    r"|\bI'm sorry, but I (can't|cannot)", re.IGNORECASE)
SOURCES = {"locomo": SHARED / "locomo",
           "longmemeval": SHARED / "longmemeval" / "longmemeval_s_dev.json"}
PER_SOURCE = 5     # conversations (LoCoMo) or question histories (LongMemEval) of each source
MAX_TOKENS = 64
SEED = 12
# a reply whose word pairs are this much the message's says it again; at 0.85 each one of
# the stored replies read says the message back (docs/experiments.md, "The message again")
RESTATED_SHARE = 0.85
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


class Reply(NamedTuple):
    text: str
    memory: str        # the memory in its prompt
    asked_again: int   # calls more than one for it
    seconds: float     # from the message sent to the whole reply


def halves(conversation: Conversation, messages: int) -> tuple[Conversation, list[str]]:
    """The conversation's first half of sessions (to import), and ``messages`` of the user's
    turns from the later half, drawn at random and kept in their order."""
    sessions = list(dict.fromkeys(t["session"] for t in conversation.turns))
    earlier = set(sessions[:max(1, len(sessions) // 2)])
    imported = tuple(t for t in conversation.turns if t["session"] in earlier)
    later = [t["text"] for t in conversation.turns
             if t["session"] not in earlier and t["role"] == "user" and t["text"].strip()]
    chosen = sorted(random.Random(SEED).sample(range(len(later)), min(messages, len(later))))
    return Conversation(conversation.id, imported, ()), [later[i] for i in chosen]


def chat(built: Path, work: Path, url: str, messages: list[str], temperature: float | None,
         memory: bool) -> tuple[list[Reply], dict[str, int]]:
    """The replies of one chat session on a copy of the ``built`` home, sent ``messages``
    one after another, and how many of its replies were held back and asked again, by what
    they copied, and asked alone (``ChatSession.asked_again``)."""
    shutil.copytree(built, work)
    home = Home(work)
    backend = make_backend("openai", base_url=url, max_tokens=MAX_TOKENS,
                           temperature=temperature)
    replies: list[Reply] = []
    with open_chat(home, backend, memory) as session:
        for text in messages:
            calls = sum(session.asked_again.values())
            began = time.perf_counter()
            reply = session.send(text).text
            replies.append(Reply(reply, session.memory_text(),
                                 sum(session.asked_again.values()) - calls,
                                 time.perf_counter() - began))
        session.end()
    return replies, session.asked_again


def _seconds(rows: list[dict]) -> dict[int, float]:
    """The median time to the whole reply of the messages asked 0, 1 and 2 times more."""
    return {n: round(statistics.median(times), 2) for n in (0, 1, 2)
            if (times := [r["seconds"] for r in rows if r["asked_again"] == n])}


def run(root: Path, homes: Path, url: str, messages: int, show: bool,
        temperature: float | None = 0.0, memory: bool = True,
        night: bool = False) -> dict[str, dict]:
    results: dict[str, dict] = {}
    models: Path | None = None
    for source, path in SOURCES.items():
        rows: list[dict] = []
        again: Counter[str] = Counter()
        for conversation in load_dataset(path).conversations[:PER_SOURCE]:
            imported, sent = halves(conversation, messages)
            built = build_home(homes / source, imported, embed=True, models=models)
            models = models or model_folder(built.home)
            if night:
                night_over(built.home)
            work = root / source / built.home.root.name
            replies, asked = chat(built.home.root, work, url, sent, temperature, memory)
            again.update(asked)
            for i, (text, got) in enumerate(zip(sent, replies, strict=True)):
                reply = got.text
                refused = bool(REFUSAL.search(reply))
                echoed = echoes(reply, text)
                restated = not echoed and restates(reply, text)
                repeated = opening(reply) in {opening(r.text) for r in replies[:i]}
                recited = Recital(got.memory).reply(reply)
                rows.append({"conversation": conversation.id, "message": text,
                             "reply": reply, "refused": refused, "echoed": echoed,
                             "restated": restated,
                             "repeated": repeated, "recited": recited,
                             "asked_again": got.asked_again, "seconds": got.seconds})
                if show:
                    mark = ("REFUSED" if refused else "echoed" if echoed
                            else "repeated" if repeated else "recited" if recited
                            else "replied")
                    print(f"  {source} {conversation.id} {mark}: {text[:70]!r} → "
                          f"{reply[:90]!r}", flush=True)
        results[source] = {"messages": len(rows), "refused": sum(r["refused"] for r in rows),
                           "echoed": sum(r["echoed"] for r in rows),
                           "restated": sum(r["restated"] for r in rows),
                           "repeated": sum(r["repeated"] for r in rows),
                           "recited": sum(r["recited"] for r in rows),
                           "asked_again": dict(again), "seconds": _seconds(rows),
                           "rows": rows}
    return results


def restates(reply: str, message: str) -> bool:
    """Whether ``reply`` says ``message`` again in other words: at least
    :data:`RESTATED_SHARE` of its pairs of neighbouring words (two or more) are the
    message's."""
    pairs, said = _pairs(reply), set(_pairs(message))
    return len(pairs) >= 2 and sum(p in said for p in pairs) >= RESTATED_SHARE * len(pairs)


def _pairs(text: str) -> list[tuple[str, str]]:
    words = WORD.findall(text.lower().replace("\u2019", "'"))
    return list(zip(words, words[1:], strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=12,
                        help="messages sent per conversation (default 12)")
    parser.add_argument("--model", default="0.5b", choices=["0.5b", "1.5b"])
    parser.add_argument("--base-url", help="a running OpenAI-compatible server to use")
    parser.add_argument("--system-prompt", help="replace the chat's instruction for this run")
    parser.add_argument("--temperature", default="0",
                        help="sampling temperature, or 'server' for the server's (default 0)")
    parser.add_argument("--no-memory", action="store_true",
                        help="the same sessions without memory (no start block, no notes)")
    parser.add_argument("--night", action="store_true",
                        help="after the default night over the imported half")
    parser.add_argument("--homes", type=Path, help="keep the built homes here, for a next run")
    parser.add_argument("--show", action="store_true", help="print every message and reply")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    temperature = None if args.temperature == "server" else float(args.temperature)
    if args.system_prompt:
        chat_session.instruction = lambda _model: args.system_prompt
    with tempfile.TemporaryDirectory(prefix="diarist-bench-refusals-") as tmp:
        root = Path(tmp)
        server = None
        url = args.base_url
        if url is None:
            port = free_port()
            server = start_server(root / "models", args.model, port, 2048)
            url = f"http://127.0.0.1:{port}/v1"
        try:
            results = run(root, args.homes or root / "homes", url, args.messages, args.show,
                          temperature, not args.no_memory, args.night)
        finally:
            if server is not None:
                server.terminate()
                server.wait(30)
    if args.json:
        print(json.dumps(results, indent=1, ensure_ascii=False))
        return
    if args.system_prompt:
        print(f"instruction: {args.system_prompt!r}")
    print(f"Qwen2.5-Coder-{args.model.upper()}" if not args.base_url else args.base_url,
          f"— {args.messages} messages per conversation, one session each, 2,048-token "
          f"window, tools off, temperature {args.temperature}",
          "— without memory" if args.no_memory else "",
          "— after the night" if args.night else "")
    print("| source | messages | refused | echoed | restated | repeated | recited "
          "| asked again: echoes, repeats, recitals; alone | seconds to the reply, median, "
          "asked 0 / 1 / 2 times more |")
    print("|---|---|---|---|---|---|---|---|---|")
    for source, result in results.items():
        again = result["asked_again"]
        print(f"| {source} | {result['messages']} | {result['refused']} | "
              f"{result['echoed']} | {result['restated']} | {result['repeated']} | "
              f"{result['recited']} | "
              f"{again.get('echo', 0)}, {again.get('repeat', 0)}, "
              f"{again.get('recital', 0)}; {again.get('alone', 0)} | "
              + " / ".join(str(result["seconds"].get(n, "–")) for n in (0, 1, 2)) + " |")


if __name__ == "__main__":
    main()
