"""Projection files (journals, MEMORY.md) stay what their rows say when two processes catch
up at once (issue 14, "exactly-once projection").

A file used to be rendered and written outside any transaction. Two processes catching up
the same day could then both render it; the one holding the older rows could write last
and clear the dirty mark, leaving a stale journal that no later catch-up rewrote (the kind
of difference `replay --verify` reports as a journal digest that differs). Rendering,
writing and unmarking now happen under the projections database's write lock."""
from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from pathlib import Path

from events import EventLog, Home
from events.types import Remembered
from projections import open_store

DAY = dt.datetime(2024, 5, 1, 9, tzinfo=dt.UTC)


def test_a_journal_rendered_while_another_process_commits_is_not_left_stale(
        home: Home) -> None:
    with EventLog(home.events_db) as log:
        log.append(Remembered(text="first note of the day"), stream="memory", occurred_at=DAY)
    first = open_store(home, EventLog(home.events_db))
    second = open_store(home, EventLog(home.events_db))
    journal = first.projectors["journal"]
    render = journal.file_content
    other: list[threading.Thread] = []

    def render_then_race(db: sqlite3.Connection, name: str) -> str | None:
        content = render(db, name)  # rendered from the rows this process sees now
        if not other:
            # meanwhile another process appends to the same day and catches up
            with EventLog(home.events_db) as log:
                log.append(Remembered(text="second note of the day"), stream="memory",
                           occurred_at=DAY + dt.timedelta(hours=1))
            thread = threading.Thread(target=second.catch_up, args=("journal",))
            other.append(thread)
            thread.start()
            thread.join(0.5)  # it writes first, unless it has to wait for our lock
        return content

    journal.file_content = render_then_race  # type: ignore[method-assign]
    try:
        first.catch_up("journal")
        other[0].join(60)
        assert not other[0].is_alive()
    finally:
        for store in (first, second):
            store.log.close()
            store.close()
    text = (home.memory_dir / "2024-05-01.md").read_text()
    assert "first note of the day" in text and "second note of the day" in text
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        assert store.file_drift("journal") == []


def test_file_drift_sees_a_file_that_differs_from_its_rows(home: Home, tmp_path: Path) -> None:
    """The oracle of the test above (and of `diarist status`'s `files:` line)."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        log.append(Remembered(text="a note"), stream="memory", occurred_at=DAY)
        store.catch_up_all()
        assert store.file_drift("journal") == []
        (home.memory_dir / "2024-05-01.md").write_text("# Journal 2024-05-01\n")
        assert store.file_drift("journal") == [("2024-05-01.md", "edited")]
