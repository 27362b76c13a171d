"""What mining reads: the turns of a session not mined yet, cleaned and cut into chunks.

- **Only turns.** A chunk holds ``UserTurn`` / ``AssistantTurn`` texts and nothing else: the
  system prompt, the injected memory block (``MemoryInjected``), tool results
  (``ToolCalled``) and rolling summaries (``HistoryCompressed``) are other events and never
  reach an extraction prompt. A turn that *contains* an injected block (a user pasting one
  back) has it cut out; every text goes through :func:`projections.secrets.scrub` first.
- **Who may be a source.** In a diarist chat the assistant is the model: its turns are
  context (they may repeat injected memory), never a source of facts. In an imported
  transcript an ``assistant`` turn is a person's only when it carries a person's name
  (LoCoMo's second speaker, "Melanie"); one under a model's name
  (:data:`projections.speakers.GENERIC_SPEAKERS`: "assistant", "AI", "Bot", …, the names
  recall counts as a model's) is context like the chat's.
- **Chunks** cover consecutive turns of one session and one UTC day (a chunk's memories
  are journaled on that day), at most ``chunk_tokens`` (estimated) and :data:`MAX_TURNS`
  turns. Planning is greedy from the first turn not mined yet, so a rerun after a crash cuts
  the same chunks, and the chunk's identity is its session and the log positions of its
  first and last turn.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from events import EventLog, clock
from events.transcript import IMPORT_BACKEND
from events.types import TURNS, UserTurn
from projections import block_headers
from projections.mining import SessionState
from projections.secrets import scrub
from projections.speakers import GENERIC_SPEAKERS as MODEL_NAMES
from projections.tokens import estimate

from .text import GENERIC_SPEAKERS, normal

# the names under which an imported turn is no person's: unnamed, or a model's
NOT_A_PERSON = GENERIC_SPEAKERS | MODEL_NAMES
MAX_TURNS = 48          # turns per chunk at most, whatever their length
MIN_CHUNK_TOKENS = 128
_SUMMARY_PREFIX = "[Session history compressed"


@dataclass(frozen=True)
class Turn:
    n: int            # 1-based line number in its chunk
    seq: int
    event_id: str
    ref: str          # the turn's transcript ref, or its event id
    role: str         # user | assistant
    speaker: str
    text: str         # scrubbed, injected blocks cut out
    at: str
    source: bool      # may facts be mined from it (else context only)

    def line(self) -> str:
        mark = "" if self.source else " (context)"
        return f"[{self.n}] {self.speaker}{mark}: {self.text}"


@dataclass(frozen=True)
class Chunk:
    session: str
    turns: list[Turn] = field(default_factory=list)

    @property
    def first_seq(self) -> int:
        return self.turns[0].seq

    @property
    def last_seq(self) -> int:
        return self.turns[-1].seq

    @property
    def at(self) -> str:
        return self.turns[-1].at

    @property
    def key(self) -> str:
        return f"{self.session}:{self.first_seq}-{self.last_seq}"

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "turns": [asdict(t) for t in self.turns]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        return cls(str(data["session"]), [Turn(**t) for t in data["turns"]])

    def transcript(self) -> str:
        return "\n".join(t.line() for t in self.turns)


def strip_injected(text: str) -> str:
    """``text`` without an injected memory block or a rolling summary pasted into it."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        bare = line.strip()
        if bare.startswith(block_headers.ALL) or bare.startswith(_SUMMARY_PREFIX):
            inside = True
            continue
        if inside and (bare.startswith("- ") or line.startswith("  ") or not bare):
            continue
        inside = False
        out.append(line)
    return "\n".join(out).strip()


def session_turns(log: EventLog, state: SessionState, person: str = "") -> list[Turn]:
    """The session's turns after ``mined_upto``, cleaned; numbered later, per chunk. A user
    turn under no name of a person's ("user": diarist's chat and proxy record them so) is
    ``person``'s, when the log names the person (:func:`projections.speakers.person_name`):
    its facts are then theirs, not "the user's" beside them (:func:`speaker`)."""
    chat = state.backend != IMPORT_BACKEND
    out: list[Turn] = []
    for event in log.read(state.mined_upto, stream=state.session, types=TURNS):
        turn = event.data
        if not isinstance(turn, TURNS):
            continue  # never: the read is of turns only
        role = "user" if isinstance(turn, UserTurn) else "assistant"
        text = " ".join(strip_injected(scrub(turn.text)).split())
        who = speaker(role, turn.name, person)
        out.append(Turn(0, event.seq, event.id, event.ref or event.id, role, who, text,
                        event.occurred_at,
                        source=bool(text) and is_source(role, who, imported=not chat)))
    return out


def speaker(role: str, name: str, person: str = "") -> str:
    """A turn's speaker as mining names it: its name, else its role; a user turn under no
    person's name ("user") is ``person``'s, when the log names the person
    (:func:`projections.speakers.person_name`; "" when it does not)."""
    if person and role == "user" and normal(name or role) in GENERIC_SPEAKERS:
        return person
    return name or role


def is_source(role: str, speaker: str, *, imported: bool) -> bool:
    """Whether a turn's speaker may be a source of facts (see the module doc): a user, or
    in an imported transcript a speaker with a person's name, not a model's."""
    return role == "user" or (imported and normal(speaker) not in NOT_A_PERSON)


def _cap(text: str, tokens: int) -> str:
    """A turn longer than half a chunk is cut (a pasted log says little per token)."""
    if estimate(text) <= tokens:
        return text
    return text[:int(tokens * 3.0)].rsplit(" ", 1)[0] + " …"


def cut_chunks(session: str, turns: Iterable[Turn], chunk_tokens: int) -> list[Chunk]:
    """Greedy chunks of consecutive turns: one UTC day each, within the token budget."""
    budget = max(chunk_tokens, MIN_CHUNK_TOKENS)
    chunks: list[Chunk] = []
    current: list[Turn] = []
    used = 0
    for turn in turns:
        text = _cap(turn.text, budget // 2)
        cost = estimate(f"[{MAX_TURNS}] {turn.speaker} (context): {text}") + 1
        if current and (used + cost > budget or len(current) >= MAX_TURNS
                        or current[-1].at[:10] != turn.at[:10]):
            chunks.append(Chunk(session, current))
            current, used = [], 0
        current.append(Turn(len(current) + 1, turn.seq, turn.event_id, turn.ref, turn.role,
                            turn.speaker, text, turn.at, turn.source))
        used += cost
    if current:
        chunks.append(Chunk(session, current))
    return chunks


def ready(state: SessionState, now: dt.datetime, idle_hours: float) -> bool:
    """A session is mined once it ended, or after ``idle_hours`` without a turn (a chat that
    was killed never says it ended)."""
    if state.ended:
        return True
    if not state.last_turn_at:
        return False
    return now - clock.from_iso(state.last_turn_at) >= dt.timedelta(hours=idle_hours)
