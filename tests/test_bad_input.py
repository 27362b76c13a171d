"""The bad input corpus: one table of the ways a user, a file or a broken model server can
hand diarist bad input, each refused with a clear error and proof that nothing changed.

Every case runs the real `diarist` in its own process on its own copy of a home that holds
a week of chats (imported, synced, a note remembered). A refusal must exit non-zero, say
what is wrong and how to fix it (the case's words, an ``Error:`` line and a ``Hint:`` or
usage line), print no traceback and no "unexpected" error, stay short (a file of 100,000 bad
lines prints at most a screenful), and leave every file of the home byte for byte as it was
(lock files, which hold only a pid, aside). A few inputs are not errors at all — FTS5 syntax
in a query is searched as words — and must succeed, changing nothing. The model-server
cases talk to small HTTP servers in this process through the real backend code (urllib,
the wire parsers, the streaming loop); a reply cut off mid-stream keeps what arrived.

The cases run side by side (a thread pool of processes) once per module; each case is its
own test. The table is docs/reliability.md's "Clean refusal of bad input".
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from events import EventLog, Home

from .conftest import REPO, diarist_cmd, free_port, subprocess_env
from .llm_server import Handler, serve

SAMPLE = REPO / "examples" / "sample-week.transcript.jsonl"
GOOD = {"session": "s1", "at": "2024-01-01T10:00:00Z", "role": "user", "name": "Ann",
        "text": "hello", "ref": "bad-input:1"}
FIRST_REF = "sample:2026-03-02:1"  # a turn of the sample week, already in every case's home
MAX_LINES = 30  # a refusal is a screenful at most


def line(**fields: object) -> bytes:
    return json.dumps({**GOOD, **fields}).encode() + b"\n"


def at(moment: str) -> dict[str, bytes]:
    return {"t.jsonl": line(at=moment)}


# --- what a case must leave behind -----------------------------------------------------------


@dataclass
class Run:
    """One case's run: its process's result and the home before and after."""

    code: int
    out: str
    err: str
    home: Home
    tmp: Path
    before: dict[str, str]
    after: dict[str, str]
    rows_before: int
    rows_after: int


def files(home: Home) -> dict[str, str]:
    """Every file under the home (lock files aside) with the sha256 of its bytes."""
    return {str(p.relative_to(home.root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.root.rglob("*"))
            if p.is_file() and p.suffix != ".lock"}


def rows(home: Home) -> int:
    db = sqlite3.connect(home.events_db)
    try:
        return db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    finally:
        db.close()


def nothing_changed(run: Run) -> None:
    assert run.after == run.before, "the home changed"


def log_unchanged(run: Run) -> None:
    assert run.rows_after == run.rows_before, "the log changed"


def nothing_created(name: str) -> Callable[[Run], None]:
    def check(run: Run) -> None:
        nothing_changed(run)
        assert not (run.tmp / name).exists(), f"{name} was created"
    return check


def partial_reply_kept(text: str) -> Callable[[Run], None]:
    """A chat whose reply broke mid-stream: the user's turn and what arrived of the reply
    are in the log, the reply marked interrupted."""
    def check(run: Run) -> None:
        with EventLog(run.home.events_db) as log:
            replies = [e.payload for e in log.read(run.rows_before, types=["AssistantTurn"])]
            users = [e.payload for e in log.read(run.rows_before, types=["UserTurn"])]
        assert [u["text"] for u in users] == ["hello"]
        assert [(r["text"], r["interrupted"]) for r in replies] == [(text, True)]
    return check


def no_reply_recorded(run: Run) -> None:
    """A chat whose model call failed before any reply: the user's turn is in the log (it
    was said), no reply is."""
    with EventLog(run.home.events_db) as log:
        new = [e.type for e in log.read(run.rows_before)]
    assert "UserTurn" in new and "AssistantTurn" not in new, new


# --- fake model servers ------------------------------------------------------------------------

def sse(obj: object) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def piece(text: str) -> bytes:
    return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


def models(h: Handler, _body: dict) -> None:
    h.send_json(200, {"data": [{"id": "m"}]})


def props(h: Handler, _body: dict) -> None:
    h.send_json(200, {"default_generation_settings": {"n_ctx": 2048}})


def chunks_then_abort(h: Handler, chunks: list[bytes]) -> None:
    """Send some stream chunks, then drop the connection without ending the stream."""
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for c in chunks:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
        h.wfile.flush()
    h.close_connection = True  # no terminating chunk: the reply stops mid-stream


def html(h: Handler, _body: dict) -> None:
    page = b"<html><body>It works!</body></html>"
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", str(len(page)))
    h.end_headers()
    h.wfile.write(page)


def stall(h: Handler, _body: dict) -> None:
    time.sleep(4)  # longer than the case's llm.timeout of 1 s
    props(h, _body)


def error_500(h: Handler, _body: dict) -> None:
    h.send_json(500, {"error": {"message": "slot crashed: " + "x" * 5000}})


SERVERS: dict[str, dict[tuple[str, str], Callable[[Handler, dict], None]]] = {
    "list-chunk": {("GET", "/v1/models"): models, ("GET", "/props"): props,
                   ("POST", "/v1/chat/completions"): lambda h, b: h.send_stream(
                       "text/event-stream", [piece("Hel"), piece("lo"), b"data: [1, 2]\n\n",
                                             piece(" there"), b"data: [DONE]\n\n"])},
    "stops": {("GET", "/v1/models"): models, ("GET", "/props"): props,
              ("POST", "/v1/chat/completions"): lambda h, b: chunks_then_abort(
                  h, [piece("Hel"), piece("lo")])},
    "garbage": {("GET", "/v1/models"): html, ("GET", "/props"): html,
                ("POST", "/v1/chat/completions"): html},
    "stalls": {("GET", "/v1/models"): models, ("GET", "/props"): stall},
    "http-500": {("GET", "/v1/models"): models, ("GET", "/props"): props,
                 ("POST", "/v1/chat/completions"): error_500},
}
CHAT = ("chat", "--backend", "openai", "--base-url", "{llm}", "--no-tools")


# --- setups ------------------------------------------------------------------------------------

def insert_row(type_name: str, schema_version: int) -> Callable[[Home], None]:
    """A row written by some other program (a newer diarist), straight into the log."""
    def setup(home: Home) -> None:
        db = sqlite3.connect(home.events_db)
        with db:
            db.execute(
                "INSERT INTO events (id, stream, stream_version, type, schema_version,"
                " occurred_at, recorded_at, payload, meta) VALUES (?, 'memory', 999, ?, ?,"
                " '2026-03-20T00:00:00.000000Z', '2026-03-20T00:00:00.000000Z',"
                " '{\"text\": \"from the future\"}', '{}')",
                ("01JZZZZZZZZZZZZZZZZZZZZZZZ", type_name, schema_version))
        db.close()
    return setup


# --- the corpus --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]         # {tmp}: the case's folder, {llm}: its fake server, {closed}
    says: tuple[str, ...]         # what the output must say: what is wrong, how to fix it
    code: int = 1                 # 1: diarist's own error; 2: a usage error; 0: accepted
    files: dict[str, bytes] = field(default_factory=dict)  # written into {tmp} first
    config: bytes | None = None   # var/diarist.yaml
    stdin: bytes = b""
    server: str | None = None     # a fake model server from SERVERS
    setup: Callable[[Home], None] | None = None
    check: Callable[[Run], None] = nothing_changed
    xfail: str | None = None


IMPORT = ("import", "{tmp}/t.jsonl")
BAD_LINES = 100_000
CASES = [
    # --- transcripts -------------------------------------------------------------------------
    Case("malformed-json", IMPORT, ("t.jsonl:2: not valid JSON", "Fix the lines"),
         files={"t.jsonl": line() + b"{not json\n"}),
    Case("truncated-jsonl", IMPORT, ("t.jsonl:2: not valid JSON", "nothing was imported"),
         files={"t.jsonl": line() + line(ref="r2")[:40]}),
    Case("wrong-field-type", IMPORT, ("field 'text' must be a string, got int",),
         files={"t.jsonl": line(text=5)}),
    Case("not-an-object", IMPORT, ("t.jsonl:1: expected a JSON object",),
         files={"t.jsonl": b'["a", "list"]\n'}),
    Case("missing-field", IMPORT, ("missing field 'text'",),
         files={"t.jsonl": json.dumps({"session": "s", "at": "2024-01-01T00:00:00Z",
                                       "role": "user", "ref": "x"}).encode() + b"\n"}),
    Case("10-MB-line", IMPORT, ("t.jsonl:1: line too long (10,000,", "bytes; at most 1,048,576"),
         files={"t.jsonl": line(text="x" * 10_000_000)}),
    Case("invalid-utf8", IMPORT, ("t.jsonl:2: not UTF-8 text (invalid start byte",),
         files={"t.jsonl": line() + line(ref="r2").replace(b"hello", b"hel\xfflo")}),
    Case("raw-NUL-byte", IMPORT, ("t.jsonl:1: not valid JSON (Invalid control character",),
         files={"t.jsonl": line().replace(b"hello", b"hel\x00lo")}),
    Case("escaped-NUL-in-text", IMPORT, ("'text' holds the control character U+0000",),
         files={"t.jsonl": line(text="hel\u0000lo")}),
    Case("ESC-in-session-id", IMPORT, ("'session' holds the control character U+001B",),
         files={"t.jsonl": line(session="s\u001b]0;owned\u0007")}),
    Case("time-without-offset", ("import", "{tmp}/t.jsonl"),
         ("'at' '2024-01-01T10:00:00' has no UTC offset", "add 'Z'"),
         files=at("2024-01-01T10:00:00")),
    Case("time-out-of-range", IMPORT, ("'2024-13-01T10:00:00Z' is not an ISO-8601 time",),
         files=at("2024-13-01T10:00:00Z")),
    Case("time-garbage", IMPORT, ("'at' 'last tuesday' is not an ISO-8601 time",),
         files=at("last tuesday")),
    Case("year-0001-with-offset", IMPORT, ("out of range once converted to UTC",),
         files=at("0001-01-01T00:30:00+01:00")),
    Case("year-9999-with-offset", IMPORT, ("out of range once converted to UTC",),
         files=at("9999-12-31T23:30:00-01:00")),
    Case("duplicate-ref-in-file", IMPORT, ("t.jsonl:2: duplicate ref 'bad-input:1' (first on "
                                           "line 1)",),
         files={"t.jsonl": line() + line(text="again")}),
    Case("ref-reused-with-other-text", IMPORT,
         (f"ref '{FIRST_REF}' is already in the log", "for a different turn",
          "text differs", "give a changed turn a new ref"),
         files={"t.jsonl": line(session="brand-new") + json.dumps(
             {"session": "sample-2026-03-02", "at": "2026-03-02T19:12:05+00:00",
              "role": "user", "name": "Maya", "text": "Hi! I'm Maya, edited.",
              "ref": FIRST_REF}).encode() + b"\n"}),
    Case("empty-file", IMPORT, ("no turns found", "one JSON turn a line"),
         files={"t.jsonl": b""}),
    Case("only-blank-lines", IMPORT, ("no turns found",), files={"t.jsonl": b"\n  \n\n"}),
    Case("a-directory", ("import", "{tmp}"), ("is a directory",), code=2),
    Case("missing-path", ("import", "{tmp}/nope.jsonl"), ("nope.jsonl: no such file",
                                                          "Check the path")),
    Case("bad-stdin", ("import", "-"), ("<stdin>:1: not valid JSON",), stdin=b"{oops\n"),
    Case("lone-surrogate", IMPORT, ("lone surrogate U+D800", "not valid Unicode"),
         files={"t.jsonl": line().replace(b'"hello"', b'"\\ud800"')}),
    Case("deeply-nested-json", IMPORT, ("JSON nested too deeply",),
         files={"t.jsonl": b"[" * 100_000 + b"]" * 100_000 + b"\n"}),
    Case("5000-digit-number", IMPORT, ("a number with too many digits",),
         files={"t.jsonl": line()[:-2] + b', "n": ' + b"7" * 5000 + b"}\n"}),
    Case("unknown-field", IMPORT, ("unknown field 'mood'",), files={"t.jsonl": line(mood="ok")}),
    Case(f"{BAD_LINES:,}-bad-lines", IMPORT,
         ("t.jsonl:1: not valid JSON", "t.jsonl:20:", f"… and {BAD_LINES - 20:,} more"),
         files={"t.jsonl": b"{bad\n" * BAD_LINES}),
    # --- recall --------------------------------------------------------------------------------
    Case("empty-query", ("recall", ""), ("the query is empty", "Give the words")),
    Case("blank-query", ("recall", "   "), ("the query is empty",)),
    Case("queries-lone-surrogate", ("recall", "--queries", "{tmp}/q.jsonl", "--json"),
         ("q.jsonl:2: a string holds a lone surrogate U+D800", "nothing was recalled"),
         files={"q.jsonl": b'{"id": 1, "query": "harbour"}\n{"id": 2, "query": "\\ud800"}\n'}),
    Case("queries-empty-query", ("recall", "--queries", "{tmp}/q.jsonl", "--json"),
         ("q.jsonl:1: the query is empty",), files={"q.jsonl": b'{"id": 1, "query": ""}\n'}),
    Case("queries-missing-file", ("recall", "--queries", "{tmp}/q.jsonl", "--json"),
         ("q.jsonl: no such file", '{"id": ..., "query": "text"}')),
    Case("recall-at-not-a-time", ("recall", "harbour", "--at", "last tuesday"),
         ("not a time: 'last tuesday'", "2023-05-08T14:00:00Z")),
    Case("queries-at-not-a-time", ("recall", "--queries", "{tmp}/q.jsonl", "--json"),
         ("q.jsonl:1: not a time: '2024-13-01'", "nothing was recalled"),
         files={"q.jsonl": b'{"id": 1, "query": "harbour", "at": "2024-13-01"}\n'}),
    Case("queries-without-json", ("recall", "--queries", "{tmp}/q.jsonl"),
         ("add --json",), code=2),
    *[Case(f"fts-query-{name}", ("recall", query, "--k", "3"), (), code=0)
      for name, query in [("quote", '"'), ("star", "*"), ("NEAR", "NEAR("),
                          ("sql-injection", "'; DROP TABLE events; --"),
                          ("AND-OR-NOT", "AND OR NOT"), ("column-filter", "text:harbour"),
                          ("caret", "^harbour"), ("parens", "((harbour")]],
    Case("100-KB-query", ("recall", "harbour " + "tide " * 20_000, "--k", "3"),
         ("(",), code=0),
    Case("undecodable-byte-in-query", ("recall", "harb\udcffour"), ("Nothing recalled",),
         code=0),
    # --- remember, journal, events, export ---------------------------------------------------
    Case("remember-empty", ("remember", "  "), ("nothing to remember", "in quotes")),
    Case("remember-undecodable-byte", ("remember", "I like t\udcffea"),
         ("TEXT holds a lone surrogate U+DCFF", "nothing was remembered")),
    Case("remember-unknown-type", ("remember", "x", "--type", "gossip"), ("'gossip' is not one",),
         code=2),
    Case("journal-path-trick", ("journal", "../../etc/passwd"), ("not a date", "YYYY-MM-DD")),
    Case("journal-impossible-date", ("journal", "2024-02-30"), ("not a date",)),
    Case("events-n-0", ("events", "-n", "0"), ("0 is not in the range x>=1",), code=2),
    Case("events-n-negative", ("events", "-n", "-5"), ("-5 is not in the range x>=1",), code=2),
    Case("events-tail-interval-0", ("events", "tail", "-f", "--interval", "0"),
         ("0 is not in the range x>=0.01",), code=2),
    Case("events-show-unknown", ("events", "show", "no-such-ref"),
         ("no event 'no-such-ref'", "diarist events")),
    Case("export-into-missing-folder", ("export", "-o", "{tmp}/no/such/dir/out.jsonl"),
         ("no such folder", "Create the folder first")),
    Case("sync-batch-size-0", ("sync", "--batch-size", "0"), ("0 is not in the range x>=1",),
         code=2),
    Case("replay-batch-size-0", ("replay", "--batch-size", "0"),
         ("0 is not in the range x>=1",), code=2),
    Case("worker-0-threads", ("worker", "--workers", "0"),
         ("--workers must be at least 1", "--workers 2")),
    Case("memory-forget-unknown", ("memory", "forget", "no-such-id"), ("no-such-id",)),
    # --- a mistyped home: reading commands create nothing --------------------------------------
    *[Case(f"mistyped-home-{args[0]}", ("--home", "{tmp}/hoem", *args),
           ("no diarist home at", "hoem", "(the folder does not exist)", "a typo"),
           check=nothing_created("hoem"))
      for args in [("recall", "harbour"), ("status",), ("events",), ("export",),
                   ("journal",), ("sync",), ("replay", "--verify"), ("memory", "list"),
                   ("mine",), ("dream",)]],
    # --- the config file -----------------------------------------------------------------------
    Case("config-syntax-error", ("recall", "harbour"),
         ("diarist.yaml: not valid YAML", "at line 2, column 1", "Edit the config file"),
         config=b"memory: [\n"),
    Case("config-wrong-type", ("recall", "harbour"),
         ("`memory.top_k` must be an integer from 1 to 1000, got '10'",),
         config=b'memory:\n  top_k: "10"\n'),
    Case("config-budget-nan", ("recall", "harbour"),
         ("`memory.budget_pct` must be a number in (0.0, 1.0], got nan",),
         config=b"memory:\n  budget_pct: .nan\n"),
    Case("config-infinite-hours", ("recall", "harbour"),
         ("`maintenance.every_hours` must be a number",),
         config=b"maintenance:\n  every_hours: .inf\n"),
    Case("config-unknown-key", ("recall", "harbour"), ("unknown key `memory.budget`",),
         config=b"memory:\n  budget: 0.3\n"),
    Case("config-not-a-mapping", ("recall", "harbour"), ("the top level must be a mapping",),
         config=b"- a\n- b\n"),
    Case("config-utf16", ("recall", "harbour"), ("is UTF-16 text; diarist reads UTF-8",
                                                  "iconv"),
         config="memory:\n  top_k: 5\n".encode("utf-16")),
    Case("config-not-utf8", ("recall", "harbour"), ("diarist.yaml: not UTF-8 text",),
         config=b"memory:\n  top_k: 5 # caf\xe9\n"),
    Case("config-timeout-zero", ("recall", "harbour"), ("`llm.timeout` must be null or a number",),
         config=b"llm:\n  timeout: 0\n"),
    Case("config-base-url-without-dot-is-fine", ("recall", "harbour"), ("harbour",), code=0,
         config=b"llm:\n  base_url: http://a\n"),
    # --- the log holds a row this diarist cannot read (written by a newer one) ---------------
    Case("future-schema-version", ("sync",), ("Remembered v99 is newer than this diarist",
                                              "upgrade diarist"),
         setup=insert_row("Remembered", 99), check=log_unchanged),
    Case("unknown-event-type", ("sync",), ("FromTheFuture",),
         setup=insert_row("FromTheFuture", 1), check=log_unchanged),
    # --- model servers -------------------------------------------------------------------------
    Case("chat-server-down-openai", ("chat", "--backend", "openai", "--base-url", "{closed}"),
         ("cannot reach the openai server", "Connection refused",
          "Start the OpenAI-compatible server")),
    Case("chat-server-down-ollama", ("chat", "--backend", "ollama", "--base-url", "{closed}"),
         ("cannot reach the ollama server", "ollama serve")),
    Case("chat-server-unresolvable", ("chat", "--backend", "openai", "--base-url",
                                      "http://no-such-host.invalid:8080"),
         ("cannot reach the openai server at http://no-such-host.invalid:8080/v1",)),
    Case("chat-base-url-bad-port", ("chat", "--backend", "openai", "--base-url",
                                    "http://127.0.0.1:eighty"),
         ("is not a usable URL", "http://HOST:PORT")),
    Case("mine-server-down", ("mine", "--backend", "openai", "--base-url", "{closed}",
                              "--model", "m"), ("cannot reach the openai server",)),
    Case("eval-answer-server-down", ("eval", "changed-facts", "--limit", "1", "--answer",
                                     "--backend", "openai", "--base-url", "{closed}"),
         ("cannot reach the openai server",)),
    Case("backend-returns-garbage", CHAT, ("/v1/models did not answer with JSON",
                                           "points at the model server"),
         server="garbage", stdin=b"hello\n/exit\n"),
    Case("props-stalls", CHAT, ("no answer from", "/props within 1 s", "llm.timeout"),
         server="stalls", stdin=b"hello\n/exit\n", config=b"llm:\n  timeout: 1\n"),
    Case("http-500-with-5-KB-body", CHAT,
         ("HTTP 500", "slot crashed", "more characters)"), code=0, server="http-500",
         stdin=b"hello\n/exit\n", check=no_reply_recorded),
    Case("stream-chunk-is-a-list", CHAT,
         ("assistant> Hello", "a stream chunk that is not a JSON object: [1, 2]",
          "What arrived before it stopped was kept"), code=0, server="list-chunk",
         stdin=b"hello\n/exit\n", check=partial_reply_kept("Hello")),
    Case("stream-stops-mid-reply", CHAT,
         ("assistant> Hello", "the server closed the stream before the reply was complete",
          "What arrived before it stopped was kept"),
         code=0, server="stops", stdin=b"hello\n/exit\n", check=partial_reply_kept("Hello")),
]


# --- running the corpus ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """A home with a week of chats, synced, and a remembered note."""
    home = Home(tmp_path_factory.mktemp("template") / "home")
    for args in (("import", str(SAMPLE)), ("sync", "--no-embed"),
                 ("remember", "I keep the tide tables on the Pi.")):
        done = subprocess.run([*diarist_cmd(), *args], env=subprocess_env(home),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    return home


def run_case(case: Case, template: Home, tmp: Path, urls: dict[str, str]) -> Run:
    home = Home(tmp / "home")
    shutil.copytree(template.root, home.root)
    work = tmp / "work"
    work.mkdir()
    for name, data in case.files.items():
        (work / name).write_bytes(data)
    if case.config is not None:
        home.config_file.write_bytes(case.config)
    if case.setup is not None:
        case.setup(home)
    before, rows_before = files(home), rows(home)
    args = list(case.args)
    for key, value in {"tmp": str(work), **urls}.items():
        args = [a.replace(f"{{{key}}}", value) for a in args]
    env = subprocess_env(home)
    for name in ("OLLAMA_HOST", "DIARIST_OPENAI_BASE_URL", "DIARIST_OPENAI_API_KEY",
                 "DIARIST_DEBUG"):
        env.pop(name, None)
    done = subprocess.run([*diarist_cmd(), *args], env=env, input=case.stdin, cwd=work,
                          capture_output=True, timeout=120)
    return Run(done.returncode, done.stdout.decode("utf-8", "replace"),
               done.stderr.decode("utf-8", "replace"), home, work, before, files(home),
               rows_before, rows(home))


@pytest.fixture(scope="module")
def runs(template: Home, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """Every case of the corpus, run side by side, by id."""
    with ExitStack() as stack:
        urls = {"closed": f"http://127.0.0.1:{free_port()}"}
        for name, routes in SERVERS.items():
            url, handler = stack.enter_context(serve())
            handler.routes.update(routes)
            urls[name] = url
        root = tmp_path_factory.mktemp("cases")

        def one(case: Case) -> Run:
            tmp = root / case.id
            tmp.mkdir()
            return run_case(case, template, tmp, {**urls, "llm": urls.get(case.server or "",
                                                                          "")})

        with ThreadPoolExecutor(max_workers=3) as pool:
            yield dict(zip((c.id for c in CASES), pool.map(one, CASES), strict=True))


def params() -> list[object]:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)]
                         if c.xfail else []) for c in CASES]


@pytest.mark.parametrize("case", params())
def test_bad_input_is_refused_clearly_and_changes_nothing(case: Case,
                                                          runs: dict[str, Run]) -> None:
    run = runs[case.id]
    said = run.out + run.err
    assert run.code == case.code, said
    for words in case.says:
        assert words in said, f"{words!r} not in:\n{said}"
    assert "Traceback" not in said and "unexpected" not in said, said
    if case.code == 1:  # diarist's own error: what is wrong, then how to fix it
        assert "Error: " in run.err and "Hint: " in run.err, run.err
    elif case.code == 2:  # click's usage error
        assert "Error: " in run.err and "--help" in run.err, run.err
    if case.code or case.server:
        assert len(said.splitlines()) <= MAX_LINES, f"{len(said.splitlines())} lines"
    if case.code == 0 and not case.server:
        assert "Error" not in said, said
    case.check(run)


def test_the_corpus_is_large_and_has_unique_ids() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 80
