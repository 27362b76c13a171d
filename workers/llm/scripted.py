"""Deterministic replies from a JSON-lines rule file (or an echo rule), for tests and demos.

The reply is rendered as OpenAI SSE lines in process and fed through the same parser
(:func:`workers.llm.openai.parse_sse`) and the same streaming loop as the ``openai`` backend,
so a test with this backend exercises the code a real server's reply goes through.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from events.errors import DiaristError
from events.jsonl import jsonl_lines
from projections.tokens import estimate

from .base import ChatReply, Defaults
from .openai import parse_sse
from .stream import consume


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str] | None
    reply: str


RULE_HINT = 'Each line is {"match": "regex", "reply": "text"} or a default {"reply": "text"}.'


class ScriptError(DiaristError):
    hint = "Pass an existing JSON-lines script file: " + RULE_HINT


def load_rules(script: Path) -> list[Rule]:
    """The rules of a script file; a bad line is an error naming ``file:line``."""
    rules: list[Rule] = []
    for line in jsonl_lines(script, comments=True, error=ScriptError):
        item = line.value
        try:
            if line.error:
                raise ValueError(line.error)
            if not isinstance(item, dict) or not isinstance(item.get("reply"), str):
                raise ValueError('needs a string "reply"')
            pattern = re.compile(item["match"]) if item.get("match") is not None else None
        except (ValueError, re.error) as e:
            raise DiaristError(f"{script}:{line.number}: bad rule ({e})", hint=RULE_HINT) from None
        rules.append(Rule(pattern, item["reply"]))
    return rules


def sse_lines(text: str, prompt_tokens: int, reply_tokens: int, model: str, *,
              whole: bool = False) -> Iterator[bytes]:
    """Render a reply as the OpenAI SSE wire format, one chunk per word (or one in all)."""
    pieces = [text] if whole else re.findall(r"\s*\S+\s*|\s+", text)
    for piece in pieces:
        chunk = {"object": "chat.completion.chunk", "model": model,
                 "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": reply_tokens,
             "total_tokens": prompt_tokens + reply_tokens}
    yield f"data: {json.dumps({'model': model, 'choices': [], 'usage': usage})}\n\n".encode()
    yield b"data: [DONE]\n\n"


class ScriptedBackend:
    """The first rule whose regex matches the last user message wins; a rule without
    ``match`` is the default; with no script, it echoes."""

    name = "scripted"
    native_tools = False  # tool calls come from the rules' text, as from a small model

    def __init__(self, script: Path | None = None, model: str | None = None,
                 context_window: int | None = 4096) -> None:
        self.script = Path(script) if script else None
        self.model = model or "scripted"
        self._window = context_window
        self.rules = load_rules(self.script) if self.script else []
        self.defaults = Defaults()
        self.warmed: list[list[dict]] = []

    def __repr__(self) -> str:
        return f"ScriptedBackend(script={str(self.script) if self.script else None!r})"

    def reply_for(self, messages: list[dict]) -> str:
        last = next((str(m.get("content") or "") for m in reversed(messages)
                     if m.get("role") == "user"), "")
        for rule in self.rules:
            if rule.pattern is None or rule.pattern.search(last):
                return rule.reply
        return f"echo: {last}"

    def chat(self, messages: list[dict], *, stream: bool = True,
             on_token: Callable[[str], None] | None = None, max_tokens: int | None = None,
             temperature: float | None = None, tools: list[dict] | None = None,
             tool_choice: str | None = None,
             json_schema: dict[str, Any] | None = None) -> ChatReply:
        max_tokens, temperature = self.defaults.apply(max_tokens, temperature)
        del tools, tool_choice, json_schema  # the rules decide the reply
        started = time.monotonic()
        text = self.reply_for(messages)
        if max_tokens is not None:
            text = " ".join(text.split(" ")[:max(max_tokens, 0)])
        prompt = sum(estimate(str(m.get("content") or "")) for m in messages)
        # stream=False: the whole reply in one chunk, like a non-streamed completion
        lines = sse_lines(text, prompt, estimate(text), self.model, whole=not stream)
        return consume(parse_sse(lines), on_token, started)

    def tool_result_message(self, name: str, call_id: str | None, result: str) -> dict:
        return {"role": "tool", "content": result, "tool_call_id": call_id or ""}

    def warm(self, messages: list[dict]) -> None:
        """Nothing to read ahead: the rules answer at once. Records what was warmed, so a
        test can check that a later request starts with it."""
        self.warmed.append([dict(m) for m in messages])

    def models(self) -> list[str]:
        return [self.model]

    def context_window(self, model: str | None = None) -> int | None:
        return self._window
