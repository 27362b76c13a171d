"""A reply that repeats the person's message back, and the guard that keeps it off the screen.

In a session with a start block the 0.5B model often answers a message by repeating it
("Thanks for the support. You rock!" → "Thanks for the support. You rock!"): the block's
lines of what was said read as a transcript it goes on with (docs/experiments.md,
"Echoes"). Without the start block — the notes in the messages kept — it hardly does. So
the session holds back a reply's first characters while they are the message's own
(:class:`EchoGuard`), and when the reply turns out to be an echo (:func:`echoes`) it is
never shown and the model is asked once more without the start block
(:meth:`workers.chat.session.ChatSession._first_reply`), then the prompt is read ahead
again (that call left the server's cache without the start block). Every other reply
streams as before: it parts from the message within a few characters.
"""
from __future__ import annotations

from collections.abc import Callable

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
    far could still be an echo of ``message``; :meth:`end` shows what was held unless the
    whole reply is an echo (:attr:`echoed`)."""

    def __init__(self, message: str, on_token: Callable[[str], None] | None) -> None:
        self.said = opening(message)
        # a message longer than its opening is echoed by any reply that opens as it does;
        # a shorter one only by itself
        self.whole = len(message.strip()) < ECHO_CHARS
        self.on_token = on_token
        self.held = ""
        self.streaming = not self.said
        self.echoed = False

    def token(self, piece: str) -> None:
        if self.streaming:
            self._show(piece)
            return
        self.held += piece
        so_far = self.held.lstrip().lower()
        if self.said.startswith(so_far.rstrip()) or \
                (not self.whole and so_far.startswith(self.said)):
            return        # still the message's own words: it may be an echo
        self.flush()      # parted from the message: no echo, show it from here on

    def end(self, reply: ChatReply) -> None:
        """The reply is over: an echo is dropped, anything else held is shown."""
        self.echoed = echoes(reply.text, self.said) and not reply.interrupted
        if not self.echoed:
            self.flush()

    def flush(self) -> None:
        held, self.held, self.streaming = self.held, "", True
        if held:
            self._show(held)

    def _show(self, piece: str) -> None:
        if self.on_token is not None:
            self.on_token(piece)
