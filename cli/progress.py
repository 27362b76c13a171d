"""Progress bars on stderr, for long work on a terminal."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import click

from projections.engine import Progress

MIN_TOTAL = 5000  # shorter work finishes before a bar would tell anything


@contextlib.contextmanager
def terminal_progress(total: int, label: str) -> Iterator[Progress]:
    """A :data:`workers.sync.progress.ProgressFactory` drawing a bar when stderr is a
    terminal and the work is long; silent otherwise."""
    if total < MIN_TOTAL or not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update
