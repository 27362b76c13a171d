"""Progress bars on stderr, for long work on a terminal."""
from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator

import click

from projections.engine import Progress
from workers.sync.progress import ProgressFactory

MIN_TOTAL = 5000  # shorter work finishes before a bar would tell anything


@contextlib.contextmanager
def terminal_progress(total: int, label: str, min_total: int = MIN_TOTAL) -> Iterator[Progress]:
    """A :data:`workers.sync.progress.ProgressFactory` drawing a bar when stderr is a
    terminal and the work is long; silent otherwise."""
    if total < min_total or not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def bar_from(min_total: int) -> ProgressFactory:
    """:func:`terminal_progress` drawing a bar from ``min_total`` steps on (slow steps, such
    as model calls, deserve a bar even when there are few)."""
    return functools.partial(terminal_progress, min_total=min_total)
