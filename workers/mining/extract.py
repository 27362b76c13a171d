"""Extracting typed memories from one chunk with a model, or with the heuristic extractor.

**The call.** One non-streamed call per chunk at ``temperature=0``: a fixed system prompt
(:data:`SYSTEM`, byte-identical for every call, so llama.cpp's prompt cache keeps it and
only the chunk's own lines are read again; the OpenAI-compatible backend sends
``cache_prompt: true``), then the chunk's numbered lines and the most memories it may
return. The prompt asks for ``{"memories": [{content, type, subject, turns}]}``; with
``mining.json_schema: true`` the same shape goes as a JSON schema too (llama.cpp turns it
into a grammar, Ollama into ``format``). Off by default: a small model under a grammar runs
on inside a string until the token cap and must be asked again (docs/architecture.md,
"Mining"). The answer is parsed leniently (:mod:`workers.llm.lenient_json`) either way,
because a capped answer stops mid-list.

**When the answer is unusable** (no JSON found, or no list of memories in it) the model is
asked once more, with its answer and what was wrong; a second failure is returned as
``failure`` and the heuristic extractor stands in (``fallback``), so no session is lost and
the failure is recorded (``MiningFailed``). A server that cannot be reached is not a
failure of the chunk: :class:`~workers.llm.BackendUnavailable` propagates and the pass
stops, to resume later.

**What the model writes** per memory is only what needs a model — ``content``, ``type``,
``subject`` and the ``turns`` it came from; every field is an output token, and output is
what a small CPU model is slowest at. ``kind`` (and ``action`` for "remember to …") come
from the heuristic extractor's patterns over the content, ``tags`` from its content words,
and ``confidence`` is 0.8 for a model's memory (0.6–0.7 for the heuristic's) unless the
answer gives one. What a speaker asked to remember of themselves ("please remember that
I …") is found by the heuristic extractor's patterns and comes first, whatever the model
chose (:func:`.heuristic.asked_notes`); the model's own version of it is a duplicate.

**What is kept** of each memory: a known type (a few synonyms are mapped; else
``user_preference``) — ``workspace_profile`` only for identity facts (name, home, job,
employer: recall injects every active profile memory first, so a model calling everything
"profile" would crowd the budget), else the type the patterns give, else
``user_preference``; turn numbers that name source lines of the chunk (else the source line
sharing most words with it); and only when its content shares at least two content words
(stemmed, speakers' names included) with the lines it cites — a small model that copies
the prompt or invents a fact is dropped here. It is written as the heuristic's statements
are: of the speaker of the turn it cites first, in the third person (a fifth of the 0.5B's
memories keep the speaker's words: "Jon is starting a dance studio 'cause I'm passionate
about dancing" → "… 'cause Jon is passionate …"; :func:`.statements.third_person`), its
relative time dated from that turn (:func:`projections.relative_time.resolve`: "… moved to
Leeds last week" → "… in the week of 30 November 2026"): a MEMORY.md line read a month on
says whose and when.
"""
from __future__ import annotations

import os
import re
import socket
import time
from dataclasses import dataclass
from typing import Any

from events import memory_types
from events.clock import from_iso
from events.config import Config, LLMConfig
from events.memory_types import DEFAULT, PREFERENCE, PROFILE, PROJECT_FACT, TOOL_USE, WORKFLOW
from projections.relative_time import resolve

from ..llm import Backend, make_backend
from ..llm.lenient_json import LenientJSONError, loads_lenient
from .candidates import HEURISTIC, KINDS, Candidate, Extraction
from .chunks import Chunk, Turn
from .heuristic import asked_notes, heuristic_candidates, kind_of, type_of
from .statements import third_person
from .text import content_words, grounded, normal_subject, stem, subject_key, tags_of

SYSTEM = (
    "You turn a conversation into long-term memories. Reply with only JSON, on one line: "
    '{"memories": [...]}. Each memory is an object with:\n'
    '"content": one short sentence that names the person it is about;\n'
    f'"type": {memory_types.prompt_text()};\n'
    '"subject": one to three words for what it is about (the same words for facts that '
    "would replace each other);\n"
    '"turns": the numbers of the lines it comes from.\n'
    "Keep only facts the speakers state about themselves, their work, plans, likes or "
    "lives. Skip greetings, questions and small talk. Lines marked (context) only explain "
    'the others. Reply {"memories": []} when nothing is worth keeping.')
MAX_PER_CHUNK = 8
TOKENS_PER_MEMORY = 48       # the answer's budget: this much per memory asked for, plus a bit
PROMPT_OVERHEAD = 420        # estimated tokens of SYSTEM, the template and the closing line
MIN_CONFIDENCE, DEFAULT_CONFIDENCE = 0.3, 0.8
REPLY_EXCERPT = 600
_TYPE_SYNONYMS = {"profile": PROFILE.name, "preference": PREFERENCE.name,
                  "fact": PROJECT_FACT.name, "project": PROJECT_FACT.name, "tool": TOOL_USE.name,
                  "personal": PREFERENCE.name, "event": PREFERENCE.name,
                  "habit": PREFERENCE.name, "process": WORKFLOW.name}


@dataclass(frozen=True)
class MinerSpec:
    """Which extractor: ``heuristic``, or a backend (name, model, server, scripted rules).
    It travels with a queued extraction; an API key never does (a worker uses its own)."""

    backend: str = HEURISTIC
    model: str | None = None
    base_url: str | None = None
    script: str | None = None
    timeout: float = 600.0
    constrained: bool = False  # send the JSON schema (``mining.json_schema``)

    @property
    def uses_model(self) -> bool:
        return self.backend != HEURISTIC

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url,
                "script": self.script, "timeout": self.timeout, "constrained": self.constrained}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MinerSpec:
        return cls(**data)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


_BACKENDS: dict[tuple[Any, ...], Backend] = {}


def backend_for(spec: MinerSpec, llm: LLMConfig | None = None) -> Backend:
    """The spec's backend, built once per process (its model and window are asked once)."""
    key = (spec.backend, spec.model, spec.base_url, spec.script, spec.timeout)
    if key not in _BACKENDS:
        from pathlib import Path

        backend = make_backend(spec.backend, model=spec.model, base_url=spec.base_url,
                               script=Path(spec.script) if spec.script else None,
                               timeout=spec.timeout, llm=llm)
        extra = getattr(backend, "extra_body", None)
        if isinstance(extra, dict):
            extra["cache_prompt"] = True  # llama.cpp: keep the fixed prefix's KV cache
        _BACKENDS[key] = backend
    return _BACKENDS[key]


def chunk_budget(window: int | None, configured: int | None = None) -> int:
    """Estimated tokens of turns per chunk: the configured value, else what the model's
    window leaves after the prompt and the answer (2,048 when the window is unknown)."""
    if configured:
        return configured
    room = (window or 2048) - PROMPT_OVERHEAD - TOKENS_PER_MEMORY * MAX_PER_CHUNK
    return max(256, min(room, 3000))


def wanted(chunk: Chunk) -> int:
    """How many memories a chunk may yield: about one per four source lines, 2–8 (the
    answer is what a CPU model is slowest at)."""
    sources = sum(1 for t in chunk.turns if t.source)
    return max(min(2, sources), min(MAX_PER_CHUNK, (sources + 3) // 4))


def schema(limit: int) -> dict[str, Any]:
    # No length limits: llama.cpp expands maxLength into a grammar that samples slowly.
    memory = {"type": "object", "properties": {
        "content": {"type": "string"},
        "type": {"enum": list(memory_types.names())},
        "subject": {"type": "string"},
        "turns": {"type": "array", "items": {"type": "integer"}}},
        "required": ["content", "type", "subject", "turns"]}
    return {"type": "object", "properties": {
        "memories": {"type": "array", "items": memory, "maxItems": limit}},
        "required": ["memories"]}


def messages_for(chunk: Chunk, limit: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{chunk.transcript()}\n\nAt most {limit} memories. "
                                        "JSON:"}]


def extract(chunk: Chunk, spec: MinerSpec, llm: LLMConfig | None = None) -> Extraction:
    """The chunk's candidate memories by ``spec``'s extractor (see the module doc)."""
    started = time.monotonic()
    if not spec.uses_model:
        return Extraction(heuristic_candidates(chunk), HEURISTIC, extracted_by=worker_id(),
                          elapsed_ms=int((time.monotonic() - started) * 1000))
    if not any(t.source for t in chunk.turns):
        return Extraction([], backend_for(spec, llm).model, extracted_by=worker_id())
    backend = backend_for(spec, llm)
    limit = wanted(chunk)
    messages = messages_for(chunk, limit)
    result = Extraction([], backend.model, extracted_by=worker_id())
    error = reply_text = ""
    for attempt in range(2):
        reply = backend.chat(messages, stream=False, temperature=0,
                             max_tokens=TOKENS_PER_MEMORY * limit + 40,
                             json_schema=schema(limit) if spec.constrained else None)
        result.calls += 1
        result.prompt_tokens += reply.stats.prompt_tokens or 0
        result.reply_tokens += reply.stats.reply_tokens or 0
        if reply.stats.tokens_per_sec and reply.stats.reply_tokens:
            result.write_ms += int(reply.stats.reply_tokens / reply.stats.tokens_per_sec * 1000)
        reply_text = reply.text
        try:
            items = memory_items(loads_lenient(reply.text))
        except LenientJSONError as exc:
            error = str(exc)
        else:
            result.candidates = asked_notes(chunk) + [
                c for c in (to_candidate(i, chunk) for i in items) if c is not None]
            result.elapsed_ms = int((time.monotonic() - started) * 1000)
            return result
        if attempt == 0:
            messages = messages + [
                {"role": "assistant", "content": reply.text[:REPLY_EXCERPT]},
                {"role": "user", "content": f"That answer could not be used: {error}. Reply "
                                            'with only the JSON object {"memories": [...]}.'}]
    result.failure, result.failed_reply = error, reply_text[:REPLY_EXCERPT]
    result.candidates, result.fallback = heuristic_candidates(chunk), f"{HEURISTIC}: {error}"
    result.elapsed_ms = int((time.monotonic() - started) * 1000)
    return result


def memory_items(value: Any) -> list[Any]:
    """The list of memories in a decoded answer; LenientJSONError when there is none."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("memories", "memory", "facts", "items", "results"):
            if isinstance(value.get(key), list):
                return list(value[key])
        if "content" in value:
            return [value]
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    raise LenientJSONError('no list of memories in the answer (expected {"memories": [...]})')


def _type(value: Any) -> str:
    text = str(value or "").strip().lower().replace(" ", "_").replace("-", "_")
    if memory_types.by_name(text):
        return text
    for word, mapped in _TYPE_SYNONYMS.items():
        if word in text:
            return mapped
    return DEFAULT.name


def _checked_type(value: Any, content: str) -> str:
    """The model's type, except a profile that is not an identity fact (see the module
    doc)."""
    type_ = _type(value)
    if type_ == PROFILE.name and not _IDENTITY.search(content.casefold()):
        found = type_of(content)
        return found if found and found != PROFILE.name else DEFAULT.name
    return type_


_IDENTITY = re.compile(r"\b(?:name is|goes by|lives?|living|moved|home|works?|working|job"
                       r"|employ\w*|role|engineer|developer|teacher|nurse|doctor|student"
                       r"|manager|designer|profession\w*)\b")


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return DEFAULT_CONFIDENCE
    if number > 10:  # a percentage
        number /= 100
    return round(max(MIN_CONFIDENCE, min(1.0, number)), 3)


def _cited(value: Any, chunk: Chunk, content: str) -> list[Turn]:
    numbers = value if isinstance(value, list) else [value]
    cited: list[Turn] = []
    for number in numbers:
        try:
            n = int(str(number).strip("[] "))
        except ValueError:
            continue
        if 1 <= n <= len(chunk.turns) and chunk.turns[n - 1].source \
                and chunk.turns[n - 1] not in cited:
            cited.append(chunk.turns[n - 1])
    if cited:
        return cited
    words = {stem(w) for w in content_words(content)}
    scored = [(len(words & {stem(w) for w in content_words(f"{t.speaker} {t.text}")}), -t.n, t)
              for t in chunk.turns if t.source]
    best = max(scored, default=None, key=lambda s: (s[0], s[1]))
    return [best[2]] if best and best[0] else []


def to_candidate(item: Any, chunk: Chunk) -> Candidate | None:
    """One memory of a model's answer, checked (see the module doc); None to drop it."""
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, dict):
        return None
    content = " ".join(str(item.get("content") or item.get("text") or item.get("fact")
                           or "").split())[:300]
    if len(content_words(content)) < 2 or content.endswith("?"):
        return None
    cited = _cited(item.get("turns", item.get("turn", [])), chunk, content)
    if not cited or not grounded(content, " ".join(f"{t.speaker}: {t.text}" for t in cited)):
        return None
    speaker = cited[0].speaker
    content = resolve(third_person(content, speaker), from_iso(cited[0].at))
    kind = str(item.get("kind") or "").strip().lower()
    subject = normal_subject(str(item.get("subject") or ""), speaker) \
        or subject_key(content, speaker)
    raw_tags = item.get("tags")
    tags = ([str(t)[:30] for t in raw_tags][:5] if isinstance(raw_tags, list) and raw_tags
            else tags_of(content, speaker))
    return Candidate(_checked_type(item.get("type"), content), content,
                     kind if kind in KINDS else kind_of(content),
                     str(item.get("action") or "")[:200], _confidence(item.get("confidence")),
                     tags, subject, [t.n for t in cited])


MINING_URL_ENV = "DIARIST_MINING_BASE_URL"


def miner_spec(config: Config, *, backend: str | None = None, model: str | None = None,
               base_url: str | None = None, script: str | None = None,
               heuristic: bool = False) -> MinerSpec:
    """Which extractor mining and consolidation use: a model when one is configured (the
    flag, else ``llm.backend``), else the heuristic extractor. The model is the flag, else
    ``llm.mining_model``, else ``llm.model``; the server the flag, else
    ``$DIARIST_MINING_BASE_URL``, else ``llm.mining_base_url``, else the chat's; the schema
    is sent when ``mining.json_schema`` says so."""
    from events.settings import setting

    llm = config.llm
    name = setting(backend, None, llm.backend)
    if heuristic or name is None:
        return MinerSpec()
    return MinerSpec(name, setting(model, None, llm.mining_model, llm.model),
                     setting(base_url, MINING_URL_ENV, llm.mining_base_url), script,
                     constrained=config.mining.json_schema)
