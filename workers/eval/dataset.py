"""Evaluation data: conversations (transcripts for `diarist import`) with questions whose
answers are known, and the directory layout that holds them.

A dataset is a list of :class:`Conversation`; each has its turns in the transcript format of
``diarist import`` and its :class:`Question` list. A question names the refs of the turns that
hold its answer (``evidence``) and, where the answer changed over time, the refs of the older
statements it replaced (``stale``). :func:`workers.eval.load.load_dataset` reads any of the
supported inputs:

- a directory in the layout of ``../shared/bench/locomo``: ``<conv>.transcript.jsonl`` (one
  turn a line) beside ``<conv>.questions.jsonl`` (one question a line: ``id``, ``query``,
  ``answer``, ``category``, ``evidence``; optional ``stale`` and ``at``);
- LoCoMo's ``locomo10.json`` as published (:mod:`.locomo`);
- LongMemEval's ``longmemeval_s`` / ``_m`` / ``_oracle`` JSON as published (:mod:`.longmemeval`).
"""
from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from events import DiaristError
from events.clock import from_iso
from events.jsonl import jsonl_lines
from events.problems import Problems
from events.transcript import parse as parse_transcript

TRANSCRIPT_SUFFIX = ".transcript.jsonl"
QUESTIONS_SUFFIX = ".questions.jsonl"
QUESTION_FIELDS = ("id", "query", "answer", "category", "evidence", "stale", "at",
                   "answerable", "evidence_sessions")


class DatasetError(DiaristError):
    hint = ("Point `diarist eval` at a folder of <conv>.transcript.jsonl + "
            "<conv>.questions.jsonl files, LoCoMo's locomo10.json or a LongMemEval JSON file.")


@dataclass(frozen=True)
class Question:
    id: str
    query: str
    answer: str
    category: str
    evidence: tuple[str, ...] = ()      # refs of the turns that hold the answer
    stale: tuple[str, ...] = ()         # refs of older statements the answer replaced
    answerable: bool = True             # False: the answer was never said (adversarial, _abs)
    evidence_sessions: tuple[str, ...] = ()  # sessions that hold the answer (when no turn does)
    at: str | None = None               # when the question is asked (ISO-8601), if known

    @property
    def asked(self) -> dt.datetime | None:
        """When the question is asked, if the dataset says: recall, the model's "today"
        and each line's age are read from it, as the chat reads them from its clock."""
        return from_iso(self.at) if self.at else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "query": self.query, "answer": self.answer,
                               "category": self.category, "evidence": list(self.evidence)}
        if self.stale:
            out["stale"] = list(self.stale)
        if not self.answerable:
            out["answerable"] = False
        if self.evidence_sessions:
            out["evidence_sessions"] = list(self.evidence_sessions)
        if self.at:
            out["at"] = self.at
        return out


@dataclass(frozen=True)
class Conversation:
    """One home's worth: the turns to import and the questions asked about them."""

    id: str
    turns: Sequence[dict[str, str]]      # a tuple, or read from the file when used (LongMemEval)
    questions: tuple[Question, ...]
    session_of: Mapping[str, str] = field(default_factory=dict, compare=False)  # ref → session

    def __post_init__(self) -> None:
        if isinstance(self.session_of, dict) and not self.session_of:
            self.session_of.update({t["ref"]: t["session"] for t in self.turns})

    def transcript_lines(self) -> list[str]:
        return [json.dumps(t, ensure_ascii=False) + "\n" for t in self.turns]

    def sessions_of(self, question: Question) -> set[str]:
        """The sessions that hold ``question``'s answer."""
        found = {self.session_of[r] for r in question.evidence if r in self.session_of}
        return found | set(question.evidence_sessions)


@dataclass(frozen=True)
class Dataset:
    name: str
    format: str                          # "layout", "locomo10" or "longmemeval"
    conversations: tuple[Conversation, ...]
    notes: tuple[str, ...] = ()          # what the loader dropped or fixed, for the report

    @property
    def questions(self) -> list[tuple[Conversation, Question]]:
        return [(c, q) for c in self.conversations for q in c.questions]


def turn(session: str, at: str, role: str, name: str, text: str, ref: str) -> dict[str, str]:
    """One transcript line (the fields and order of ``diarist import``)."""
    return {"session": session, "at": at, "role": role, "name": name, "text": text, "ref": ref}


def safe_file_stem(name: str) -> str:
    """A conversation id as a file name: path separators and odd characters become ``_``."""
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or "conversation"


# --- loading --------------------------------------------------------------------------------

def load_layout(directory: Path) -> Dataset:
    """A folder of ``<conv>.transcript.jsonl`` + ``<conv>.questions.jsonl`` pairs."""
    transcripts = sorted(directory.glob(f"*{TRANSCRIPT_SUFFIX}"))
    if not transcripts:
        raise DatasetError(f"{directory}: no *{TRANSCRIPT_SUFFIX} files")
    conversations = []
    for transcript in transcripts:
        conv = transcript.name[:-len(TRANSCRIPT_SUFFIX)]
        questions_file = directory / f"{conv}{QUESTIONS_SUFFIX}"
        if not questions_file.is_file():
            raise DatasetError(f"{questions_file}: missing (every transcript needs its questions)")
        turns = _read_transcript(transcript)
        refs = {t["ref"] for t in turns}
        questions = _read_questions(questions_file, refs)
        conversations.append(Conversation(conv, tuple(turns), tuple(questions)))
    return Dataset(directory.name, "layout", tuple(conversations))


def _read_transcript(path: Path) -> list[dict[str, str]]:
    try:
        with path.open("rb") as handle:
            parsed = parse_transcript(handle, str(path))
    except DiaristError as exc:
        raise DatasetError(str(exc)) from None
    lines = path.read_bytes().split(b"\n")  # the reader's lines: "\n" ends one, nothing else
    return [json.loads(lines[t.line - 1]) for t in parsed]


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _question_error(obj: Any, refs: set[str]) -> str | None:
    if not isinstance(obj, dict):
        return "expected a JSON object"
    missing = [k for k in ("id", "query", "answer", "category", "evidence") if k not in obj]
    if missing:
        return f"missing field {', '.join(repr(k) for k in missing)}"
    unknown = sorted(set(obj) - set(QUESTION_FIELDS))
    if unknown:
        return (f"unknown field {', '.join(repr(k) for k in unknown)} "
                f"(allowed: {', '.join(QUESTION_FIELDS)})")
    for key in ("id", "query", "category"):
        if not isinstance(obj[key], str) or not obj[key].strip():
            return f"field {key!r} must be a non-empty string"
    if not isinstance(obj["answer"], str | int | float):
        return "field 'answer' must be a string"
    for key in ("evidence", "stale", "evidence_sessions"):
        if key in obj and not _strings(obj[key]):
            return f"field {key!r} must be a list of refs (strings)"
    unknown_refs = [r for key in ("evidence", "stale") for r in obj.get(key, []) if r not in refs]
    if unknown_refs:
        return f"ref {unknown_refs[0]!r} is not in the transcript"
    if "answerable" in obj and not isinstance(obj["answerable"], bool):
        return "field 'answerable' must be true or false"
    return _time_error(obj.get("at"))


def _time_error(at: Any) -> str | None:
    """What is wrong with a question's ``at`` (read as when it is asked), if anything."""
    if at is None:
        return None
    try:
        from_iso(str(at))
    except ValueError:
        return f"field 'at' must be a time with an offset, such as 2023-05-08T14:00:00Z " \
               f"(got {at!r})"
    return None


def _read_questions(path: Path, refs: set[str]) -> list[Question]:
    out: list[Question] = []
    problems = Problems()
    ids: set[str] = set()
    for line in jsonl_lines(path, error=DatasetError):
        problem = line.error or _question_error(line.value, refs)
        if problem is None and line.value["id"] in ids:
            problem = f"duplicate id {line.value['id']!r}"
        if problem:
            problems.add(f"{path}:{line.number}: {problem}")
            continue
        obj = line.value
        ids.add(obj["id"])
        out.append(Question(
            obj["id"], obj["query"], str(obj["answer"]), obj["category"],
            tuple(obj["evidence"]), tuple(obj.get("stale", ())),
            obj.get("answerable", obj["category"] != "adversarial"),
            tuple(obj.get("evidence_sessions", ())), obj.get("at")))
    if problems:
        raise DatasetError(problems.render(), hint="Fix those lines; nothing was evaluated.")
    return out


# --- writing ----------------------------------------------------------------------------------

def write_layout(dataset: Dataset | Iterable[Conversation], directory: Path) -> list[Path]:
    """Write conversations in the folder layout (one transcript + one questions file each);
    returns the files written."""
    conversations: Sequence[Conversation] = (dataset.conversations if isinstance(dataset, Dataset)
                                             else list(dataset))
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for conv in conversations:
        stem = safe_file_stem(conv.id)
        transcript = directory / f"{stem}{TRANSCRIPT_SUFFIX}"
        transcript.write_text("".join(conv.transcript_lines()), encoding="utf-8")
        questions = directory / f"{stem}{QUESTIONS_SUFFIX}"
        questions.write_text("".join(json.dumps(q.to_json(), ensure_ascii=False) + "\n"
                                     for q in conv.questions), encoding="utf-8")
        written += [transcript, questions]
    return written
