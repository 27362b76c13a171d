"""diarist against a real small model: Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M) served by
llama.cpp (`diarist serve-model`) with a 2,048-token window, through the `openai` backend.

A 0.5B model's words are not repeatable enough to assert on, so these tests check what the
model's output must never break: streaming and stats arrive, memory is injected within the
budget, the history is compressed at the configured share (half the window here, so a
shorter paste crosses it), the shadow journal survives whatever shape of
"JSON" the model answers with, and the log replays to the same projections.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from events import EventLog, Home
from events.types import AssistantTurn, UserTurn
from projections import open_store
from projections.journal import entries_for
from workers.chat.shadow_journal import parse_facts, shadow_journal
from workers.llm import make_backend
from workers.models.llama_server import MODEL_ALIAS

from ..conftest import diarist_cmd, subprocess_env
from ..terminal import Terminal
from .conftest import WINDOW

PARA = ("Build log notes: the ingest service on port 9400 now batches writes every 250 ms; "
        "the nightly job rotates logs in /srv/ingest/logs and keeps fourteen days; "
        "the flaky test in test_batching.py was a race between the flush timer and shutdown, "
        "fixed by joining the timer thread before closing the socket. ")
PASTE = " ".join(f"({i}) {PARA}" for i in range(2))  # ~120 real tokens


def test_the_backend_streams_and_reports_stats(llm_server: str) -> None:
    backend = make_backend("openai", base_url=llm_server)
    assert MODEL_ALIAS in backend.models()
    assert backend.context_window() == WINDOW  # from llama.cpp's /props
    pieces: list[str] = []
    reply = backend.chat([{"role": "user", "content": "Count from one to five in words."}],
                         on_token=pieces.append, max_tokens=32, temperature=0)
    assert len(pieces) > 1 and "".join(pieces) == reply.text and reply.text.strip()
    stats = reply.stats
    assert stats.prompt_tokens and stats.reply_tokens and stats.tokens_per_sec
    assert 0 < stats.reply_tokens <= 32 and stats.tokens_per_sec > 0


def test_a_chat_session_against_the_real_model(llm_server: str, home: Home, tmp_path: Path,
                                               locomo26: Path) -> None:
    home.config_file.write_text(yaml.safe_dump({
        # the shadow journal against this model: the test below (three calls less here)
        # compression at 30% of the window: the short paste crosses it (each model call
        # reads about a thousand tokens, 10-20 s for the one-thread model)
        "memory": {"shadow_journal": False,
                   "rolling_summary": {"keep_turns": 2, "warn_at_pct": 0.3}},
        "llm": {"max_reply_tokens": 64, "temperature": 0}}))

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*diarist_cmd(), *args], input=stdin, capture_output=True,
                              text=True, env=subprocess_env(home), cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr + done.stdout
        return done

    # memory to inject: a long real conversation and a note
    run("import", str(locomo26))
    run("remember", "My dog is called Rex and he is a beagle.")
    run("sync", "--no-embed")

    chat = run("chat", "--backend", "openai", "--base-url", llm_server, stdin="\n".join([
        "What is my dog called? Answer in one short sentence.",
        f"Here are my notes, just say OK. {PASTE}",
        "Which port does the ingest service use? One short sentence.",
        "/status",
        "/exit"]) + "\n")
    out = chat.stdout
    assert f"openai {MODEL_ALIAS}, context {WINDOW} tokens, memory budget 512" in out
    assert "full — compressing older turns]" in out, out
    assert "backend openai, model" in out, out  # /status
    assert "Session ended (3 turns)" in out, out

    with EventLog(home.events_db) as log:
        events = log.read()
        session = next(e for e in events if e.type == "SessionStarted"
                       and e.payload["session"].startswith("chat/"))
        mine = [e for e in events if e.payload.get("session") == session.payload["session"]]
        kinds = [e.type for e in mine]
        assert session.payload["backend"] == "openai"
        assert session.payload["context_window"] == WINDOW
        injected = next(e.payload for e in mine if e.type == "MemoryInjected")
        assert injected["budget_tokens"] == 512
        assert 0 < injected["injected_tokens"] <= 512 and injected["items"]
        # the note is in the start block, read ahead while the person types: the first
        # question waits for no note of its own (docs/benchmarks.md, "First token with memory")
        assert injected["kind"] == "start"
        (remembered,) = [e.id for e in events if e.type == "Remembered"]
        assert remembered in injected["items"]
        replies = [e.payload for e in mine if e.type == "AssistantTurn"]
        assert len(replies) == 3 and all(r["text"].strip() for r in replies)
        # the point of it all: the injected note answers the first question (a keyword, not
        # the wording; temperature 0)
        assert "rex" in replies[0]["text"].lower(), replies[0]["text"]
        assert all(r["prompt_tokens"] and r["reply_tokens"] and r["tokens_per_sec"]
                   for r in replies)
        assert all(r["reply_tokens"] <= 64 for r in replies)
        compressed = [e.payload for e in mine if e.type == "HistoryCompressed"]
        assert compressed and compressed[0]["summary"].strip() and compressed[0]["replaced"]
        assert kinds[-1] == "SessionEnded"

    verify = run("replay", "--verify")
    assert "DIFFERS" not in verify.stdout and "journal: ok" in verify.stdout, verify.stdout


def test_the_shadow_journal_survives_the_models_json(llm_server: str, home: Home) -> None:
    """Whatever the model answers (a JSON list, bullets, an object, chatter), extraction
    either records facts traced to the two turns or nothing; replay rebuilds the journal
    from the event alone (no backend call)."""
    backend = make_backend("openai", base_url=llm_server)
    exchanges = [
        ("I'm working on a Rust project called ferrous-db; we use PostgreSQL 16 for tests.",
         "Sounds great."),
        ("My name is Alice, I live in Berlin and I have two cats.", "Nice to meet you, Alice!"),
        ("I prefer tabs over spaces, and my editor is Helix.", "Got it."),
        ("I use Python 3.11 and pytest for the diarist project, and Redis for its queue.",
         "Good choice."),
    ]
    recorded = []
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        for n, (user, assistant) in enumerate(exchanges):
            u = log.append(UserTurn(session="chat/real", text=user, name="user"),
                           stream="chat/real", ref=f"real:{n}:u")
            a = log.append(AssistantTurn(session="chat/real", text=assistant, name=MODEL_ALIAS),
                           stream="chat/real", ref=f"real:{n}:a")
            event = shadow_journal(home, log, "chat/real", u.id, a.id, backend, store=store)
            if event is not None:
                assert event.payload["from_events"] == [u.id, a.id]
                assert event.payload["refs"] == [f"real:{n}:u", f"real:{n}:a"]
                assert all(isinstance(f, str) and f.strip() for f in event.payload["facts"])
                recorded.append(event)
        # a 0.5B model finds something in at least one of four plain self-descriptions
        assert recorded, "the model found no fact in any exchange"
        store.catch_up_all()
        day = recorded[0].occurred_at[:10]
        lines = [content for _id, _at, _src, content in entries_for(store.db, day)]
        for event in recorded:
            for fact in event.payload["facts"]:
                assert any(fact in line for line in lines)
        before = store.digest("journal")
        store.rebuild("journal")
        assert store.digest("journal") == before


def test_the_fact_parser_on_the_models_own_shapes() -> None:
    """The shapes this model was seen to answer with (docs/architecture.md)."""
    assert parse_facts('- PostgreSQL 16 is used.\n- ferrous-db is a Rust project.') == [
        "PostgreSQL 16 is used.", "ferrous-db is a Rust project."]
    assert parse_facts('```json\n{"name": "User", "projects": ["Helix Editor"]}\n```') == [
        "Helix Editor"]
    assert parse_facts("[]") == []


def test_ctrl_c_stops_a_real_stream_and_the_chat_goes_on(llm_server: str, home: Home,
                                                         tmp_path: Path) -> None:
    """^C on the terminal while the model writes a long answer: the reply stops, is recorded
    as interrupted, and the next message gets an answer (llama.cpp dropped the request when
    the connection closed; its one slot is free again). Temperature 0: sampled freely, the
    0.5B model sometimes refused the story in one line, which ended before the ^C."""
    home.config_file.write_text("llm:\n  temperature: 0\n", encoding="utf-8")
    term = Terminal([*diarist_cmd(), "chat", "--backend", "openai", "--base-url", llm_server,
                     "--no-tools"], subprocess_env(home), tmp_path)
    try:
        term.expect(r"What should I call you\?")
        for _ in range(4):
            term.send("")  # skip the onboarding questions
        term.expect(r"you> ")
        term.send("Write a 400-word story about a lighthouse keeper.")
        term.expect(r"assistant> \S[\s\S]{80}", timeout=120)  # some of the story streamed in
        term.key(b"\x03")
        term.expect(r"\[interrupted\]")
        term.send("Say hello in three words.")
        term.expect(r"\[interrupted\][\s\S]*assistant> [\s\S]*you> ", timeout=120)
        term.send("/exit")
        term.expect(r"Session ended \(2 turns\)\.")
    except BaseException:
        term.kill()
        raise
    finally:
        code = term.close()
    assert code == 0, term.screen[-2000:]
    with EventLog(home.events_db) as log:
        first, second = [e.payload for e in log.read(types=["AssistantTurn"])]
    assert first["interrupted"] is True and first["text"].strip()
    assert len(first["text"].split()) < 300  # stopped well before the 400 words
    assert second["interrupted"] is False and second["text"].strip()


def test_a_second_server_on_a_taken_port_is_a_clear_error(llm_server: str, home: Home) -> None:
    port = llm_server.rsplit(":", 1)[1].split("/")[0]
    try:
        done = subprocess.run([*diarist_cmd(), "serve-model", "--port", port],
                              capture_output=True, text=True, env=subprocess_env(home),
                              timeout=300)
    finally:
        shutil.rmtree(home.models_dir, ignore_errors=True)  # its own 491 MB copy
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"did not start on 127.0.0.1:{port}" in done.stderr
    assert "Is the port taken?" in done.stderr and "Traceback" not in done.stderr
