"""Passages: a long turn cut into the short pieces that recall indexes and returns.

A small model's memory budget (512 tokens for a 2K window) holds two of a chat assistant's
long replies, or twenty short passages. So a turn whose text is longer than
:data:`WHOLE_TURN_TOKENS` is indexed as passages — runs of whole sentences (a list item or a
line is a sentence too) of at most :data:`PASSAGE_TOKENS` — each carrying its turn's
speaker, time and ref. A shorter turn stays one item. Pure: the same text always gives the
same passages (replay gives the same index).
"""
from __future__ import annotations

import re

from .tokens import counts, estimate, within

WHOLE_TURN_TOKENS = 80   # a turn up to this long is one item
PASSAGE_TOKENS = 56      # a passage holds whole sentences up to this long
SENTENCE_TOKENS = 72     # a longer sentence is cut at word boundaries

# Sentence ends: . ! ? (with closing quotes/brackets) before a space; or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\s*\n\s*")


_ENUMERATOR = re.compile(r"^(?:\d{1,3}[.)]|[-*•#]+)$")


def sentences(text: str) -> list[str]:
    """The sentences (and lines) of ``text``, stripped, none empty; a list item's number
    ("2.") stays with its item."""
    out: list[str] = []
    for piece in (p.strip() for p in _SENTENCE_END.split(text)):
        if not piece:
            continue
        if out and _ENUMERATOR.match(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _runs(pieces: list[str], limit: int) -> list[str]:
    """``pieces`` joined with spaces into runs of at most ``limit`` tokens, in order (a piece
    longer than ``limit`` is a run of its own). The run's estimate is kept from its counts,
    so a long unpunctuated text is cut in one pass."""
    out: list[str] = []
    most_pieces, most_chars = within(limit)
    start = run_pieces = run_chars = 0
    for i, piece in enumerate(pieces):
        piece_pieces, piece_chars = counts(piece)
        if i > start and (run_pieces + piece_pieces > most_pieces
                          or run_chars + 1 + piece_chars > most_chars):
            out.append(" ".join(pieces[start:i]))
            start, run_pieces, run_chars = i, 0, 0
        run_chars += piece_chars + (1 if i > start else 0)
        run_pieces += piece_pieces
    if start < len(pieces):
        out.append(" ".join(pieces[start:]))
    return out


def passages(text: str, *, whole: int = WHOLE_TURN_TOKENS, size: int = PASSAGE_TOKENS,
             sentence_limit: int = SENTENCE_TOKENS) -> list[str]:
    """``text`` as one passage when it is short, else runs of its sentences of at most
    ``size`` tokens (a sentence longer than ``sentence_limit`` is cut)."""
    text = text.strip()
    if estimate(text) <= whole:
        return [text] if text else []
    pieces: list[str] = []
    for sentence in sentences(text):
        pieces += _runs(sentence.split(), sentence_limit) if estimate(sentence) > sentence_limit \
            else [sentence]
    return _runs(pieces, size)
