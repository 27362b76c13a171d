"""Reporting bad input briefly: the first problems in full, then how many more.

A file with 100,000 bad lines must not print 100,000 lines: :class:`Problems` keeps the
first :data:`SHOWN` messages and counts the rest (``… and 99,980 more``), so a reader can
go on validating the whole input — the count is exact — while the message stays short.
:func:`clip` does the same for one long text (a server's error body, a bad value).
"""
from __future__ import annotations

SHOWN = 20        # problems shown in full
CLIP_CHARS = 300  # of one quoted text (an HTTP error body, a value)


class Problems:
    """What is wrong with an input, collected while reading all of it."""

    def __init__(self, shown: int = SHOWN) -> None:
        self.shown = shown
        self.messages: list[str] = []
        self.count = 0

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.messages) < self.shown:
            self.messages.append(message)

    def __bool__(self) -> bool:
        return self.count > 0

    def __len__(self) -> int:
        return self.count

    def render(self) -> str:
        """The first problems, one a line, and ``… and N more`` when some were left out."""
        lines = list(self.messages)
        hidden = self.count - len(self.messages)
        if hidden:
            lines.append(f"… and {hidden:,} more")
        return "\n".join(lines)


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters, saying how much was left out."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}… ({len(flat) - limit:,} more characters)"
