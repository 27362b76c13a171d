"""The chat's work after a reply: handed to a running ``diarist worker``, or done here.

After each reply is printed, :class:`AfterReply` looks for a worker on the home
(:func:`workers.presence.worker_present`, a lock probe of a few microseconds):

- **a worker runs**: the projection catch-up is queued (:func:`cli.queue.after_append`) and,
  with the shadow journal on, so is ``memory.shadow_journal`` with what the worker needs to
  rebuild the backend (name, model, server URL, a scripted backend's rules file — never an
  API key). Nothing is done in the chat's process.
- **no worker**: the projections are caught up here, right away (the next turn recalls what
  was said), and the shadow journal runs on a background thread with its own connections, so
  the next prompt never waits for the extra LLM call. The thread prints nothing: its results
  (``(journal: +N fact(s))``, or a warning) are shown by :meth:`AfterReply.report` at the next
  safe point (before a prompt), and :meth:`AfterReply.finish` waits for it at session end.

Presence is checked after every reply, so a worker started (or stopped) mid-session is used
(or not) from the next reply on.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import click
import structlog

from events import DiaristError, EventLog, Home
from projections import ProjectionStore, open_store
from workers.presence import worker_present

from .queue import after_append, enqueue_shadow_journal

logger = structlog.get_logger("diarist.chat")
WAIT_POLL_S = 0.1


def backend_spec(backend: Any) -> dict[str, str | None]:
    """What a worker needs to rebuild ``backend``: never its API key."""
    script = getattr(backend, "script", None)
    return {"backend_name": backend.name, "model": backend.model,
            "base_url": getattr(backend, "base_url", None),
            "script": str(script.resolve()) if script is not None else None}


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
        except Exception as exc:  # noqa: BLE001 - the turns are safe in the log either way
            logger.info("shadow_journal.thread_failed", error=str(exc))
            self._note(f"(shadow journal stopped: {exc})")
            with self._lock:
                self._outstanding = 0

    def _extract(self, log: EventLog, store: ProjectionStore, session_id: str,
                 user_event_id: str, assistant_event_id: str) -> None:
        from workers.extract import shadow_journal

        try:
            event = shadow_journal(self.home, log, session_id, user_event_id,
                                   assistant_event_id, self.backend, store=store)
            if event is not None:
                store.catch_up_all()
        except DiaristError as exc:  # a failure is only a warning: the turns are in the log
            logger.info("shadow_journal.failed", turn=assistant_event_id, error=str(exc))
            self._note(f"(shadow journal: {exc})")
            return
        except Exception as exc:  # noqa: BLE001 - same, for an unexpected error
            logger.info("shadow_journal.failed", turn=assistant_event_id, error=repr(exc))
            self._note(f"(shadow journal failed: {type(exc).__name__}: {exc})")
            return
        if event is None:
            logger.info("shadow_journal.nothing_new", turn=assistant_event_id)
            return
        logger.info("shadow_journal.appended", turn=assistant_event_id, event_id=event.id)
        self._note(f"  (journal: +{len(event.payload['facts'])} fact(s))")

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


class AfterReply:
    """Hands the work that follows each reply to a worker, or does it in this process."""

    def __init__(self, home: Home, session: Any, store: ProjectionStore, *, shadow: bool,
                 echo: Callable[[str], None] | None = None) -> None:
        self.home, self.session, self.store, self.shadow = home, session, store, shadow
        self.echo = echo or (lambda text: click.echo(text, err=True))
        self.journal: BackgroundJournal | None = None

    def reply_done(self, reply: Any) -> None:
        """After a reply is shown: catch up (or queue it), then the shadow journal."""
        present = worker_present(self.home)
        if not (present and after_append(self.home)):
            present = False  # no worker, or its queue is unreachable: do it here
            self.store.catch_up_all()  # the next turn recalls what was said
        if not self.shadow or reply.interrupted or self.session.last_turn is None:
            return
        if present and self._enqueue_journal():
            return
        if self.journal is None:
            self.journal = BackgroundJournal(self.home, self.session.backend)
        self.journal.submit(self.session.id, *self.session.last_turn)

    def _enqueue_journal(self) -> bool:
        user_id, assistant_id = self.session.last_turn
        return enqueue_shadow_journal(self.home, self.session.id, user_id, assistant_id,
                                      **backend_spec(self.session.backend))

    def report(self) -> None:
        """Show what the background thread has to say (call where printing is safe)."""
        if self.journal is not None:
            for note in self.journal.notes():
                self.echo(note)

    def finish(self) -> None:
        """At session end: wait for the shadow journal, then catch up (or queue it)."""
        if self.journal is not None:
            done = self.journal.close(
                on_wait=lambda: self.echo("(finishing the shadow journal… Ctrl-C to skip)"))
            if not done:
                self.echo("(shadow journal skipped; the turns are in the log)")
            self.report()
        if not worker_present(self.home):
            self.store.catch_up_all()
        after_append(self.home)
