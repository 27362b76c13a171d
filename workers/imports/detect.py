"""Which format a file to import is in — by its content, not its name — and reading it.

- A zip (by its first bytes): the ``conversations.json`` in it (at its top level, else the
  shallowest), read as below — a ChatGPT data export, or a Claude one.
- A first line that is a JSON object of its own without an export's keys: diarist's
  transcript, one turn a line (``events.transcript``), read as it always was — streamed,
  never held whole. So is anything that does not start like JSON (``{`` or ``[``).
- Otherwise the whole file is one JSON document: a list of conversations (or one
  conversation) is a **ChatGPT** export when they have ``mapping``, a **Claude** export when
  they have ``chat_messages``, an **Open WebUI** export when they have ``chat`` with
  ``history`` or ``messages``. A document with none of them, or that is not valid JSON, is
  read as a transcript after all (its line errors, as before) — unless an export's keys show
  in a document that is not valid JSON: then it is named as that export cut short.

Each reader checks the whole export and raises :class:`events.ImportFailed` naming the
format it expected and what is wrong (nothing is appended); the export's fields diarist does
not use are ignored (exports grow new ones), unlike a transcript's.
"""
from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO, Any

from events import ImportFailed
from events.jsonl import MAX_LINE_BYTES, decode
from events.transcript import opened, parse

from . import chatgpt, claude, openwebui
from .common import HINTS, Export, a_label

READERS: dict[str, Callable[[Any, str], Export]] = {
    "chatgpt": chatgpt.read, "claude": claude.read, "openwebui": openwebui.read}
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
MEMBER = "conversations.json"
SNIFF_BYTES = 1 << 20   # of a document that is not valid JSON, looked at for an export's keys
_KEYS = [(fmt, re.compile(pattern)) for fmt, pattern in (
    ("chatgpt", rb'(?<!\\)"mapping"\s*:'),
    ("claude", rb'(?<!\\)"chat_messages"\s*:'),
    ("openwebui", rb'(?<!\\)"chat"\s*:\s*\{'),
)]
ZIP_HINT = ("Was the download cut short? Download the export again and import the .zip as it "
            "came (or the conversations.json inside it); nothing was imported.")


def read_export(path: Path) -> Export:
    """The checked turns of the file at ``path`` (``-``: standard input) in whichever
    format it is; :class:`ImportFailed` (nothing read into the log) names what is wrong."""
    with opened(path) as (handle, name):
        head, first, whole = _peek(handle)
        if head.startswith(ZIP_MAGIC):
            return _zip(handle, head, name)
        if _transcript_line(first, whole):
            return _transcript(_rewound(handle, head), name)
        raw = head + handle.read()
    return _document(raw, name) or _transcript(io.BytesIO(raw), name)


def format_of(value: Any) -> str | None:
    """The export format of a parsed JSON document (a key of :data:`READERS`), or None."""
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, dict) or {"session", "ref"} <= item.keys():
            continue  # a transcript's line
        if "mapping" in item:
            return "chatgpt"
        if "chat_messages" in item:
            return "claude"
        chat = item.get("chat")
        if isinstance(chat, dict) and ("history" in chat or "messages" in chat):
            return "openwebui"
    return None


def _peek(handle: IO[bytes]) -> tuple[bytes, bytes | None, bool]:
    """What was read to find the first line that is not blank: ``(everything read, that
    line or None at the end, whether it is whole)`` — never more than a line's limit of it."""
    read: list[bytes] = []
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        read.append(line)
        if not line:
            return b"".join(read), None, True
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            return b"".join(read), line, False
        if line.strip():
            return b"".join(read), line, True


def _transcript_line(first: bytes | None, whole: bool) -> bool:
    """Whether the first line says "a transcript": it does not start like JSON, or it is a
    JSON object of its own without an export's keys (empty: the transcript reader says so)."""
    if first is None:
        return True
    start = first.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not start.startswith((b"{", b"[")):
        return True
    if not whole:
        return False   # too long for a transcript's line: one JSON document
    try:
        text = start.decode("utf-8")
    except UnicodeDecodeError:
        return True    # the transcript reader names the line
    value, error = decode(text)
    return error is None and isinstance(value, dict) and format_of(value) is None


def _document(raw: bytes, name: str, *, member: bool = False) -> Export | None:
    """The export a whole JSON document is, read; None when it is none (then it is read as
    a transcript) — except in a zip (``member``), where that is an error."""
    value: Any = None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        error: str | None = f"not UTF-8 text ({exc.reason} at byte {exc.start + 1:,})"
    else:
        value, error = _parse(text)
    if error is None:
        fmt = format_of(value)
        if fmt is not None:
            return READERS[fmt](value, name)
        if not member:
            return None
        raise ImportFailed(
            f"{name}: not a ChatGPT or Claude export: no conversation in it has 'mapping' "
            "(ChatGPT) or 'chat_messages' (Claude)", hint=ZIP_HINT)
    fmt = next((f for f, key in _KEYS if key.search(raw, 0, SNIFF_BYTES)), None)
    if fmt is None and not member:
        return None
    label = a_label(fmt) if fmt else "a ChatGPT or Claude export"
    raise ImportFailed(f"{name}: looks like {label} but is not valid JSON ({error})",
                       hint="Was the file cut short (a download or a copy that stopped)? "
                            + (HINTS[fmt] if fmt else ZIP_HINT))


def _parse(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at line {exc.lineno:,}, column {exc.colno:,}"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # int() refuses a number of more than 4,300 digits
        return None, str(exc)


def _zip(handle: IO[bytes], head: bytes, name: str) -> Export:
    """The ``conversations.json`` of a zipped export, read."""
    source = handle if handle.seekable() else io.BytesIO(head + handle.read())
    try:
        with zipfile.ZipFile(source) as archive:
            members = [i for i in archive.infolist()
                       if not i.is_dir() and PurePosixPath(i.filename).name == MEMBER]
            if not members:
                raise ImportFailed(
                    f"{name}: a zip file without {MEMBER}: expected a ChatGPT or Claude data "
                    f"export (a .zip with {MEMBER} in it)",
                    hint="Import the .zip the export came as, or the conversations.json "
                         "(or an Open WebUI chat export's .json) itself; nothing was imported.")
            member = min(members, key=lambda i: (i.filename.count("/"), i.filename))
            raw = archive.read(member)
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError,
            OSError) as exc:
        raise ImportFailed(f"{name}: not a zip file diarist can read ({exc})",
                           hint=ZIP_HINT) from None
    export = _document(raw, f"{name}:{member.filename}", member=True)
    assert export is not None  # a member that is no export raised
    return export


def _transcript(stream: IO[bytes], name: str) -> Export:
    return Export("transcript", name, parse(stream, name))


def _rewound(handle: IO[bytes], head: bytes) -> IO[bytes]:
    """``handle`` from its start again: sought back, or (standard input) what was read
    ahead given back first."""
    if handle.seekable():
        handle.seek(0)
        return handle
    return io.BufferedReader(_ReadAhead(head, handle))


class _ReadAhead(io.RawIOBase):
    """A stream that gives back ``head`` (read ahead from ``rest``) and then ``rest``."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            count = min(len(view), len(self._head))
            view[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        read1 = getattr(self._rest, "read1", self._rest.read)
        data = read1(len(view))
        view[:len(data)] = data
        return len(data)
