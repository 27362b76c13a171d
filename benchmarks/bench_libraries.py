"""Libraries against the hand-made copies: ``json-repair`` against the lenient parser
(:mod:`workers.llm.lenient_json`), and ``httpx2`` / the ``openai`` client against the urllib
backend (:mod:`workers.llm.openai`). Prints markdown tables; no model needed (~1 minute):

    pip install json-repair     # not a dependency (httpx2 is one; openai is in the test extra)
    python benchmarks/bench_libraries.py [--runs 7]

JSON: the mining benchmark's real answers (``benchmarks/mining_replies.jsonl``: the raw
replies of Qwen2.5-Coder 0.5B/1.5B to the mining prompt on LoCoMo chunks, schema off as by
default, recorded by ``--record``) and the malformed answers of the tests. Recording again
needs the weights (``/tmp/diarist-bench-models``) and minutes of CPU; it appends, so remove
the file first; run it alone:

    flock /tmp/diarist-bench.lock python benchmarks/bench_libraries.py --record 0.5b --sessions 6
    flock /tmp/diarist-bench.lock python benchmarks/bench_libraries.py --record 1.5b --sessions 3

HTTP: import cost (fresh interpreters), and against a fake OpenAI-compatible SSE server in a
thread on 127.0.0.1: time to first token and total; a read timeout on a stalled stream
(before the headers, and mid-stream); Ctrl-C (SIGINT to this process) during a stall.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import timeit
from collections import Counter
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
REPLIES = Path(__file__).with_name("mining_replies.jsonl")
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

import httpx2  # noqa: E402
import json_repair  # noqa: E402
import openai  # noqa: E402
from openai.types.chat import ChatCompletionUserMessageParam  # noqa: E402

from workers.llm.lenient_json import LenientJSONError, loads_lenient  # noqa: E402
from workers.llm.openai import OpenAIBackend  # noqa: E402
from workers.mining.extract import memory_items  # noqa: E402

# (answer, the value the tests expect; None: nothing to recover): tests/test_mining.py and
# the JSON-like replies of tests/test_extract.py
FIXTURES: list[tuple[str, Any]] = [
    ('{"memories": [{"content": "Ann uses neovim", "turns": [1]}, {"content": "An',
     {"memories": [{"content": "Ann uses neovim", "turns": [1]}]}),
    ("[{'content': 'Ann uses neovim', 'turns': [1]}]",
     [{"content": "Ann uses neovim", "turns": [1]}]),
    ('```json\n["User keeps bees"]\n```', ["User keeps bees"]),
    ('Sure! Here are the facts:\n```\n["User keeps bees"]\n```\nHope it helps.',
     ["User keeps bees"]),
    ('Here you go: ["User keeps bees"] done', ["User keeps bees"]),
    ('{"facts": ["User keeps bees"]}', {"facts": ["User keeps bees"]}),
    ("[]", []), ("", None), ("None.", None), ("Nothing new", None), ("{not json", None),
    ("No new facts.", None), ("I don't think anything here is worth remembering", None)]
IMPORT_HEAD = ("ms, fresh python (minus `python -c pass`) "
               "| ms after `import workers.llm` (-X importtime, cumulative)")


def ours(text: str) -> Any:
    try:
        return loads_lenient(text)
    except LenientJSONError:
        return None


def theirs(text: str) -> Any:
    value = json_repair.loads(text)
    return None if value == "" else value  # json-repair's "nothing found"


def usable(value: Any) -> list[dict] | None:
    """The memories as the extractor takes them (objects with a content, or strings); None
    when there is no list of memories."""
    try:
        items = memory_items(value)
    except LenientJSONError:
        return None
    return [{"content": i} if isinstance(i, str) else i for i in items if isinstance(i, str)
            or isinstance(i, dict) and isinstance(i.get("content"), str)]


def import_ms(stmt: str, runs: int, module: str = "") -> float:
    """Median wall ms of a fresh ``python -c stmt``; with ``module``, the median cumulative
    ms of that module's line of ``-X importtime`` instead."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, *(["-X", "importtime"] if module else []), "-c",
                               stmt], env=env, cwd=REPO, check=True, capture_output=True,
                              text=True)
        times.append((time.perf_counter() - started) * 1000)
        if module:
            times[-1] = max(int(line.split("|")[1]) / 1000 for line in done.stderr.splitlines()
                            if line.split("|")[-1].strip() == module)
    return statistics.median(times)


def import_row(mod: str, runs: int, base: float) -> str:
    return (f"+{import_ms(f'import {mod}', runs) - base:.1f} "
            f"| {import_ms(f'import workers.llm; import {mod}', runs, mod):.1f}")


def json_tables(runs: int) -> None:
    rows = [json.loads(line) for line in REPLIES.open()] if REPLIES.exists() else []
    count = dict.fromkeys(["same", "both", "ours", "json-repair", "neither", "m_ours", "cut_ours",
                           "m_theirs", "cut_theirs"], 0)
    diffs = []
    for row in rows:
        a, b = ours(row["reply"]), theirs(row["reply"])
        ua, ub = usable(a), usable(b)
        key = {(True, True): "both", (True, False): "ours", (False, True): "json-repair",
               (False, False): "neither"}[ua is not None, ub is not None]
        count[key] += 1
        count["same"] += a == b
        count["m_ours"] += len(ua or [])
        count["cut_ours"] += _cut(ua, row["reply"])
        count["m_theirs"] += len(ub or [])
        count["cut_theirs"] += _cut(ub, row["reply"])
        if a != b:
            diffs.append((row, ua, ub))
    models = sorted({r["model"] for r in rows})
    print(f"### JSON: {len(rows)} real mining answers ({', '.join(models)}; {REPLIES.name})\n")
    print("| answers | same object | both usable | only ours | only json-repair | neither "
          "| memories: ours | of them cut off | json-repair | of them cut off |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {len(rows)} | " + " | ".join(str(v) for v in count.values()) + " |\n")
    kinds: dict[str, list[dict]] = {}
    for row, ua, ub in diffs:
        kind = "other"
        if ua == ub:
            kind = "the same memories (other elements differ)"
        elif ua is not None and ub is not None and ub[:len(ua)] == ua and len(ub) > len(ua):
            cut = "cut" if _cut(ub[len(ua):], row["reply"]) else "whole"
            kind = f"json-repair adds the cut-off last element(s), content {cut}"
        kinds.setdefault(kind, []).append(row)
    print("| how the two differ | answers | an example's end |\n|---|---|---|")
    for kind, found in sorted(kinds.items()):
        by = Counter(r["model"].rsplit("-", 1)[-1] for r in found)
        print(f"| {kind} | {len(found)} ({', '.join(f'{m}: {n}' for m, n in sorted(by.items()))})"
              f" | `{_cell(found[0]['reply'][-60:])}` |")
    for row, ua, ub in diffs:
        if row in kinds.get("other", []):
            print(f"\nother: `{_cell(row['reply'][-80:])}`: ours {_kept(ua)}, json-repair "
                  f"{_kept(ub)}")
    print("\nTest fixtures (the value the tests expect):\n")
    print("| answer | expected | ours | json-repair |\n|---|---|---|---|")
    for text, expected in FIXTURES:
        print(f"| `{_cell(text[:50])}` | `{json.dumps(expected)[:40]}` "
              f"| {_verdict(ours(text), expected)} | {_verdict(theirs(text), expected)} |")
    texts = [r["reply"] for r in rows] + [t for t, _ in FIXTURES]
    print(f"\n| parser | median µs per answer | import {IMPORT_HEAD} |\n|---|---|---|---|")
    base = import_ms("pass", runs)
    for name, parse, mod in (("lenient_json.loads_lenient", ours, "workers.llm.lenient_json"),
                             ("json_repair.loads", theirs, "json_repair")):
        us = statistics.median(timeit.timeit(partial(parse, t), number=20) * 5e4 for t in texts)
        print(f"| {name} | {us:.0f} | {import_row(mod, runs, base)} |")
    print(f"\n(imports: median of {runs}; `python -c pass` itself: {base:.1f} ms)\n")


def _cut(items: list[dict] | None, text: str) -> int:  # content not a whole string of text
    return sum(json.dumps(i["content"], ensure_ascii=False) not in text for i in items or [])


def _cell(text: str) -> str:
    return json.dumps(text)[1:-1].replace("|", "\\|").replace("`", "'")


def _kept(items: list[dict] | None) -> str:
    return "unusable" if items is None else f"{len(items)}: " + _cell("; ".join(
        str(i.get("content"))[-25:] for i in items)[-80:])


def _verdict(value: Any, expected: Any) -> str:
    return "✓" if value == expected else f"✗ `{_cell(json.dumps(value)[:40])}`"


# --- HTTP -------------------------------------------------------------------------------

TOKENS, DELAY, STALL, TIMEOUT = 40, 0.005, 4.0, 1.0
STOP = threading.Event()
MSGS = [{"role": "user", "content": "hi"}]
OA_MSGS: list[ChatCompletionUserMessageParam] = [{"role": "user", "content": "hi"}]


class Fake(BaseHTTPRequestHandler):
    """The request's ``model`` says what to do: ``stream``, ``stall-head`` (no headers) or
    ``stall-mid`` (three tokens, then silence)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        mode = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["model"]
        if mode == "stall-head":
            STOP.wait(STALL)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for i in range(TOKENS + 1):
                if mode == "stall-mid" and i == 3:
                    STOP.wait(STALL)
                    return
                delta = {"content": f"w{i} "} if i < TOKENS else {}
                self._send({"id": "c", "object": "chat.completion.chunk", "created": 0,
                            "model": mode, "choices": [{"index": 0, "delta": delta,
                            "finish_reason": None if delta else "stop"}]})
                time.sleep(DELAY)
            self._send("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client hung up

    def _send(self, chunk: object) -> None:
        data = b"data: %s\n\n" % (chunk if isinstance(chunk, str) else json.dumps(chunk)).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


Client = Callable[[str, Callable[[str], None]], str]  # (model, on_token) -> outcome


def clients(url: str) -> dict[str, Client]:
    """The three ways to stream a reply, each client built once (as a backend would hold
    it) with a timeout of ``TIMEOUT``; the openai client without retries."""
    hx = httpx2.Client(timeout=TIMEOUT)
    oa = openai.OpenAI(base_url=url, api_key="x", timeout=TIMEOUT, max_retries=0)

    def urllib_backend(model: str, on_token: Callable[[str], None]) -> str:
        reply = OpenAIBackend(url, model, timeout=TIMEOUT).chat(MSGS, on_token=on_token)
        return "returned partial" if reply.interrupted else "returned"

    def httpx_stream(model: str, on_token: Callable[[str], None]) -> str:
        body = {"model": model, "messages": MSGS, "stream": True}
        with hx.stream("POST", f"{url}/chat/completions", json=body) as resp:
            for line in resp.iter_lines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    for choice in json.loads(line[5:])["choices"]:
                        on_token(choice["delta"].get("content") or "")
        return "returned"

    def openai_client(model: str, on_token: Callable[[str], None]) -> str:
        with oa.chat.completions.create(model=model, messages=OA_MSGS, stream=True) as stream:
            for chunk in stream:
                for choice in chunk.choices:
                    on_token(choice.delta.content or "")
        return "returned"

    return {"urllib backend (ours)": urllib_backend, "httpx2 stream": httpx_stream,
            "openai client": openai_client}


def timed(client: Client, model: str) -> tuple[float, float, float, str]:
    """(first token s, last token s, end s, outcome) of one call."""
    started = time.monotonic()
    marks: list[float] = []

    def on_token(text: str) -> None:
        if text:
            marks.append(time.monotonic() - started)

    try:
        outcome = client(model, on_token)
    except KeyboardInterrupt:
        outcome = "raised KeyboardInterrupt"
    except Exception as exc:  # noqa: BLE001 - which one is what is measured
        outcome = f"raised {type(exc).__name__}"
    end = time.monotonic() - started
    return (marks[0] if marks else end), (marks[-1] if marks else end), end, outcome


def interrupted(client: Client, mode: str, port: int) -> str:
    """Table cells: SIGINT 0.3 s into a call the server stalls: ms until the call is back,
    its outcome, threads it left, and whether its connection is still open."""
    before, sent = {t.name for t in threading.enumerate()}, []

    def fire() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.3, fire)
    timer.start()
    outcome = timed(client, mode)[3]
    back = time.monotonic()
    timer.join()
    time.sleep(0.05)
    left = {t.name for t in threading.enumerate() if "process_request" not in t.name} - before
    open_ = sum(1 for line in Path("/proc/net/tcp").read_text().splitlines()[1:]  # client end
                if line.split()[2].endswith(f":{port:04X}") and line.split()[3] == "01")
    return (f"{(back - sent[0]) * 1000:.1f} | {outcome} | {len(left)} "
            f"| {'yes' if open_ else 'no'}")


def http_tables(runs: int) -> None:
    print(f"### HTTP: start-up cost, median of {runs}\n\n| import | {IMPORT_HEAD} |\n"
          "|---|---|---|")
    base = import_ms("pass", runs)
    for mod in ("urllib.request", "workers.llm", "workers.llm.openai", "httpx2", "openai"):
        print(f"| `{mod}` | {import_row(mod, runs, base)} |")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    server.daemon_threads = True
    server.handle_error = lambda *args: None  # type: ignore[method-assign] # resets: expected
    threading.Thread(target=server.serve_forever, name="fake-server", daemon=True).start()
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/v1"
    print(f"\n### Streaming {TOKENS} tokens ({DELAY * 1000:.0f} ms apart), median of {runs}"
          "\n\n| client | server | first token of a new client's first call, ms "
          "| first token ms | total ms |\n|---|---|---|---|---|")
    for nodelay in (False, True):
        Fake.disable_nagle_algorithm = nodelay
        for name, client in clients(url).items():
            first = timed(client, "stream")
            got = [timed(client, "stream") for _ in range(runs)]
            print(f"| {name} | {'TCP_NODELAY' if nodelay else 'Nagle on'} "
                  f"| {first[0] * 1000:.1f} | {statistics.median(g[0] for g in got) * 1000:.1f} "
                  f"| {statistics.median(g[1] for g in got) * 1000:.1f} |")
    made = clients(url)
    print(f"\n### Read timeout {TIMEOUT:g} s, the server silent for {STALL:g} s\n\n| client "
          "| stall before the headers: s to give up | outcome | stall mid-stream: s after the "
          "last token | outcome |\n|---|---|---|---|---|")
    for name, client in made.items():
        head, mid = timed(client, "stall-head"), timed(client, "stall-mid")
        print(f"| {name} | {head[2]:.2f} | {head[3]} | {mid[2] - mid[1]:.2f} | {mid[3]} |")
    print("\n### Ctrl-C: SIGINT to the process 0.3 s into a stalled call\n\n| client | stall "
          "| ms from SIGINT to control back | outcome | threads left | connection still open "
          "|\n|---|---|---|---|---|---|")
    for name, client in made.items():
        for mode in ("stall-head", "stall-mid"):
            print(f"| {name} | {'mid-stream' if mode == 'stall-mid' else 'before the headers'} "
                  f"| {interrupted(client, mode, port)} |")
    STOP.set()
    server.shutdown()


def record(model: str, convs: str, sessions: int, skip: int) -> None:
    """Mine (a dry run) the chosen LoCoMo sessions with the real model as bench_mining.py
    does, appending each raw reply to mining_replies.jsonl."""
    import tempfile

    import bench_mining as bm

    from events import EventLog, Home
    from events.transcript import import_file
    from workers.mining.extract import MinerSpec, backend_for
    from workers.mining.mine import mine

    work = Path(tempfile.mkdtemp(prefix="diarist-bench-libs-"))
    home = Home(work / "home").ensure()
    turns = []
    for conv in convs.split(","):
        lines = [json.loads(x) for x in (bm.LOCOMO / f"{conv}.transcript.jsonl").open()]
        names = list(dict.fromkeys(t["session"] for t in lines))[skip:skip + sessions]
        turns += [t for t in lines if t["session"] in names]
    path = work / "subset.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    with EventLog(home.events_db) as log:
        import_file(log, path)
    port = bm.free_port()
    server = bm.start_server(Path("/tmp/diarist-bench-models"), model, port, 4096)
    try:
        spec = MinerSpec("openai", base_url=f"http://127.0.0.1:{port}/v1")
        backend = backend_for(spec)
        chat = backend.chat

        def recording(messages: list[dict], **kwargs: Any) -> Any:
            reply = chat(messages, **kwargs)
            with REPLIES.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"model": f"qwen2.5-coder-{model}", "attempt":
                                      len(messages) // 2, "reply": reply.text}) + "\n")
            return reply

        backend.chat = recording  # type: ignore[method-assign]
        report = mine(home, spec, dry_run=True)
        print(f"{report.chunks} chunks, {report.calls} calls recorded to {REPLIES}")
    finally:
        server.terminate()
        server.wait(20)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--record", choices=["0.5b", "1.5b"], default=None,
                        help="record the model's mining answers (needs the weights)")
    parser.add_argument("--convs", default="conv-26,conv-30,conv-41,conv-42,conv-43")
    parser.add_argument("--sessions", type=int, default=2, help="sessions per conversation")
    parser.add_argument("--skip", type=int, default=0, help="after the first SKIP sessions")
    args = parser.parse_args()
    if args.record:
        record(args.record, args.convs, args.sessions, args.skip)
    else:
        json_tables(args.runs)
        http_tables(args.runs)


if __name__ == "__main__":
    main()
