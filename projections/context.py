"""A turn in its conversation: recall scores a turn with the turns around it.

The words that answer a question are often not the words that match it: "How did Melanie
feel watching the meteor shower?" is answered by "It was one of those moments where I felt
tiny and in awe", said two turns after the meteor shower was named; "Which team did you
sign with?" is answered by "The Minnesota Wolves!". So each candidate turn's score gains
:data:`weights.CONTEXT_WEIGHT` times the best score of its neighbours in the same session — the
turn before and after it at full weight, two turns away at half — and a neighbour that was
not a candidate joins the candidates that way (scored by its own cosine, which the vector
cache gives exactly, plus its neighbours'). A turn cut into passages counts with its best
passage; each passage gains its turn's context.

On the LoCoMo dev set, ranking single turns (a harness over every turn of each home,
BM25 / best + cosine as recall fuses them) — evidence recall within 512 tokens: no context
0.698, the previous turn 0.727 (weight 0.2) → 0.744 (0.5), the better neighbour 0.756
(0.5), two turns each way 0.766 (0.7). Pure: the same index and query give the same scores.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from . import weights
from .items import TURN
from .search import HIT_COLUMNS, Hit, slot_sql, take_slots
from .speakers import speaker_of


@dataclass(frozen=True)
class Turn:
    id: str
    session: str
    seq: int


def candidate_turns(db: sqlite3.Connection, ids: list[str]) -> dict[str, Turn]:
    """Where each turn id sits: its session and log position."""
    unique = sorted(set(ids))
    if not unique:
        return {}
    marks = ",".join("?" * len(unique))
    rows = db.execute(f"SELECT id, session, MIN(seq) FROM search_items WHERE id IN ({marks})"
                      " AND +source = 'turn' GROUP BY id", unique).fetchall()  # +: by id
    return {r[0]: Turn(r[0], r[1], r[2]) for r in rows}


def neighbours(db: sqlite3.Connection, turns: list[Turn]) -> dict[str, list[tuple[str, float]]]:
    """The turns around each of ``turns`` in its session (before it, then after it, the
    nearest first), each with the weight its score counts for (1.0 next to it,
    :data:`weights.FAR_WEIGHT` two away). One statement for all: two queries per turn, from Python,
    took ~3 ms of a warm recall at 100,000 items."""
    placed = [turn for turn in turns if turn.session]
    out: dict[str, list[tuple[str, float]]] = {turn.id: [] for turn in turns}
    for start in range(0, len(placed), 300):
        chunk = placed[start:start + 300]
        values = ",".join(["(?, ?, ?)"] * len(chunk))
        rows = db.execute(
            f"WITH c(id, session, seq) AS (VALUES {values}),"
            f" one AS (SELECT id, session, {_step('c', 'seq', '<')} AS b1,"
            f" {_step('c', 'seq', '>')} AS a1 FROM c),"
            f" two AS (SELECT id, session, b1, {_step('one', 'b1', '<')} AS b2, a1,"
            f" {_step('one', 'a1', '>')} AS a2 FROM one)"
            f" SELECT id, {_id_at('b1')}, {_id_at('b2')}, {_id_at('a1')}, {_id_at('a2')}"
            " FROM two", [v for turn in chunk for v in (turn.id, turn.session, turn.seq)]
        ).fetchall()
        for id_, *near in rows:
            before, after = near[:weights.REACH], near[weights.REACH:]
            out[id_] = [(n, 1.0 if distance == 0 else weights.FAR_WEIGHT)
                        for side in (before, after)
                        for distance, n in enumerate(side) if n is not None]
    return out


def _step(table: str, column: str, direction: str) -> str:
    """The seq of the next turn of ``table``'s session before (``<``) or after (``>``) the
    seq in ``column``. (The passages of a turn share its seq.)"""
    pick = "MAX" if direction == "<" else "MIN"
    return (f"(SELECT {pick}(s.seq) FROM search_items s WHERE s.session = {table}.session"
            f" AND s.source = 'turn' AND s.seq {direction} {table}.{column})")


def _id_at(column: str) -> str:
    return ("(SELECT s.id FROM search_items s WHERE s.session = two.session"
            f" AND s.source = 'turn' AND s.seq = two.{column} LIMIT 1)")


def _among_people(near: list[tuple[str, float]], people: set[str]) -> list[tuple[str, float]]:
    """The neighbours, when every one of them is a person's turn; none when a model's reply
    is among them (in a chat with a model a person's messages stand on their own: each
    asks something, and the reply around it restates the topic)."""
    return near if all(n in people for n, _ in near) else []


def context_scores(turn_scores: Mapping[str, float],
                   around: Mapping[str, list[tuple[str, float]]]) -> dict[str, float]:
    """Each turn's context: the best of its neighbours' scores, each times its weight."""
    return {id_: max((turn_scores.get(n, 0.0) * w for n, w in near), default=0.0)
            for id_, near in around.items()}


def turn_items(db: sqlite3.Connection, ids: set[str],
               slots: dict[str, int] | None = None) -> dict[str, tuple[Hit, str]]:
    """The items of the given turns (a turn cut into passages has several), by key, each
    with its speaker. ``slots``, when given, is filled with each item's slot in the vector
    matrix file where the slot holds the item's content (read in the same statement, so
    the item's cosine needs no lookup of its own: :func:`in_context`)."""
    unique = sorted(ids)
    if not unique:
        return {}
    # By id, then the text of those rows only: CROSS JOIN keeps SQLite from scanning the
    # whole full-text index first (as it chose to, given an ORDER BY: 80 ms at 100,000 items)
    column, join = slot_sql(slots)
    rows = take_slots(db.execute(
        f"SELECT {HIT_COLUMNS}, 0.0{column} FROM search_items i CROSS JOIN search_fts f"
        f" ON f.rowid = i.rowid{join} WHERE i.id IN ({','.join('?' * len(unique))})"
        " AND +i.source = 'turn'", unique).fetchall(), slots, 0)
    return {row[0]: (Hit(*row), speaker_of(row[3])) for row in sorted(rows)}


class TurnReads:
    """What the context step reads of turns — where a turn sits, the turns around it, their
    items — each read once, by turn id. Recall reads the lexical candidates' share
    (:meth:`warm`) while the query is embedded and the vectors scanned on the other thread,
    where its own thread would otherwise wait."""

    def __init__(self, db: sqlite3.Connection, slots: bool = False) -> None:
        self.db = db
        self._places: dict[str, Turn | None] = {}
        self._around: dict[str, list[tuple[str, float]]] = {}
        self._items: dict[str, dict[str, tuple[Hit, str]]] = {}  # turn id → key → item
        # with ``slots``: the vector matrix slot of each item read that has one (turn_items)
        self.slots: dict[str, int] | None = {} if slots else None

    def know(self, hits: Iterable[Hit], slots: Mapping[str, int] | None = None) -> None:
        """Where the turns of these hits sit, from the hits themselves: a turn's items
        (its passages) are all of its event, so each has the turn's session and seq; and
        ``slots``, the matrix slots read with them (``search``'s)."""
        if slots and self.slots is not None:
            self.slots.update(slots)
        for hit in hits:
            if hit.source == TURN and hit.id not in self._places:
                self._places[hit.id] = Turn(hit.id, hit.session, hit.seq)

    def places(self, ids: list[str]) -> dict[str, Turn]:
        unread = [id_ for id_ in ids if id_ not in self._places]
        if unread:
            found = candidate_turns(self.db, unread)
            self._places.update({id_: found.get(id_) for id_ in unread})
        return {id_: turn for id_ in ids if (turn := self._places[id_]) is not None}

    def around(self, turns: list[Turn]) -> dict[str, list[tuple[str, float]]]:
        unread = [turn for turn in turns if turn.id not in self._around]
        if unread:
            self._around.update(neighbours(self.db, unread))
        return {turn.id: self._around[turn.id] for turn in turns}

    def items(self, ids: set[str]) -> dict[str, tuple[Hit, str]]:
        unread = {id_ for id_ in ids if id_ not in self._items}
        if unread:
            for id_ in unread:
                self._items[id_] = {}
            for key, (hit, name) in turn_items(self.db, unread, self.slots).items():
                self._items[hit.id][key] = (hit, name)
        return dict(sorted((key, item) for id_ in ids for key, item in self._items[id_].items()))

    WARM_STEP = 10  # candidate turns read ahead at a time

    def warm(self, ids: list[str], more: Callable[[], bool] = lambda: True) -> None:
        """Read ahead for these candidate turns, best first, :attr:`WARM_STEP` at a time while
        ``more()`` says there is time: where they sit, their neighbours and the neighbours'
        items. Recall reads ahead only while the other thread is busy with the query: when
        the lexical search took longer, reading ahead would only delay it, and the context
        step then reads just what it needs (the best candidates' neighbours)."""
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), self.WARM_STEP):
            if not more():
                return
            places = self.places(ids[start:start + self.WARM_STEP])
            near = self.around(list(places.values()))
            self.items({n for around in near.values() for n, _ in around} - set(places))


def _best_turns(own: Mapping[str, float], turn_of: Mapping[str, str],
                places: Mapping[str, Turn]) -> list[str]:
    """The :data:`weights.CONTEXT_OF` candidate turns with the best own score (a turn cut into
    passages: its best passage's); ties by id."""
    best: dict[str, float] = {}
    for key, id_ in turn_of.items():
        best[id_] = max(best.get(id_, 0.0), own.get(key, 0.0))
    return sorted(places, key=lambda id_: (-best.get(id_, 0.0), id_))[:weights.CONTEXT_OF]


def in_context(db: sqlite3.Connection, own: Mapping[str, float],
               turns: Mapping[str, tuple[str, str]],
               cosines: Callable[[dict[str, str], Mapping[str, int]], dict[str, float]] | None,
               cosine_weight: float, models: Callable[[str, str], bool],
               reads: TurnReads | None = None) -> tuple[dict[str, float], dict[str, Hit]]:
    """Every candidate's score with its turn's context added, and the neighbours that join
    the candidates. ``own``: fused score by item key; ``turns``: the turn id and speaker of
    each candidate that is a turn (or a passage of one); ``cosines``: exact cosines of items,
    given key → content hash and the matrix slots ``reads`` found of them (None without
    vectors: a new neighbour then scores by its context alone); ``reads``: what was read of
    the turns already (:class:`TurnReads`).
    Returns the scores by key (candidates and new neighbours) and the item of each new key.

    Only people's turns give and gain context (``models(session, speaker)`` tells a
    model's turn): a model's reply restates the topic of the message it answers, at
    length, and would lift every turn around it. On the LongMemEval dev sample (a person's
    chats with an assistant), context between all turns took top-10 evidence recall from
    0.967 to 0.850; on LoCoMo (two people) it is what finds the answer said next to the
    question."""
    reads = reads or TurnReads(db)
    turn_of = {key: id_ for key, (id_, _) in turns.items()}
    speaker = {id_: name for id_, name in turns.values()}
    places = {id_: turn for id_, turn in reads.places(sorted(set(turn_of.values()))).items()
              if not models(turn.session, speaker.get(id_, ""))}
    around = reads.around([places[id_] for id_ in _best_turns(own, turn_of, places)])
    for place in places:
        around.setdefault(place, [])  # below the best weights.CONTEXT_OF: no context of its own
    nearby = reads.items({n for near in around.values() for n, _ in near} - set(places))
    near_turns = {hit.id: (hit.session, name) for hit, name in nearby.values()}
    people = set(places) | {id_ for id_, (session, name) in near_turns.items()
                            if not models(session, name)}
    around = {id_: _among_people(near, people) for id_, near in around.items()}
    fresh_ids = {n for near in around.values() for n, _ in near} - set(places)
    fresh = {key: hit for key, (hit, _) in nearby.items() if hit.id in fresh_ids}
    fresh_turn = {key: hit.id for key, hit in fresh.items()}
    found = (cosines({key: hit.content_hash for key, hit in fresh.items()}, reads.slots or {})
             if cosines is not None and fresh else {})
    scores = dict(own)
    for key in fresh_turn:
        scores[key] = cosine_weight * found.get(key, 0.0)
    turn_all = {**fresh_turn, **turn_of}
    turn_score: dict[str, float] = {}
    for key, score in scores.items():
        id_ = turn_all.get(key)
        if id_ in people:
            turn_score[id_] = max(turn_score.get(id_, 0.0), score)
    context = context_scores(turn_score, around)
    for id_, near in around.items():   # a new neighbour's context: the candidates around it
        for n, weight in near:
            if n in fresh_ids:
                context[n] = max(context.get(n, 0.0), turn_score.get(id_, 0.0) * weight)
    for key in scores:
        id_ = turn_all.get(key)
        if id_ is not None and id_ in context:
            scores[key] += weights.CONTEXT_WEIGHT * context[id_]
    return scores, fresh
