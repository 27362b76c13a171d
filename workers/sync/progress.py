"""How long-running work reports progress without knowing where it is shown.

A :data:`ProgressFactory` is called with the total and a label and returns a context
manager that yields the callback to call with each step's size; ``cli`` passes one that
draws a bar on a terminal. :func:`no_progress` is the silent default.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from projections.engine import Progress

ProgressFactory = Callable[[int, str], AbstractContextManager[Progress]]


@contextlib.contextmanager
def no_progress(total: int, label: str) -> Iterator[Progress]:
    del total, label
    yield lambda n: None
