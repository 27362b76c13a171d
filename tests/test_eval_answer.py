"""`diarist eval --answer` with the scripted backend (the same SSE parser as a real server):
the four prompts, scoring, the summary with paired intervals, and the cache that makes an
interrupted run resume."""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from events.config import Config
from projections.tokens import estimate
from workers.chat.instruction import GENERAL, instruction
from workers.eval.answer import RECENT_HEADER, AnswerCache, Answerer, prompts
from workers.eval.changed_facts import generate
from workers.eval.load import load_dataset
from workers.eval.runner import EvalOptions, run_eval
from workers.llm import ScriptedBackend
from workers.models.llama_server import MINING_MODEL

from .conftest import rules, run

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


def test_the_four_prompts() -> None:
    data = generate(2, people=1, sessions=6)
    conv = data.conversations[0]
    q = conv.questions[0]
    block = "[memory context]\n[knowledge]\n- (2024-03-01) Maya: a fact"
    evidence = "[memory context]\n[knowledge]\n- (1 March 2024) Maya: the evidence"
    asked = prompts(conv, q, block, window=1024, max_tokens=32, evidence_block=evidence)
    for mode in ("memory", "evidence", "none", "recent"):
        system, user = asked[mode]
        assert system["role"] == "system" and system["content"].startswith(GENERAL)
        assert user == {"role": "user", "content": user["content"]}
        assert user["content"].startswith(q.query)
    assert asked["memory"][0]["content"].endswith(block)
    # the day the question was asked, told as the chat tells the session's day
    day = dt.date.fromisoformat(q.at[:10])
    told = f"{GENERAL} Today is {day:%A}, {day.day} {day:%B} {day.year}."
    assert asked["evidence"][0]["content"] == f"{told}\n\n{evidence}"
    assert asked["none"][0]["content"] == told
    undated = prompts(conv, replace(q, at=None), block, window=1024, max_tokens=32)
    assert undated["none"][0]["content"] == GENERAL   # LoCoMo's questions: no day
    recent = asked["recent"][0]["content"]
    assert RECENT_HEADER in recent
    # the most recent turns, oldest first, as many as the window leaves room for
    last = conv.turns[-1]
    assert recent.endswith(f"{last['name']}: {last['text']}")
    assert f"({conv.turns[0]['at'][:10]})" not in recent   # the first session is too old
    assert sum(estimate(m["content"]) for m in asked["recent"]) + 32 <= 1024
    bigger = prompts(conv, q, block, window=4096, max_tokens=32)["recent"][0]["content"]
    assert len(bigger) > len(recent)


def _script(tmp_path: Path) -> Path:
    return rules(tmp_path, {"match": "job now", "reply": "Ann teaches chemistry now."},
                 {"match": "before teaching", "reply": "A baker."},
                 {"reply": "I do not know."})


def test_answer_run_scores_four_ways_and_resumes_from_the_cache(tmp_path: Path) -> None:
    script, cache = _script(tmp_path), tmp_path / "answers.jsonl"
    args = ["eval", str(FIXTURES / "layout"), "--answer", "--backend", "scripted",
            "--script", str(script), "--cache", str(cache), "--json"]
    first = run(*args)
    report = json.loads(first.stdout)
    assert "(8 replies asked, 0 from the cache" in first.stderr
    q1, q2 = report["questions"]
    assert set(q1["answers"]) == {"memory", "evidence", "none", "recent"}
    assert q1["answers"]["memory"]["reply"] == "Ann teaches chemistry now."
    assert q1["answers"]["memory"]["f1"] == pytest.approx(2 * (1 / 4 * 1 / 2) / (1 / 4 + 1 / 2))
    assert q1["answers"]["memory"]["contains"] == 0.0   # "chemistry teacher" is not said
    assert q2["answers"]["none"]["f1"] == 1.0 and q2["answers"]["none"]["contains"] == 1.0
    assert q1["answers"]["memory"]["prompt_tokens"] > q1["answers"]["none"]["prompt_tokens"]
    answers = report["summary"]["overall"]["answers"]
    assert set(answers["f1"]) == {"memory", "evidence", "none", "recent", "memory-evidence",
                                  "memory-none", "memory-recent"}
    evidence, memory = (answers["contains"][m]["mean"] for m in ("evidence", "memory"))
    assert evidence, "the scripted replies must answer some question from its evidence"
    share = answers["of_ceiling"]["contains"]
    assert share["mean"] == pytest.approx(memory / evidence) and share["low"] <= share["mean"]
    assert answers["f1"]["memory-none"]["mean"] == pytest.approx(0.0)
    assert len(cache.read_text().splitlines()) == 8
    # again: every reply comes from the cache, the figures are the same
    second = run(*args)
    assert "(0 replies asked, 8 from the cache" in second.stderr
    assert json.loads(second.stdout)["summary"] == report["summary"]
    # the table and the report show the answers
    table = run(*args[:-1]).stdout
    assert "with diarist's memory" in table and "gain over no memory" in table
    assert "(ceiling)" in table and "memory / evidence: F1" in table
    assert re.search(r"contains \d\.\d\d× \[\d\.\d\d, \d\.\d\d\]", table), table
    # --report draws the answers chart beside the recall chart, and reports the gains
    pytest.importorskip("matplotlib")
    run(*args[:-1], "--report", str(tmp_path / "r"))
    assert (tmp_path / "r" / "answers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "![answers](answers.png)" in markdown and "| gain over no memory |" in markdown


class _Interrupting(ScriptedBackend):
    """A real scripted backend that is interrupted (Ctrl-C) at its n-th request."""

    def __init__(self, script: Path, at: int | None) -> None:
        super().__init__(script)
        self.at, self.calls = at, 0

    def chat(self, messages: list[dict], **kwargs: Any) -> Any:  # type: ignore[override]
        self.calls += 1
        if self.at is not None and self.calls == self.at:
            raise KeyboardInterrupt
        return super().chat(messages, **kwargs)


class _Recording(ScriptedBackend):
    """A real scripted backend serving ``model``, keeping each request's system message."""

    def __init__(self, script: Path, model: str | None) -> None:
        super().__init__(script, model)
        self.systems: list[str] = []
        self.temperatures: list[float | None] = []

    def chat(self, messages: list[dict], **kwargs: Any) -> Any:  # type: ignore[override]
        self.systems.append(messages[0]["content"])
        self.temperatures.append(kwargs.get("temperature"))
        return super().chat(messages, **kwargs)


def test_each_model_is_asked_with_its_own_instruction(tmp_path: Path) -> None:
    """`eval --answer` asks the installed 1.5B model with "Reply briefly." alone and any
    other model with the general instruction, every way, as the chat does."""
    data = load_dataset(FIXTURES / "layout")
    for model in (None, MINING_MODEL.alias):
        backend = _Recording(_script(tmp_path), model)
        answerer = Answerer(backend, AnswerCache(tmp_path / f"{model}.jsonl"), window=2048)
        run_eval(data, EvalOptions(embed=False, answerer=answerer), Config())
        assert len(backend.systems) == 8
        assert all(s.startswith(instruction(model)) for s in backend.systems)


def test_a_temperature_is_sent_and_cached_apart(tmp_path: Path) -> None:
    """`--temperature` samples as the chat does: each request carries it, the report names
    it, and a reply sampled at it is cached apart from the temperature-0 one."""
    data = load_dataset(FIXTURES / "layout")
    cache = tmp_path / "answers.jsonl"
    for temperature, asked in ((0.0, 8), (0.3, 8), (0.3, 0)):
        backend = _Recording(_script(tmp_path), None)
        answerer = Answerer(backend, AnswerCache(cache), window=2048, temperature=temperature)
        report = run_eval(data, EvalOptions(embed=False, answerer=answerer), Config())
        assert backend.temperatures == [temperature] * asked
        assert report.options["temperature"] == temperature
    args = ["eval", str(FIXTURES / "layout"), "--answer", "--backend", "scripted",
            "--script", str(_script(tmp_path)), "--cache", str(cache)]
    shown = run(*args, "--temperature", "0.3")
    assert "temperature 0.3" in shown.stdout and "(0 replies asked, 8 from" in shown.stderr
    assert "temperature" not in run(*args).stdout.split("\n")[0]


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    data = load_dataset(FIXTURES / "layout")
    cache = tmp_path / "answers.jsonl"

    def run_with(backend: _Interrupting) -> Any:
        answerer = Answerer(backend, AnswerCache(cache), window=2048)
        return run_eval(data, EvalOptions(embed=False, answerer=answerer), Config())

    with pytest.raises(KeyboardInterrupt):
        run_with(_Interrupting(_script(tmp_path), at=7))
    assert len(cache.read_text().splitlines()) == 6   # the six replies before the interrupt
    resumed = _Interrupting(_script(tmp_path), at=None)
    report = run_with(resumed)
    assert resumed.calls == 2                          # only what was missing is asked
    assert len(report.questions) == 2
    assert sum(a["cached"] for r in report.questions for a in r["answers"].values()) == 6


def test_a_torn_last_cache_line_is_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "answers.jsonl"
    cache.write_text(json.dumps({"key": "k1", "reply": "x"}) + "\n" + '{"key": "k2", "rep')
    loaded = AnswerCache(cache)
    assert set(loaded.entries) == {"k1"}
    # the next reply after such a crash is a line of its own, found again by the next run
    loaded.put("k3", {"reply": "y"})
    assert set(AnswerCache(cache).entries) == {"k1", "k3"}
    assert AnswerCache(cache).get("k3")["reply"] == "y"


def test_an_unreachable_server_fails_before_any_work(tmp_path: Path) -> None:
    from .conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    result = run("eval", str(FIXTURES / "layout"), "--answer", "--backend", "openai",
                 "--base-url", url, "--keep-homes", str(tmp_path / "homes"), ok=False)
    assert result.exit_code == 1
    assert f"Error: cannot reach the openai server at {url}" in result.output
    assert not (tmp_path / "homes").exists()   # nothing was built


@pytest.mark.slow
def test_the_terminal_shows_a_bar_with_an_eta_and_ctrl_c_resumes(tmp_path: Path) -> None:
    """In a real terminal: a progress bar with an ETA; ^C mid-run says where the answers are
    cached and exits 130; the same command again asks only what is missing."""
    from events import Home
    from workers.eval.dataset import write_layout

    from .conftest import diarist_cmd, subprocess_env
    from .terminal import Terminal

    write_layout(generate(3, people=10), tmp_path / "data")
    cache = tmp_path / "answers.jsonl"
    cmd = [*diarist_cmd(), "eval", str(tmp_path / "data"), "--answer", "--backend", "scripted",
           "--script", str(_script(tmp_path)), "--cache", str(cache)]
    env = subprocess_env(Home(tmp_path / "var").ensure())
    term = Terminal(cmd, env, tmp_path)
    try:
        term.expect(r"Evaluating.*\d+/\d+.*\d\d:\d\d:\d\d", timeout=120)   # position and ETA
        term.key(b"\x03")
        screen = term.expect(r"Run the same command again to resume\.")
        assert f"Answers so far are cached in {cache}" in " ".join(screen.split())
        assert term.proc.wait(timeout=30) == 130
    finally:
        term.kill()
        term.close()
    asked_before = len(cache.read_text().splitlines())
    assert 0 < asked_before
    again = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    questions = len(generate(3, people=10).questions)
    done = re.search(r"\((\d+) replies asked, (\d+) from the cache", again.stderr)
    assert done, again.stderr
    asked, reused = int(done.group(1)), int(done.group(2))
    assert reused == asked_before and asked + reused == 4 * questions


def test_the_chat_and_eval_ask_with_the_same_system_prompt(home: Any, stores: Any,
                                                           tmp_path: Path) -> None:
    """The memory way of `eval --answer` is what the chat sends for the same block on the day
    the question is asked: one helper (``system_prompt``) builds both."""
    from events import clock
    from events.types import ProfileSet
    from workers.chat.session import ChatSession, system_prompt

    data = generate(2, people=1, sessions=6)
    conv = data.conversations[0]
    q = conv.questions[0]
    asked_at = clock.from_iso(q.at)
    log, store = stores
    log.append(ProfileSet(fields={"name": "Ann"}), stream="profile")
    store.catch_up_all()
    for model in (None, MINING_MODEL.alias):   # a model of its own instruction, too
        with clock.frozen(asked_at):
            session = ChatSession(home, log, store, ScriptedBackend(_script(tmp_path), model),
                                  Config())
            session.start()
        block = session.memory_block
        assert "- name: Ann" in block
        chat_system = session.messages(tools=False)[0]
        asked = prompts(conv, q, block, window=2048, max_tokens=32,
                        model=session.backend.model)
        assert asked["memory"][0] == chat_system == {
            "role": "system",
            "content": system_prompt(block, today=asked_at.date(), model=model)}
        assert chat_system["content"].startswith(instruction(model))
        assert f"Today is {asked_at:%A}" in chat_system["content"]
        session.end()
    assert instruction(None) != instruction(MINING_MODEL.alias)
