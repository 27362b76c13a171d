"""The elements of a top-level JSON array, one at a time, with their byte offsets — so a
2.7 GB file (LongMemEval's ``_m``) is read in memory bounded by its largest element, and an
element can be read again later from its offset without reading what comes before it.

Text is decoded incrementally and parsed with :meth:`json.JSONDecoder.raw_decode`; when an
element is cut by the end of what has been read, more is read and the parse starts again at
its first byte (the read size doubles, so a large element is parsed a few times at most; it
starts small again for the next one).
Each element must be a JSON object: only a closing brace ends one, so a cut element cannot
be mistaken for a whole one.
"""
from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .dataset import DatasetError

READ_SIZE = 1 << 20
_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


class _Reader:
    """Decoded text of ``handle`` from a byte offset, with the byte offset of its start."""

    def __init__(self, handle: BinaryIO, path: Path, offset: int = 0) -> None:
        handle.seek(offset)
        self.handle, self.path = handle, path
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text, self.start, self.eof = "", offset, False
        self.size = READ_SIZE

    def more(self) -> bool:
        """Read the next block (doubling); False at the end of the file."""
        if self.eof:
            return False
        block = self.handle.read(self.size)
        self.size = min(self.size * 2, 1 << 28)
        try:
            self.text += self.decoder.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{self.path}: not UTF-8 text ({exc.reason})") from None
        self.eof = not block
        return True

    def skip(self, chars: str) -> str | None:
        """The first character not in ``chars`` (consumed up to it), None at the end."""
        while True:
            stripped = self.text.lstrip(chars)
            self.consume(len(self.text) - len(stripped))
            if self.text:
                return self.text[0]
            if not self.more():
                return None

    def consume(self, n: int) -> None:
        if n:
            self.start += len(self.text[:n].encode("utf-8"))
            self.text = self.text[n:]

    def element(self) -> Any:
        """The JSON object at the start of the text, consumed."""
        while True:
            if self.text.startswith("{"):
                try:
                    value, end = _DECODER.raw_decode(self.text)
                except json.JSONDecodeError as exc:
                    if self.more():
                        continue
                    raise DatasetError(f"{self.path}: not valid JSON ({exc.msg} in the element "
                                       f"at byte {self.start})") from None
                self.consume(end)
                self.size = READ_SIZE   # the next element starts small again
                return value
            if not self.text and self.more():
                continue
            raise DatasetError(f"{self.path}: expected a JSON object at byte {self.start}, "
                               f"found {self.text[:20]!r}")


def iter_objects(path: Path) -> Iterator[tuple[int, Any]]:
    """(byte offset, value) of each element of the file's top-level array."""
    with open(path, "rb") as handle:
        reader = _Reader(handle, path)
        if reader.skip(_SPACE + "\ufeff") != "[":
            raise DatasetError(f"{path}: not a JSON array (expected '[' first)")
        reader.consume(1)
        if reader.skip(_SPACE) == "]":
            return
        while True:
            offset = reader.start
            yield offset, reader.element()
            found = reader.skip(_SPACE)
            if found == "]":
                return
            if found != ",":
                raise DatasetError(f"{path}: not valid JSON (expected ',' or ']' at byte "
                                   f"{reader.start})")
            reader.consume(1)
            reader.skip(_SPACE)


def read_object(path: Path, offset: int) -> Any:
    """The JSON object that starts at byte ``offset`` of ``path``."""
    with open(path, "rb") as handle:
        return _Reader(handle, path, offset).element()
