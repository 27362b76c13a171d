"""Replies that only copy: the message back, or an earlier reply again; and the guard that
keeps them off the screen.

In a session with a start block the 0.5B model often answers a message by repeating it
("Thanks for the support. You rock!" → "Thanks for the support. You rock!"): the block's
lines of what was said read as a transcript it goes on with (docs/experiments.md,
"Echoes"). Without the start block — the notes in the messages kept — it hardly does. And
once a session has a few replies, it often gives an earlier one again to every later
message (a session "locks in"), with memory or without. So the session holds back a
reply's first characters while they are the message's own or an earlier reply's
(:class:`EchoGuard`); a reply that turns out to be such a copy (:func:`echoes`: its first
30 characters) is never shown and the model is asked once more — after an echo without
the start block, after a repeat without the earlier exchanges
(:meth:`workers.chat.session.ChatSession._first_reply`) — then the prompt is read ahead
again (that call left the server's cache without it). Every other reply streams as
before: it parts from them within a few characters.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from ..llm import ChatReply

ECHO_CHARS = 30   # how much of a message a reply must repeat, from its start, to echo it


def opening(text: str) -> str:
    """What an echo is told by: the text's first :data:`ECHO_CHARS` characters after any
    leading blanks, lower-cased, without trailing blanks."""
    return text.lstrip()[:ECHO_CHARS].rstrip().lower()


def echoes(reply: str, message: str) -> bool:
    """Whether ``reply`` opens as ``message`` does (:func:`opening`): the whole message when
    it is shorter than that."""
    said = opening(message)
    return bool(said) and opening(reply) == said


class EchoGuard:
    """Passes a reply's pieces on to ``on_token``, but holds them back while the reply so
    far could still be an echo of ``message`` or a repeat of one of the ``earlier`` replies
    of the session; :meth:`end` shows what was held unless the whole reply is such a copy
    (:attr:`echoed`, :attr:`repeated`)."""

    def __init__(self, message: str, on_token: Callable[[str], None] | None,
                 earlier: Sequence[str] = ()) -> None:
        self.message = message
        # a short reply may well come again ("You're welcome!"): only a longer one's opening
        # tells a repeat
        self.earlier = [text for text in earlier if len(text.strip()) >= ECHO_CHARS]
        # a text longer than its opening is copied by any reply that opens as it does; a
        # shorter one only by itself
        self.openings = [(opening(text), len(text.strip()) < ECHO_CHARS)
                         for text in (message, *self.earlier) if opening(text)]
        self.on_token = on_token
        self.held = ""
        self.streaming = not self.openings
        self.echoed = False
        self.repeated: str | None = None   # the earlier reply this one repeats

    def token(self, piece: str) -> None:
        if self.streaming:
            self._show(piece)
            return
        self.held += piece
        so_far = self.held.lstrip().lower()
        if any(said.startswith(so_far.rstrip()) or (not whole and so_far.startswith(said))
               for said, whole in self.openings):
            return        # still a copy's words: it may be one
        self.flush()      # parted from them all: no copy, show it from here on

    def end(self, reply: ChatReply, *, call: bool = False) -> None:
        """The reply is over: a copy is dropped, anything else held is shown. A tool
        ``call`` is no copy (a second search opens as the first did)."""
        if not (reply.interrupted or call):
            self.echoed = echoes(reply.text, self.message)
            if not self.echoed:
                self.repeated = next((text for text in self.earlier if echoes(reply.text, text)),
                                     None)
        if not self.copied:
            self.flush()

    @property
    def copied(self) -> bool:
        return self.echoed or self.repeated is not None

    def flush(self) -> None:
        held, self.held, self.streaming = self.held, "", True
        if held:
            self._show(held)

    def _show(self, piece: str) -> None:
        if self.on_token is not None:
            self.on_token(piece)
