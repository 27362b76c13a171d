"""Text that can be stored: valid Unicode (no lone surrogate), no NUL.

A lone surrogate (``"\\ud800"`` in JSON, or an undecodable byte on the command line) cannot be
written as UTF-8, so SQLite refuses it; a NUL ends a C string and a terminal line. Data that
goes into the log verbatim (a transcript, a remembered note) is refused with
:func:`text_problem`; what a person types into a chat or a query is repaired with
:func:`repaired` (each lone surrogate becomes U+FFFD, NUL becomes a space), so a stray byte
never ends a conversation.
"""
from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 control characters other than tab, line feed and carriage return, and DEL
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def text_problem(text: str, *, controls: bool = False) -> str | None:
    """What makes ``text`` unfit to store, or None. Always refused: a lone surrogate and NUL;
    with ``controls`` also every other control character but tab and newlines (for names
    and ids, which are printed on one line)."""
    match = _SURROGATE.search(text)
    if match:
        return (f"holds a lone surrogate U+{ord(match.group()):04X} at character "
                f"{match.start() + 1} (not valid Unicode)")
    match = _CONTROL.search(text) if controls else re.search("\x00", text)
    if match:
        return (f"holds the control character U+{ord(match.group()):04X} at character "
                f"{match.start() + 1}")
    return None


def repaired(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD and each NUL by a space."""
    return _SURROGATE.sub("\ufffd", text).replace("\x00", " ")
