"""Replies that only copy: the message back, an earlier reply again, or the memory in the
prompt; and the guard that keeps them off the screen.

In a session with a start block the 0.5B model often answers a message by repeating it
("Thanks for the support. You rock!" → "Thanks for the support. You rock!"): the block's
lines of what was said read as a transcript it goes on with (docs/experiments.md,
"Echoes"). Without the start block — the notes in the messages kept — it does less. Once a
session has a few replies, it often gives an earlier one again to every later message (a
session "locks in"), with memory or without. And it may recite the memory it was given,
in the block's own form ("[most relevant] - (25 May 2023, 3 years ago) Caroline: …",
"[9 August 2023] Tim: …", "Maria: Thanks!"): its first line a title of the block, or a
line's stamp and speaker (:class:`Recital`).

So the session holds back a reply's first characters while they are the message's own,
an earlier reply's, or written as the memory is (:class:`EchoGuard`); a reply that turns
out to be such a copy (:func:`echoes`: its first 30 characters; :meth:`Recital.reply`) is
never shown and the model is asked again without what brought it: an echo without the
start block, a repeat without the earlier exchanges, a recital without memory. That
reply is guarded the same way (against what its prompt still holds, and the message); a
copy again is asked a last time with the message alone, and shown whatever it says
(:meth:`workers.chat.session.ChatSession._first_reply`). Then the prompt is read ahead
again (those calls left the server's cache without it). Every other reply streams as
before: it parts from them within a few characters.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..llm import ChatReply

ECHO_CHARS = 30   # how much of a message a reply must repeat, from its start, to echo it
RECITAL_CHARS = 100  # a first line not told a recital by this length is shown

# what the chat tells the person while the model is asked again, by the copy held back
# (``alone``: a copy again, asked a last time with the message alone); the wait is seconds
ASKING_AGAIN = {
    "echo": "[the reply only repeated your message — asking again]",
    "repeat": "[the reply repeated an earlier one — asking again]",
    "recital": "[the reply recited the memory — asking again without it]",
    "alone": "[that one copied too — asking with your message alone]",
}

_TITLE = re.compile(r"\[[^\]\n]{1,40}\]")                   # [most relevant]
_STAMP = re.compile(r"[(\[][^)\]\n]{1,60}[)\]]\s*")          # (25 May 2023, 3 years ago)
_SPEAKER = re.compile(r"([^:\n]{1,40}):\s")                  # Caroline: …


def opening(text: str) -> str:
    """What an echo is told by: the text's first :data:`ECHO_CHARS` characters after any
    leading blanks, lower-cased, without trailing blanks."""
    return text.lstrip()[:ECHO_CHARS].rstrip().lower()


def echoes(reply: str, message: str) -> bool:
    """Whether ``reply`` opens as ``message`` does (:func:`opening`): the whole message when
    it is shorter than that."""
    said = opening(message)
    return bool(said) and opening(reply) == said


class Recital:
    """How the memory in a prompt is written — its lines' speakers — to tell a reply that
    recites it (:meth:`line`). A reply in a line's words without its form ("Maya lives in
    Plymouth.") may be the answer asked for: no recital."""

    def __init__(self, memory: str) -> None:
        lines = [line.strip() for line in memory.splitlines()]
        self.written = any(line.startswith("- ") for line in lines)
        self.speakers = {m.group(1).strip().lower() for line in lines
                         if line.startswith("- ") and (m := _SPEAKER.match(_unstamped(line[2:])))}

    def __bool__(self) -> bool:
        return self.written

    def line(self, text: str) -> bool:
        """Whether ``text``, a reply's first line, is written as the memory is: a title of
        the block alone ("[memory note]"), or — after a dash and a stamp in either bracket,
        if any — a speaker of its lines and a colon."""
        bare = text.strip()
        if not self or not bare:
            return False
        if _TITLE.fullmatch(bare):
            return True
        speaker = _SPEAKER.match(_unstamped(bare.removeprefix("-").lstrip()))
        return bool(speaker and speaker.group(1).strip().lower() in self.speakers)

    def may_start(self, text: str) -> bool:
        """Whether ``text``, the start of a reply's first line, could still turn out to
        recite: it opens with a bracket or a dash, or as a speaker's name might."""
        bare = text.lstrip().lower()
        return not bare or bare[0] in "[(-" or any(
            f"{name}:".startswith(bare) for name in self.speakers)

    def reply(self, text: str) -> bool:
        """Whether a whole reply recites: its first line does (:meth:`line`)."""
        return self.line(text.lstrip().partition("\n")[0])


def _unstamped(text: str) -> str:
    """``text`` without a leading stamp, "(7 May 2023, 3 weeks ago) " or "[9 August 2023] "."""
    stamp = _STAMP.match(text)
    return text[stamp.end():] if stamp else text


class EchoGuard:
    """Passes a reply's pieces on to ``on_token``, but holds them back while the reply so
    far could still be an echo of ``message``, a repeat of one of the ``earlier`` replies
    of the session, or a recital of the ``memory`` in the prompt; :meth:`end` shows what
    was held unless the whole reply is such a copy (:attr:`echoed`, :attr:`repeated`,
    :attr:`recited`)."""

    def __init__(self, message: str, on_token: Callable[[str], None] | None,
                 earlier: Sequence[str] = (), memory: str = "") -> None:
        self.message = message
        # a short reply may well come again ("You're welcome!"): only a longer one's opening
        # tells a repeat
        self.earlier = [text for text in earlier if len(text.strip()) >= ECHO_CHARS]
        # a text longer than its opening is copied by any reply that opens as it does; a
        # shorter one only by itself
        self.openings = [(opening(text), len(text.strip()) < ECHO_CHARS)
                         for text in (message, *self.earlier) if opening(text)]
        self.recital = Recital(memory)
        self.on_token = on_token
        self.held = ""
        self.streaming = not (self.openings or self.recital)
        self.echoed = False
        self.repeated: str | None = None   # the earlier reply this one repeats
        self.recited = False

    def token(self, piece: str) -> None:
        if self.streaming:
            self._show(piece)
            return
        self.held += piece
        so_far = self.held.lstrip().lower()
        if any(said.startswith(so_far.rstrip()) or (not whole and so_far.startswith(said))
               for said, whole in self.openings):
            return        # still a copy's words: it may be one
        if self._may_recite():
            return
        self.flush()      # parted from them all: no copy, show it from here on

    def _may_recite(self) -> bool:
        """Whether the reply so far recites the memory, or its first line still could."""
        first, newline, _ = self.held.lstrip().partition("\n")
        if self.recital.line(first):
            return True
        return not newline and len(first) < RECITAL_CHARS and self.recital.may_start(first)

    def end(self, reply: ChatReply, *, call: bool = False) -> None:
        """The reply is over: a copy is dropped, anything else held is shown. A tool
        ``call`` is no copy (a second search opens as the first did)."""
        if not (reply.interrupted or call):
            self.echoed = echoes(reply.text, self.message)
            if not self.echoed:
                self.repeated = next((text for text in self.earlier if echoes(reply.text, text)),
                                     None)
            self.recited = not self.copied and self.recital.reply(reply.text)
        if not self.copied:
            self.flush()

    @property
    def copied(self) -> bool:
        return self.echoed or self.repeated is not None or self.recited

    @property
    def copy(self) -> str | None:
        """What the reply copied — ``echo``, ``recital``, ``repeat`` — or None."""
        return "echo" if self.echoed else "recital" if self.recited else \
            "repeat" if self.repeated is not None else None

    def flush(self) -> None:
        held, self.held, self.streaming = self.held, "", True
        if held:
            self._show(held)

    def _show(self, piece: str) -> None:
        if self.on_token is not None:
            self.on_token(piece)
