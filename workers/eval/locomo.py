"""LoCoMo's ``locomo10.json`` as published (snap-research/LoCoMo, ``data/locomo10.json``).

The file is a JSON list of samples. A sample has ``sample_id``, ``conversation`` —
``speaker_a``, ``speaker_b``, and for each session N ``session_N`` (a list of turns
``{"speaker", "dia_id": "D<N>:<i>", "text"}``, optionally ``img_url`` / ``blip_caption``)
with ``session_N_date_time`` ("1:56 pm on 8 May, 2023") — and ``qa``, a list of
``{"question", "answer", "evidence": ["D1:3", …], "category": 1-5}`` (category 5,
adversarial, carries ``adversarial_answer`` instead of ``answer``). Other keys (summaries,
observations) are not needed and are ignored.

Converted as ``../shared/bench/locomo`` was: one session ``<sample>/sNN`` per LoCoMo session,
speaker_a as ``user`` and speaker_b as ``assistant``, turn i of a session at the session's
time + 30 s × i (UTC), an image's caption appended in brackets, ref ``<sample>:<dia_id>``,
question ids ``<sample>:q<index in qa>``. Malformed evidence entries ("D8:6; D9:17",
"D30:05") are split and normalised; refs not in the conversation are dropped (and counted in
the dataset's notes).
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from .dataset import Conversation, Dataset, DatasetError, Question, turn

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
UNANSWERABLE = "adversarial"
TURN_SPACING = dt.timedelta(seconds=30)
_SESSION_KEY = re.compile(r"session_(\d+)$")
_DIA_ID = re.compile(r"D(\d+):(\d+)")


def looks_like(data: Any) -> bool:
    return (isinstance(data, list) and bool(data) and isinstance(data[0], dict)
            and "conversation" in data[0] and "qa" in data[0])


def parse_session_time(text: str) -> dt.datetime:
    """"1:56 pm on 8 May, 2023" → 2023-05-08T13:56Z."""
    cleaned = " ".join(text.replace(",", ", ").split())
    try:
        moment = dt.datetime.strptime(cleaned, "%I:%M %p on %d %B, %Y")
    except ValueError:
        raise DatasetError(f"LoCoMo session time {text!r} is not like '1:56 pm on 8 May, 2023'",
                           hint="Is this LoCoMo's locomo10.json, unchanged?") from None
    return moment.replace(tzinfo=dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    found = []
    for key, value in conversation.items():
        match = _SESSION_KEY.match(key)
        if match and isinstance(value, list) and value:
            found.append((int(match.group(1)), value))
    return sorted(found, key=lambda pair: pair[0])


def _turns(sample_id: str, conversation: dict[str, Any]) -> list[dict[str, str]]:
    speaker_a = conversation.get("speaker_a")
    out = []
    for number, dialogue in _sessions(conversation):
        when = conversation.get(f"session_{number}_date_time")
        if not isinstance(when, str):
            raise DatasetError(f"LoCoMo sample {sample_id}: session_{number} has no "
                               f"session_{number}_date_time")
        start = parse_session_time(when)
        for i, line in enumerate(dialogue):
            text = str(line.get("text", "")).strip()
            caption = line.get("blip_caption")
            if caption:
                text = f"{text} [{caption}]".strip()
            if not text:
                continue
            speaker = str(line.get("speaker", ""))
            out.append(turn(f"{sample_id}/s{number:02d}", _iso(start + i * TURN_SPACING),
                            "user" if speaker == speaker_a else "assistant", speaker, text,
                            f"{sample_id}:{_dia_id(str(line.get('dia_id', '')))}"))
    return out


def _dia_id(raw: str) -> str:
    match = _DIA_ID.search(raw)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else raw


def _evidence(sample_id: str, raw: Any, refs: set[str]) -> tuple[list[str], int]:
    """The refs named by a question's evidence list, and how many named no turn."""
    entries = raw if isinstance(raw, list) else [raw] if raw else []
    found: list[str] = []
    dropped = 0
    for entry in entries:
        for a, b in _DIA_ID.findall(str(entry)):
            ref = f"{sample_id}:D{int(a)}:{int(b)}"
            if ref not in refs:
                dropped += 1
            elif ref not in found:
                found.append(ref)
    return found, dropped


def load(data: list[dict[str, Any]], name: str) -> Dataset:
    conversations = []
    dropped = 0
    for number, sample in enumerate(data):
        sample_id = str(sample.get("sample_id") or f"sample-{number}")
        conversation = sample.get("conversation")
        if not isinstance(conversation, dict) or not isinstance(sample.get("qa"), list):
            raise DatasetError(f"LoCoMo sample {sample_id}: needs 'conversation' and 'qa'")
        turns = _turns(sample_id, conversation)
        refs = {t["ref"] for t in turns}
        questions = []
        for index, qa in enumerate(sample["qa"]):
            category = CATEGORIES.get(qa.get("category"), str(qa.get("category")))
            evidence, missing = _evidence(sample_id, qa.get("evidence"), refs)
            dropped += missing
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(Question(f"{sample_id}:q{index}", str(qa.get("question", "")),
                                      str(answer), category, tuple(evidence),
                                      answerable=category != UNANSWERABLE))
        conversations.append(Conversation(sample_id, tuple(turns), tuple(questions)))
    notes = (f"{dropped} evidence ref(s) named no turn of their conversation and were dropped",
             ) if dropped else ()
    return Dataset(name, "locomo10", tuple(conversations), notes)
