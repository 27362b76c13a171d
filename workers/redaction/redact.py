"""``diarist redact EVENT_ID|REF [--pattern P [--regex]]``: the one audited change of history.

A secret pasted by mistake stays readable in the log (``events show``, ``export``, the file
itself) although no projection shows it. Redaction rewrites the payload that holds it:

- **What is masked.** Without ``--pattern``: whatever the scrubber
  (:func:`projections.secrets.find`) finds in the named event's payload; nothing found is an
  error that changes nothing (name what to mask with ``--pattern``). With ``--pattern P``:
  every match of P, read as a **literal** (a pasted secret is full of ``+ . / =``), or as a
  Python regular expression with ``--regex``. Each span becomes ``[redacted]``.
- **Where.** Every string of the named event's payload, and — because an assistant that
  echoed the key, a summary or a tool call may repeat it — every other event whose payload
  holds one of the masked values (6 characters or more, matched as a whole word where it
  starts or ends with a letter or digit; a shorter value is masked in the named event only:
  it would mask unrelated text elsewhere).
- **How.** One transaction rewrites the payloads through the append-only guard's one
  sanctioned exception (:meth:`events.EventLog.rewrite_payloads`) and appends ``Redacted``:
  which events and fields, how (scrubber, pattern or regex), the kinds the scrubber named,
  how many spans — never the masked text nor the pattern, which may be the secret itself.
  A crash before the commit changes nothing; after it, running the same command again
  finds nothing left to mask and finishes the clean-up.
- **Then** (:mod:`.compact`): every projection rebuilt, the queue scrubbed, each database
  vacuumed and its WAL truncated, and every file under the home checked for the values.
- **Idempotent.** Run again, it finds nothing to mask, appends nothing and says so.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from events import DiaristError, EventLog, Home, RecordedEvent, streams
from events.log import NewEvent
from events.types import Payload, Redacted
from projections.secrets import REDACTED, find, mask

from ..queue_port import QueuePort
from .compact import Compaction, compact

PROPAGATE_MIN = 6  # shorter values are masked in the named event only


@dataclass
class RedactReport:
    event: RecordedEvent                  # the event named
    how: str                              # scrubber, pattern or regex
    kinds: list[str]                      # what the scrubber found (empty for a pattern)
    masked: int                           # spans masked
    events: list[dict[str, Any]]          # every event rewritten: id, seq, type, fields
    dry_run: bool = False
    redacted: RecordedEvent | None = None  # the Redacted event appended (None: nothing new)
    previously: list[str] = field(default_factory=list)  # when the event was redacted before
    compaction: Compaction | None = None


@dataclass
class _Plan:
    payloads: dict[int, Payload]
    events: list[dict[str, Any]]
    kinds: list[str]
    values: list[str]
    masked: int


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, text) of every string in a JSON value: ``text``, ``memories[0].content``."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from _strings(value[key], f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def _rewrite(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {k: _rewrite(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, change) for v in value]
    return value


def _matcher(pattern: str, regex: bool) -> re.Pattern[str]:
    if not pattern:
        raise DiaristError("--pattern is empty", hint="Give the text to mask, e.g. "
                                                        "--pattern 'sk-proj-…'.")
    try:
        compiled = re.compile(pattern if regex else re.escape(pattern))
    except re.error as exc:
        raise DiaristError(f"--pattern is not a valid regular expression: {exc}",
                           hint="Leave out --regex to match the text literally.") from None
    return compiled


def _whole(values: list[str]) -> re.Pattern[str] | None:
    """One pattern for every value long enough to look for elsewhere, as a whole word."""
    parts = []
    for value in sorted({v for v in values if len(v) >= PROPAGATE_MIN}, key=len, reverse=True):
        left = r"(?<![A-Za-z0-9])" if value[0].isalnum() else ""
        right = r"(?![A-Za-z0-9])" if value[-1].isalnum() else ""
        parts.append(left + re.escape(value) + right)
    return re.compile("|".join(parts)) if parts else None


def _plan(log: EventLog, event: RecordedEvent, matcher: re.Pattern[str] | None) -> _Plan:
    payload = log.stored_payload(event.seq)
    kinds: list[str] = []
    values: list[str] = []
    for _path, text in _strings(payload):
        if matcher is None:
            for f in find(text):
                kinds.append(f.kind)
                values.append(text[f.start:f.end])
        else:
            values.extend(m.group(0) for m in matcher.finditer(text) if m.group(0))
    plan = _Plan({}, [], sorted(set(kinds)), sorted(set(values)), 0)
    if not values:
        return plan
    whole = _whole(values)

    def masked_in_named(text: str) -> str:
        if matcher is None:
            text = mask(text, find(text), REDACTED)
        else:
            text = matcher.sub(lambda m: REDACTED if m.group(0) else m.group(0), text)
        return whole.sub(REDACTED, text) if whole else text

    plan.masked += _add(plan, event.seq, event, payload, masked_in_named)
    if whole is None:
        return plan
    found_whole = whole
    others = [v for v in values if len(v) >= PROPAGATE_MIN]
    from .compact import needles

    for seq, stored in log.stored_payloads([n.decode() for n in needles(others)]):
        if seq == event.seq:
            continue
        other = log.get(seq)
        if other.type == Redacted.type_name():
            continue
        plan.masked += _add(plan, seq, other, stored,
                            lambda text: found_whole.sub(REDACTED, text))
    return plan


def _add(plan: _Plan, seq: int, event: RecordedEvent, stored: Payload,
         change: Callable[[str], str]) -> int:
    """Rewrite one stored payload into the plan; returns how many spans it masked."""
    before = dict(_strings(stored))
    after_payload = _rewrite(stored, change)
    after = dict(_strings(after_payload))
    fields = sorted(p for p in before if before[p] != after[p])
    if not fields:
        return 0
    plan.payloads[seq] = after_payload
    plan.events.append({"id": event.id, "seq": seq, "type": event.type, "fields": fields})
    return sum(after[p].count(REDACTED) - before[p].count(REDACTED) for p in fields)


def _redacted_before(log: EventLog, event_id: str) -> list[str]:
    return [r.recorded_at for r in log.read(types=[Redacted])
            if any(e.get("id") == event_id for e in r.payload.get("events") or ())
            or r.payload.get("event_id") == event_id]


def redact(home: Home, key: str, *, queue: QueuePort, pattern: str | None = None,
           regex: bool = False, reason: str = "", dry_run: bool = False) -> RedactReport:
    """Redact the event ``key`` names (seq, id or ref); see the module doc. ``queue``'s
    entries holding a masked value are removed too."""
    matcher = _matcher(pattern, regex) if pattern is not None else None
    how = "scrubber" if pattern is None else "regex" if regex else "pattern"
    with EventLog(home.events_db) as log:
        event = log.get(key)
        plan = _plan(log, event, matcher)
        report = RedactReport(event, how, plan.kinds, plan.masked, plan.events, dry_run)
        if not plan.payloads:
            report.previously = _redacted_before(log, event.id)
            if not report.previously:
                what = ("the scrubber finds no secret in" if matcher is None
                        else "the pattern matches nothing in")
                raise DiaristError(
                    f"{what} event {event.seq} ({event.type} {event.id}); nothing changed",
                    hint="Name what to mask with --pattern TEXT (add --regex for a regular "
                         "expression); `diarist events show " + str(event.seq)
                         + "` shows the event.")
        if dry_run:
            return report
        if plan.payloads:
            named = [e["fields"] for e in plan.events if e["id"] == event.id]
            record = Redacted(event_id=event.id, fields=named[0] if named else [], reason=reason,
                              events=plan.events, how=how, kinds=plan.kinds,
                              masked=plan.masked)
            report.redacted = log.rewrite_payloads(
                plan.payloads, NewEvent(stream=streams.LOG, data=record))
    report.compaction = compact(home, plan.values, queue=queue)
    return report
