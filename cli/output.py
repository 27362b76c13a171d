"""Everything diarist prints goes through :func:`echo`: stored text never drives the terminal.

A turn may hold ESC, OSC or CSI sequences and other control characters (pasted output, a
hostile transcript): printed raw they can retitle the terminal, clear it, hide text or move
the cursor. :func:`visible` shows each such character as a ``\\uXXXX`` escape — C0 controls
but tab and newline, DEL, the C1 range (U+0080–U+009F, which some terminals also obey) and
the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069, which can reorder
what is shown). The same escape is valid inside a JSON string, so ``--json`` output passed
through it stays valid JSON that decodes to the stored text (``json.dumps`` already escapes
C0 controls; not C1, DEL or the bidi controls when it keeps UTF-8).

Decided: ``diarist export`` writes the transcript as data, byte for byte (its round-trip
promise), so it is the one output that does not pass through here.
"""
from __future__ import annotations

import re
from typing import Any

import click

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with every terminal-controlling character shown as ``\\uXXXX``."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def echo(message: Any = None, **kwargs: Any) -> None:
    """``click.echo`` of ``message`` made :func:`visible`."""
    click.echo(None if message is None else visible(str(message)), **kwargs)
