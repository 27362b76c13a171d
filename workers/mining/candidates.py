"""A mined memory before it is checked against what memory already holds, and what an
extraction of one chunk returns (by whichever extractor, on whichever worker)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from projections.items import MEMORY_TYPES

KINDS = ("pattern", "pitfall", "workaround", "recommendation")
HEURISTIC = "heuristic"


@dataclass(frozen=True)
class Candidate:
    type: str
    content: str
    kind: str = "pattern"
    action: str = ""
    confidence: float = 0.7
    tags: list[str] = field(default_factory=list)
    subject: str = ""
    turns: list[int] = field(default_factory=list)   # line numbers in the chunk
    needs_attribute: bool = False   # kept only if it sets an attribute (.attributes)
    asked: bool = False   # the speaker asked to keep it (.requests): their own note

    def __post_init__(self) -> None:
        if self.type not in MEMORY_TYPES:
            raise ValueError(f"unknown memory type {self.type!r}")
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}")


@dataclass
class Extraction:
    """One chunk's extraction. ``failure``: why the model's answer was unusable (the
    candidates then come from the heuristic extractor, ``fallback`` says so)."""

    candidates: list[Candidate]
    model: str
    calls: int = 0
    failure: str = ""
    failed_reply: str = ""
    fallback: str = ""
    extracted_by: str = ""
    prompt_tokens: int = 0
    reply_tokens: int = 0
    elapsed_ms: int = 0
    write_ms: int = 0        # of elapsed_ms, writing the answer (reply tokens at the server's
                             # reported rate; the rest is reading the prompt and overhead)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Extraction:
        values = dict(data)
        values["candidates"] = [Candidate(**c) for c in data["candidates"]]
        return cls(**values)
