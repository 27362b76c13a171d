"""`diarist eval --answer`: the model answers each question four ways, and is scored.

- **memory**: the system prompt the chat builds — its own instruction plus the memory block
  diarist injects for the question (``build_injection`` within ``budget_pct`` of the window);
- **evidence**: the ceiling — the same prompt with, instead of what recall found, the
  question's own evidence turns in the same form and within the same budget
  (``build_evidence``): what the model does with exactly the right memory;
- **none**: the same system prompt with no memory at all;
- **recent**: the same system prompt with, instead of memory, the most recent raw turns of
  the conversation that fit what the window leaves (what a chat that keeps its history but
  has no memory would have seen).

Each time the user message is the question and one short instruction (the same for all
four), and the system prompt tells the day the question was asked when the dataset gives it
(as the chat tells the session's day); each is sent with a small ``max_tokens`` and
``temperature`` 0 (``--temperature``: another, to sample as the chat does). Replies are
scored with LoCoMo's token F1 and exact containment (:mod:`.metrics`). Every reply is
cached in a JSON lines file keyed by the model and the exact request (its temperature
too), written (and fsynced) as soon as it arrives, so an interrupted run resumes where it
stopped and a changed prompt is asked anew; a second run at the same temperature above 0
re-reads the first one's samples.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from events.jsonl import jsonl_lines
from projections.tokens import estimate

from ..chat.session import system_prompt
from ..llm import Backend
from . import metrics
from .dataset import Conversation, Question
from .stats import bootstrap_ci, paired_ci, ratio_ci

MODES = ("memory", "evidence", "none", "recent")
BASELINES = ("evidence", "none", "recent")
INSTRUCTION = ("From what you know about our past conversations: reply with just the answer, "
               "as briefly as you can.")
RECENT_HEADER = "[recent conversation]"
DEFAULT_MAX_TOKENS = 32
PROMPT_MARGIN = 16     # tokens kept free in the window besides the reply


class AnswerCache:
    """Replies by request key, in a JSON-lines file (append-only; the last line of a key
    wins; a torn last line from a crash is ignored)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in jsonl_lines(path):
                if not line.error and isinstance(line.value, dict) and "key" in line.value:
                    self.entries[line.value["key"]] = line.value

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        entry = {"key": key, **entry}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            # a crash may have left a torn last line: end it, so this entry is a line of its own
            torn = handle.tell() > 0 and not _ends_with_newline(self.path)
            handle.write(("\n" if torn else "") + json.dumps(entry, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.entries[key] = entry


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def request_key(model: str, messages: list[dict], max_tokens: int,
                temperature: float = 0.0) -> str:
    body = json.dumps({"model": model, "messages": messages, "max_tokens": max_tokens,
                       "temperature": temperature or 0}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


def question_day(q: Question) -> dt.date | None:
    """The day a question is asked (UTC), told to the model as the chat tells it today's;
    None when the dataset does not say (LoCoMo)."""
    return q.asked.date() if q.asked else None


def user_message(q: Question) -> dict:
    return {"role": "user", "content": f"{q.query}\n{INSTRUCTION}"}


def _turn_line(turn: dict[str, str]) -> str:
    name = f"{turn['name']}: " if turn.get("name") else ""
    return f"- ({turn['at'][:10]}) {name}{' '.join(turn['text'].split())}"


def recent_history(conv: Conversation, q: Question, tokens: int) -> str:
    """The most recent turns (said before the question, when its time is known) whose lines
    fit ``tokens``, oldest first, under a header."""
    turns = sorted((t for t in conv.turns if not q.at or t["at"] <= q.at),
                   key=lambda t: t["at"])
    room = tokens - estimate(RECENT_HEADER) - 1
    kept: list[str] = []
    for turn in reversed(turns):
        line = _turn_line(turn)
        cost = estimate(line) + 1
        if cost > room:
            break
        kept.append(line)
        room -= cost
    return "\n".join([RECENT_HEADER, *reversed(kept)]) if kept else ""


def prompts(conv: Conversation, q: Question, memory_block: str, window: int,
            max_tokens: int, evidence_block: str = "",
            model: str | None = None) -> dict[str, list[dict]]:
    """The four requests for a question (see the module doc), with ``model``'s
    instruction, as the chat asks it."""
    user = user_message(q)
    today = question_day(q)

    def with_system(extra: str) -> list[dict]:
        return [{"role": "system", "content": system_prompt(extra, today=today, model=model)},
                user]

    fixed = estimate(system_prompt("", today=today, model=model)) \
        + estimate(user["content"]) + max_tokens + PROMPT_MARGIN
    return {"memory": with_system(memory_block), "evidence": with_system(evidence_block),
            "none": with_system(""),
            "recent": with_system(recent_history(conv, q, max(window - fixed, 0)))}


def memory_prompt_tokens(q: Question, memory_block: str) -> int:
    """The estimated tokens of the memory request (system prompt, block, question)."""
    return estimate(system_prompt(memory_block, today=question_day(q))) + \
        estimate(user_message(q)["content"])


class Answerer:
    """Asks ``backend`` (any of :mod:`workers.llm`) the four ways and scores the replies."""

    def __init__(self, backend: Backend, cache: AnswerCache, *, window: int | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0) -> None:
        self.backend, self.cache, self.max_tokens = backend, cache, max_tokens
        self.temperature = temperature
        self.model = backend.model
        self.window = window or backend.context_window() or 2048
        self.asked = self.reused = 0

    def _ask(self, messages: list[dict]) -> dict[str, Any]:
        key = request_key(self.model, messages, self.max_tokens, self.temperature)
        cached = self.cache.get(key)
        if cached is not None:
            self.reused += 1
            return {**cached, "cached": True}
        reply = self.backend.chat(messages, stream=False, max_tokens=self.max_tokens,
                                  temperature=self.temperature)
        entry = {"model": self.model, "reply": reply.text,
                 "prompt_tokens": reply.stats.prompt_tokens,
                 "reply_tokens": reply.stats.reply_tokens,
                 "elapsed_ms": reply.stats.elapsed_ms}
        self.cache.put(key, entry)
        self.asked += 1
        return {**entry, "key": key, "cached": False}

    def answer(self, conv: Conversation, q: Question, memory_block: str,
               evidence_block: str = "") -> dict[str, Any]:
        requests = prompts(conv, q, memory_block, self.window, self.max_tokens,
                           evidence_block, self.model)
        answers: dict[str, Any] = {}
        for mode in MODES:
            got = self._ask(requests[mode])
            reply = " ".join(str(got.get("reply") or "").split())
            answers[mode] = {
                "reply": reply, "f1": metrics.answer_f1(reply, q.answer, q.category),
                "contains": metrics.contains_answer(reply, q.answer),
                "estimated_prompt_tokens": sum(estimate(m["content"]) for m in requests[mode]),
                "prompt_tokens": got.get("prompt_tokens"), "reply_tokens": got.get("reply_tokens"),
                "elapsed_ms": got.get("elapsed_ms"), "cached": got["cached"]}
        memory = answers["memory"]
        return {"answer": q.answer, "answers": answers,
                "prompt_tokens": memory["estimated_prompt_tokens"],
                "reply_tokens": memory["reply_tokens"] or estimate(memory["reply"])}


def summarise_answers(records: Sequence[dict[str, Any]], seed: int) -> dict[str, Any]:
    """F1 and containment per mode with intervals, memory − each other way (paired), and
    memory's share of the evidence way's total (``of_ceiling``), with a paired interval."""
    out: dict[str, Any] = {"of_ceiling": {}}
    for score in ("f1", "contains"):
        values = {m: [r["answers"][m][score] for r in records] for m in MODES}
        out[score] = {m: _json(bootstrap_ci(values[m], seed=seed)) for m in MODES}
        out[score].update({f"memory-{b}": _json(paired_ci(values["memory"], values[b], seed=seed))
                           for b in BASELINES})
        # the share of the ceiling memory reaches: memory's total over the evidence way's
        out["of_ceiling"][score] = _json(ratio_ci(values["memory"], values["evidence"],
                                                  seed=seed))
    return out


def _json(found: Any) -> dict[str, Any] | None:
    return found.to_json() if found is not None else None
