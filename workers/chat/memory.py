"""What a chat puts in the model's prompt from memory, within the budget, without ever
rewriting earlier prompt text.

- **The start block**, built when the session starts, before the first message: the
  workspace profile, project facts, MEMORY.md, and what was recalled for the previous
  session's last user turns (what a new session most likely picks up again). It ends the
  system prompt, which then stays the same for the whole session, so the model server reads
  it once — while the person types (:meth:`workers.llm.base.Backend.warm`) — and keeps it
  cached (llama.cpp's prompt cache, Ollama's loaded context). It takes at most
  :data:`START_SHARE` of the budget.
- **A note per message**: recall for the message itself; items not shown before in the
  session and scoring at least :data:`NOTE_MIN_SCORE` are attached to that user message as a
  short ``[memory note]`` — after the cached prefix, so the cache stays valid — within what
  the budget has left and what the context window has free once the prompt, the message
  and the reply are in (a long pasted message gets no note rather than an overflow). The
  memory in the prompt (the start block plus the notes of the messages still in the
  history) never exceeds ``budget_pct`` of the window; a compression that summarises old
  messages frees their notes' share.

Small models rarely call memory tools well; the notes bring what a message needs without
them. Each injection is recorded by the session as ``MemoryInjected``.
"""
from __future__ import annotations

from dataclasses import dataclass

from events import Home
from projections import ProjectionStore
from projections.inject import Injection, build_injection, build_note
from projections.semantic import semantic_searcher
from projections.turns import recent_user_text

START_SHARE = 0.5       # of the budget, at most, for the start block
NOTE_MIN_SCORE = 0.45   # a recalled item below this fused score is not worth a note
RECENT_TURNS = 3        # the previous session's last user turns recalled for at start


@dataclass(frozen=True)
class Note:
    """A memory note attached to one user message."""

    text: str
    tokens: int
    items: list[str]


class SessionMemory:
    """The start block and the notes of one session; which items it has shown."""

    def __init__(self, home: Home, store: ProjectionStore, budget: int, top_k: int,
                 session_id: str) -> None:
        self.home, self.store, self.budget, self.top_k = home, store, budget, top_k
        self.session_id = session_id
        self.start: Injection | None = None
        self.shown: set[str] = set()

    def build_start(self) -> Injection:
        """The start block: fixed head and recall for the previous session's last turns."""
        query = recent_user_text(self.store.db, turns=RECENT_TURNS, excluding=self.session_id)
        injection = build_injection(self.store.db, query, int(self.budget * START_SHARE),
                                    self.top_k, semantic_searcher(self.home, self.store))
        self.start = injection
        self.shown = {item.id for item in injection.items}
        return injection

    def note_for(self, text: str, in_prompt: int, window_room: int | None = None) -> Injection:
        """A note for a message, within what the budget has left (``in_prompt``: the memory
        tokens already in the prompt) and within ``window_room``, the tokens the context
        window has free once the prompt, the message and the reply are in. Empty when nothing
        new is relevant enough or there is no room."""
        room = self.budget - in_prompt
        if window_room is not None:
            room = min(room, window_room)
        injection = build_note(self.store.db, text, room, self.top_k,
                               semantic_searcher(self.home, self.store), exclude=self.shown,
                               min_score=NOTE_MIN_SCORE, session=self.session_id)
        self.shown |= {item.id for item in injection.items}
        return injection
