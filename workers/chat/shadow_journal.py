"""The shadow journal: net-new facts from a chat exchange, recorded as ``FactsExtracted``.

After a real turn, a separate (non-streamed, ``temperature=0``) call asks the same model for
facts worth keeping from *that exchange only*: the user's text and the reply. The system
prompt and the injected memory block are never part of the extraction prompt, so what memory
told the model is never mined back as if the user had said it. Today's journal lines are
given as "already known", and whatever the model repeats anyway is dropped here. Nothing new
appends nothing. The journal projection turns the event into lines; a retried task appends
once (idempotency key ``facts:<assistant event id>``).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from events import EventLog, Home, RecordedEvent, streams
from events.clock import from_iso
from events.config import load_config
from events.logger import get_logger
from events.types import FactsExtracted
from projections import ProjectionStore, open_store
from projections.journal import entries_for
from projections.secrets import scrub

from ..llm import Backend, make_backend
from ..llm.lenient_json import decode_lenient

EXTRACT_PROMPT = ("Reply with only a JSON list of short strings: new facts about the user or "
                  "their work worth remembering from the last exchange; [] if nothing new. "
                  "Do not repeat facts already in the journal.")
EXTRACT_MAX_TOKENS = 128
MAX_FACTS = 5
MAX_FACT_CHARS = 200
MIN_FACT_CHARS = 4
MAX_KNOWN_LINES = 40  # today's journal lines shown as "already known" (the newest)

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$")
_NOTHING = re.compile(r"(?i)^\W*(?:none|nothing( new)?|no new facts?|n/?a|\[\s*\])\W*$")


def _norm(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".")


def _strings(value: Any) -> list[str] | None:
    """The facts in a decoded JSON value, or None when it has no recognisable shape."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict):
                text = item.get("fact") or item.get("text") or item.get("content")
                if isinstance(text, str):
                    out.append(text)
        return out
    if isinstance(value, dict):
        for key in ("facts", "new_facts", "items", "result"):
            if isinstance(value.get(key), list):
                return _strings(value[key])
        for item in value.values():
            if isinstance(item, list):
                return _strings(item)
    return None


def parse_facts(reply: str) -> list[str]:
    """Facts from a model's reply, leniently: a JSON list (of strings, or of objects with a
    ``fact``/``text`` key), an object holding a list, a fenced ``json`` block, or bullet lines;
    anything else is no facts."""
    text = reply.strip()
    if not text or _NOTHING.match(text):
        return []
    found = _strings(decode_lenient(text))
    if found is not None:
        return found
    bullets = [m.group(1) for m in map(_BULLET.match, text.splitlines()) if m]
    return [b.strip("\"'") for b in bullets if not _NOTHING.match(b)]


def clean_facts(facts: list[str], journal_lines: list[str]) -> list[str]:
    """Drop empty, very short, duplicate and already-journalled facts; cap count and length."""
    seen = {_norm(line) for line in journal_lines}
    out: list[str] = []
    for fact in facts:
        fact = " ".join(scrub(str(fact)).split())  # the log gets no secret a model repeated
        if len(fact) > MAX_FACT_CHARS:
            fact = fact[:MAX_FACT_CHARS - 1].rstrip() + "…"
        key = _norm(fact)
        if len(key) < MIN_FACT_CHARS or key in seen or _NOTHING.match(fact):
            continue
        seen.add(key)
        out.append(fact)
        if len(out) == MAX_FACTS:
            break
    return out


def extraction_messages(user_turn: RecordedEvent, assistant_turn: RecordedEvent,
                        journal_lines: list[str]) -> list[dict]:
    """The extraction prompt: the instruction, today's journal, and the two turns' texts only
    (secrets masked: like mining, this prompt is built for memory)."""
    known = journal_lines[-MAX_KNOWN_LINES:]
    journal = "\n".join(f"- {line}" for line in known) if known else "(empty)"
    exchange = (f"Already in today's journal:\n{journal}\n\n"
                f"Last exchange:\nuser: {scrub(str(user_turn.payload.get('text', '')))}\n"
                f"assistant: {scrub(str(assistant_turn.payload.get('text', '')))}\n\n"
                "New facts (JSON list):")
    return [{"role": "system", "content": EXTRACT_PROMPT}, {"role": "user", "content": exchange}]


def extract_facts(backend: Backend, user_turn: RecordedEvent, assistant_turn: RecordedEvent,
                  journal_lines: list[str]) -> list[str]:
    reply = backend.chat(extraction_messages(user_turn, assistant_turn, journal_lines),
                         stream=False, max_tokens=EXTRACT_MAX_TOKENS, temperature=0)
    if reply.interrupted:  # Ctrl-C during the extraction: a partial answer is no answer
        return []
    return clean_facts(parse_facts(reply.text), journal_lines)


def idempotency_key(assistant_event_id: str) -> str:
    return f"facts:{assistant_event_id}"


def shadow_journal(home: Home, log: EventLog, session_id: str, user_event_id: str,
                   assistant_event_id: str, backend: Backend, *,
                   store: ProjectionStore | None = None) -> RecordedEvent | None:
    """Extract and record the net-new facts of one exchange; None when there is nothing new
    (or this exchange was already handled)."""
    key = idempotency_key(assistant_event_id)
    if log._by_idempotency_key(key) is not None:  # a retried task: do not ask the model again
        return None
    user, assistant = log.get(user_event_id), log.get(assistant_event_id)
    if user.payload.get("session") != session_id or assistant.payload.get("session") != session_id:
        raise ValueError(f"turns {user_event_id}/{assistant_event_id} are not in {session_id}")
    date = user.occurred_at[:10]
    if store is None:
        with open_store(home, log) as own:
            own.catch_up("journal")
            entries = entries_for(own.db, date)
    else:
        store.catch_up("journal")
        entries = entries_for(store.db, date)
    known = [content for _id, _at, _src, content in entries]
    facts = extract_facts(backend, user, assistant, known)
    if not facts:
        return None
    return log.append(
        FactsExtracted(from_events=[user.id, assistant.id], facts=facts, model=backend.model,
                       refs=[user.ref or user.id, assistant.ref or assistant.id]),
        stream=streams.MEMORY, occurred_at=from_iso(user.occurred_at),
        causation_id=assistant.id, idempotency_key=key)


def journal_exchange(home: Home, session_id: str, user_event_id: str, assistant_event_id: str,
                     *, backend_name: str, model: str, base_url: str | None = None,
                     script: str | None = None) -> RecordedEvent | None:
    """:func:`shadow_journal` for a worker: the backend is rebuilt from its name, model,
    server URL and (scripted backend) rules file; an API key comes from the worker's own
    environment and config, never through the queue. Logs what it appended."""
    backend = make_backend(backend_name, model=model, base_url=base_url,
                           script=Path(script) if script else None, llm=load_config(home).llm)
    with EventLog(home.events_db) as log:
        event = shadow_journal(home, log, session_id, user_event_id, assistant_event_id, backend)
    logger = get_logger("diarist.worker")
    if event is None:
        logger.info("shadow_journal.nothing_new", session=session_id, turn=assistant_event_id)
    else:
        logger.info("shadow_journal.appended", session=session_id, turn=assistant_event_id,
                    event_id=event.id, facts=len(event.data_as(FactsExtracted).facts),
                    pid=os.getpid())
    return event
