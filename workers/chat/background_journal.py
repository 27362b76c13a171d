"""The shadow journal on a background thread, for a chat with no worker to hand it to.

Exchanges are mined in order, one at a time (they share the one loaded model), with the
thread's own EventLog and ProjectionStore. Messages for the user are collected, never
printed from the thread: the chat shows them at a safe point (:meth:`BackgroundJournal.notes`).
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from events import DiaristError, EventLog, Home
from events.logger import get_logger
from events.types import FactsExtracted
from projections import ProjectionStore, open_store

from .shadow_journal import shadow_journal

logger = get_logger("diarist.chat")
WAIT_POLL_S = 0.1


class BackgroundJournal:
    """The shadow journal on one background thread: exchanges are mined in order, one at a
    time (they share the one loaded model), with the thread's own EventLog and
    ProjectionStore. Messages for the user are collected, never printed from here."""

    def __init__(self, home: Home, backend: Any) -> None:
        self.home, self.backend = home, backend
        self._jobs: queue.Queue[tuple[str, str, str] | None] = queue.Queue()
        self._notes: list[str] = []
        self._lock = threading.Lock()
        self._outstanding = 0
        self._thread = threading.Thread(target=self._run, name="diarist-shadow-journal",
                                        daemon=True)
        self._thread.start()

    def submit(self, session_id: str, user_event_id: str, assistant_event_id: str) -> None:
        with self._lock:
            self._outstanding += 1
        self._jobs.put((session_id, user_event_id, assistant_event_id))

    @property
    def outstanding(self) -> int:
        with self._lock:
            return self._outstanding

    def notes(self) -> list[str]:
        """The messages collected since the last call."""
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    def _note(self, text: str) -> None:
        with self._lock:
            self._notes.append(text)

    def _run(self) -> None:
        try:
            with EventLog(self.home.events_db) as log, open_store(self.home, log) as store:
                while (job := self._jobs.get()) is not None:
                    try:
                        self._extract(log, store, *job)
                    finally:
                        with self._lock:
                            self._outstanding -= 1
        except Exception as exc:  # the turns are safe in the log either way
            logger.info("shadow_journal.thread_failed", error=str(exc))
            self._note(f"(shadow journal stopped: {exc})")
            with self._lock:
                self._outstanding = 0

    def _extract(self, log: EventLog, store: ProjectionStore, session_id: str,
                 user_event_id: str, assistant_event_id: str) -> None:
        try:
            event = shadow_journal(self.home, log, session_id, user_event_id,
                                   assistant_event_id, self.backend, store=store)
            if event is not None:
                store.catch_up_all()
        except DiaristError as exc:  # a failure is only a warning: the turns are in the log
            logger.info("shadow_journal.failed", turn=assistant_event_id, error=str(exc))
            self._note(f"(shadow journal: {exc})")
            return
        except Exception as exc:  # the same, for an unexpected error
            logger.info("shadow_journal.failed", turn=assistant_event_id, error=repr(exc))
            self._note(f"(shadow journal failed: {type(exc).__name__}: {exc})")
            return
        if event is None:
            logger.info("shadow_journal.nothing_new", turn=assistant_event_id)
            return
        logger.info("shadow_journal.appended", turn=assistant_event_id, event_id=event.id)
        self._note(f"  (journal: +{len(event.data_as(FactsExtracted).facts)} fact(s))")

    def close(self, on_wait: Callable[[], None] | None = None) -> bool:
        """Finish the outstanding extractions; ``on_wait`` is called once if there are any.
        Ctrl-C stops waiting (the turns are in the log; only their facts are lost). Returns
        True when everything finished."""
        if self.outstanding and on_wait is not None:
            on_wait()
        self._jobs.put(None)
        try:
            while self._thread.is_alive():
                self._thread.join(WAIT_POLL_S)
        except KeyboardInterrupt:
            return False
        return True
