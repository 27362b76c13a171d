"""ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, 26 characters.

Monotonic within a process: two ids made in the same millisecond differ by one in the
random part, so ids sort in the order they were made.
"""
from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_ulid() -> str:
    """A new ULID string. Uses the wall clock directly: ids are not part of replay."""
    global _last_ms, _last_rand
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            _last_ms = ms
            _last_rand = int.from_bytes(os.urandom(10), "big")
        return _encode(ms, 10) + _encode(_last_rand, 16)


def is_ulid(text: str) -> bool:
    return len(text) == 26 and all(c in _ALPHABET for c in text.upper())
