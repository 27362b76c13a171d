"""What a chat puts in the model's prompt from memory, within the budget, rewriting earlier
prompt text only to take out a note that gives way.

- **The start block**, built when the session starts, before the first message: the
  workspace profile, project facts, MEMORY.md, the newest notes someone asked to be
  remembered (at most :data:`NOTES_SHARE` of the block) and what was recalled for the
  previous session's last user turns — what a first question most likely needs. It ends the
  system prompt, so the model server reads it while the person types
  (:meth:`workers.llm.base.Backend.warm`) and keeps it cached (llama.cpp's prompt cache,
  Ollama's loaded context). It takes at most :func:`start_budget` (up to
  :data:`START_SHARE` of the budget at a small window) for the session's first message; the
  first later message whose note needs the room cuts it to :data:`KEPT_SHARE`
  (:meth:`SessionMemory.smaller_start`), once — the server reads the prompt again then —
  and from there it stays the same for the rest of the session.
- **A note per message**: recall for the message itself; items not shown before in the
  session and scoring at least :data:`NOTE_MIN_SCORE` are attached to that user message as a
  short ``[memory note]`` — after the cached prefix, so the cache stays valid — within what
  the budget has left and what the context window has free once the prompt, the message
  and the reply are in (a long pasted message gets no note rather than an overflow). The
  memory in the prompt (the start block plus the notes of the messages still in the
  history) never exceeds ``budget_pct`` of the window. When the notes already in the
  history leave a new message less than half of the notes' share (:func:`giving_way`), the
  oldest of them leave the prompt, their message kept, so that every question of a session
  can bring what it needs, not only the first; the server then reads the prompt again from
  the first message changed. A message with nothing new to recall takes no note out. A
  compression that summarises old messages frees their notes' share too. A note is read
  by the server after its message arrives, so the first message's note — which the first
  reply waits for — is capped (:func:`first_note_cap`): at most half of what the message
  itself makes the server read, so the first token comes within 1.5x of the time without
  memory. A short first message gets no note; what it most likely needs is in the start
  block, read ahead.

Small models rarely call memory tools well; the notes bring what a message needs without
them. Each injection is recorded by the session as ``MemoryInjected``.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from events import Home, clock
from events.memory_types import head, names
from projections import ProjectionStore
from projections.block_headers import NOTE_HEADER
from projections.inject import Injection, build_injection, build_note
from projections.items import MEMORY
from projections.memories import newest_memories
from projections.recall import MIN_ITEM_TOKENS, RecallItem
from projections.semantic import semantic_searcher
from projections.tokens import estimate
from projections.turns import recent_user_text

# Of the budget, at most, for the start block: its first message is answered from it (that
# message's own note is capped), later ones from their notes, which share the rest. Measured
# (docs/experiments.md, "A larger start block"): at a 2,048-token window 0.75 answers more
# first questions from MEMORY.md than 0.5, and later messages do as well as with 0.5 when
# the block is cut to KEPT_SHARE for them, not when it keeps 0.75 (their notes would have
# too little room). Beyond KEPT_SHARE only up to START_MAX tokens: the server reads the block
# while the person types (the 0.5B model read 382 tokens within 3 s; at an 8,192-token window
# half the budget, 985 tokens, already put its first token at 1.5x), and a larger window's
# half holds a night's MEMORY.md anyway.
START_SHARE = 0.75
KEPT_SHARE = 0.5
START_MAX = 384
NOTE_MIN_SCORE = 0.45   # a recalled item below this fused score is not worth a note
RECENT_TURNS = 3        # the previous session's last user turns recalled for at start
NOTES_SHARE = 0.25      # of the start block, at most, for the person's recent notes
NOTE_SOURCES = ("user", "agent")  # ``Remembered`` notes: `diarist remember`, /remember, the tool
HEAD_TYPES = names(head())  # in the start block's fixed head already
# The first message's note: every token of it is read by the server after the message
# arrives, as are the message's own tokens and the chat template's frame around them (the
# system prompt before it was read ahead). The first token within 1.5x of the time without
# memory leaves the note half of what the message costs. Measured with the 0.5B model
# (docs/benchmarks.md, "First token with memory"): a note of 8 real tokens after a
# 7-12-token question cost 1.14-1.31x, 16 tokens 1.58-1.93x.
FIRST_NOTE_SHARE = 0.5
MESSAGE_FRAME = 8       # tokens the chat template puts around a user message
REPLY_ROOM = 256        # window tokens a note leaves free for the reply when no cap is set
# The token estimate runs under the server's count of a whole prompt (the chat template adds
# tokens around every message; a 2,000-token prompt counted 4 % more by llama.cpp than by
# the estimate): a note is sized as if the estimate were this much short.
ESTIMATE_SLACK = 1.10


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
        self._smaller: Injection | None = None  # what smaller_start built, kept for the next

    def build_start(self) -> Injection:
        """The start block: fixed head, the person's most recent notes, and recall for the
        previous session's last turns, within :func:`start_budget`."""
        injection = self._start(start_budget(self.budget))
        self.start, self._smaller = injection, None
        self.shown = {item.id for item in injection.items}
        return injection

    def smaller_start(self, start: Injection | None) -> Injection | None:
        """The start block a later message's note cuts ``start`` to, built again within
        :data:`KEPT_SHARE` of the budget; None when ``start`` is within that already. Nothing
        changes until :meth:`note_for` is given it and finds a note; built once, so messages
        that find none do not recall for it again."""
        kept = int(self.budget * KEPT_SHARE)
        if start is None or start.injected_tokens <= kept:
            return None
        if self._smaller is None:
            self._smaller = self._start(kept)
        return self._smaller

    def _start(self, budget: int) -> Injection:
        query = recent_user_text(self.store.db, turns=RECENT_TURNS, excluding=self.session_id)
        return build_injection(self.store.db, query, budget, self.top_k,
                               semantic_searcher(self.home, self.store),
                               pinned=recent_notes(self.store, int(budget * NOTES_SHARE)),
                               today=clock.now().date())  # lines say how long ago

    def note_for(self, text: str, in_prompt: int, cap: int | None = None,
                 freed: Collection[str] = (), smaller: Injection | None = None) -> Injection:
        """A note for a message, within what the budget has left (``in_prompt``: the memory
        tokens already in the prompt) and at most ``cap`` tokens (the first message's cap,
        the room the context window has free). Empty when nothing new is relevant enough
        or there is no room. ``freed``: the items of the earlier notes that leave the
        prompt if this note is given (:func:`giving_way`; ``in_prompt`` and ``cap`` as
        without them): they may be shown again. ``smaller``: the start block this note
        cuts the start block to (:meth:`smaller_start`; ``in_prompt`` and ``cap`` as with
        it), which becomes :attr:`start` if a note is found; what it leaves out may be
        shown again."""
        room = self.budget - in_prompt if cap is None else min(cap, self.budget - in_prompt)
        if room < estimate(NOTE_HEADER) + MIN_ITEM_TOKENS:  # no item fits: no recall to wait for
            return Injection("", room, 0, [])
        shown = self.shown - set(freed)
        if smaller is not None and self.start is not None:
            kept = {item.id for item in smaller.items}
            shown = (shown - {item.id for item in self.start.items}) | kept
        injection = build_note(self.store.db, text, room, self.top_k,
                               semantic_searcher(self.home, self.store), exclude=shown,
                               min_score=NOTE_MIN_SCORE, session=self.session_id,
                               now=clock.now())  # "last week" in a message is from today
        if injection.items:
            self.shown = shown | {item.id for item in injection.items}
            self.start = smaller or self.start
        return injection


def start_budget(budget: int) -> int:
    """Tokens the start block may take of a session's memory ``budget``: :data:`KEPT_SHARE`
    of it, or up to :data:`START_SHARE` while that is at most :data:`START_MAX` (384 of a
    2,048-token window's 512; 512 of a 4,096-token window's 1,024)."""
    kept = int(budget * KEPT_SHARE)
    return max(kept, min(int(budget * START_SHARE), START_MAX))


def giving_way(earlier: Sequence[int], budget: int, start: int) -> int:
    """How many of the notes still in the prompt (``earlier``: their tokens, oldest first)
    leave it for a new message's note: none while the budget has at least half of what the
    start block (``start`` tokens) leaves the notes; else the oldest, one by one, until it
    has. With a 2,048-token window (512 tokens of memory, at most 256 of them the start
    block's once cut) one full note fills the budget, so each later note takes the one
    before it out; short notes stay together while they leave half the share."""
    share = budget - start
    left = share - sum(earlier)
    given = 0
    while given < len(earlier) and 2 * left < share:
        left += earlier[given]
        given += 1
    return given


def note_room(window: int, max_reply: int | None, prompt: int, text: str, *, first: bool,
              first_note: bool) -> int | None:
    """Tokens a note for the message ``text`` may take: what the window leaves free once the
    prompt before it (``prompt`` estimated tokens), the message and the reply are in, with
    :data:`ESTIMATE_SLACK` for the estimate's error (a long pasted message leaves none — the
    note then waits rather than pushing the prompt over the window); for a session's
    ``first`` message after a start block read ahead, at most :func:`first_note_cap`, and
    None (no note) when ``first_note`` is off."""
    room = int((window - (max_reply or REPLY_ROOM)) / ESTIMATE_SLACK) - prompt - estimate(text)
    if not first:
        return room
    return min(room, first_note_cap(text)) if first_note else None


def first_note_cap(text: str) -> int:
    """Tokens the first message's note may take: :data:`FIRST_NOTE_SHARE` of what the
    message itself makes the server read."""
    return int(FIRST_NOTE_SHARE * (estimate(text) + MESSAGE_FRAME))


def with_note(note: str, text: str) -> str:
    """A user message as the model reads it with its memory ``note`` (none: as it is)."""
    return f"{note}\n\n{text}" if note else text


def recent_notes(store: ProjectionStore, budget: int) -> list[RecallItem]:
    """The newest active notes someone asked to be remembered (``Remembered``: the person's
    and the chat model's), newest first, while they fit ``budget`` tokens — what a first
    question most likely asks about, read ahead with the start block. Profile and project
    facts are left out: the fixed head has them."""
    chosen: list[RecallItem] = []
    # at most budget // MIN_ITEM_TOKENS fit; read a few times that, for the too long ones
    for memory in newest_memories(store.db, NOTE_SOURCES, HEAD_TYPES,
                                  limit=4 * (budget // MIN_ITEM_TOKENS + 1)):
        tokens = estimate(memory.content)
        if tokens > budget:
            continue
        budget -= tokens
        chosen.append(RecallItem(MEMORY, memory.id, memory.content, 1.0, tokens,
                                 memory.created_at, list(memory.refs)))
    return chosen
