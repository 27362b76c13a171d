"""The chat's work after a reply: handed to a running ``diarist worker``, or done here.

After each reply is printed, :class:`AfterReply` looks for a worker on the home
(:func:`workers.presence.worker_present`, a lock probe of a few microseconds):

- **a worker runs**: the projection catch-up is queued (``queue``, the
  :class:`~workers.queue_port.QueuePort` the cli passes in) and,
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

At session end a session of at least ``mining.min_turns`` turns (user and assistant
messages) is mined (``mining.on_session_end``): by the worker (``mine.session`` is queued),
else here, in the chat's process, before it exits (Ctrl-C skips it; the night's run mines
it then).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from events import DiaristError, Home
from events.config import load_config
from events.types import TURNS
from projections import ProjectionStore

from ..mining.extract import miner_spec
from ..mining.mine import mine
from ..pass_lock import PassRunning
from ..presence import worker_present
from ..queue_port import QueuePort
from ..sync.catch_up import catch_up_after_append
from .background_journal import BackgroundJournal


def backend_spec(backend: Any) -> dict[str, str | None]:
    """What a worker needs to rebuild ``backend``: never its API key."""
    script = getattr(backend, "script", None)
    return {"backend_name": backend.name, "model": backend.model,
            "base_url": getattr(backend, "base_url", None),
            "script": str(script.resolve()) if script is not None else None}


class AfterReply:
    """Hands the work that follows each reply to a worker, or does it in this process."""

    def __init__(self, home: Home, session: Any, store: ProjectionStore, *, shadow: bool,
                 echo: Callable[[str], None], queue: QueuePort,
                 warned: set[str] | None = None) -> None:
        self.home, self.session, self.store, self.shadow = home, session, store, shadow
        self.queue = queue  # the worker's queue (workers.dispatch.QUEUE from the cli)
        self.echo = echo  # where the user sees what happened (the terminal's stderr)
        self.journal: BackgroundJournal | None = None
        # catch-up warnings already shown (each once a session)
        self.warned: set[str] = warned if warned is not None else set()

    def catch_up(self) -> None:
        """Catch memory up in this process; a failure is shown once, never fatal (the turns
        are in the log)."""
        warning = catch_up_after_append(self.store)
        if warning and warning not in self.warned:
            self.warned.add(warning)
            self.echo(f"(warning: {warning})")

    def reply_done(self, reply: Any) -> None:
        """After a reply is shown: catch up (or queue it), then the shadow journal."""
        present = worker_present(self.home)
        if not (present and self.queue.appended(self.home)):
            present = False  # no worker, or its queue is unreachable: do it here
            self.catch_up()  # the next turn recalls what was said
        if not self.shadow or reply.interrupted or self.session.last_turn is None:
            return
        if present and self._enqueue_journal():
            return
        if self.journal is None:
            self.journal = BackgroundJournal(self.home, self.session.backend)
        self.journal.submit(self.session.id, *self.session.last_turn)

    def _enqueue_journal(self) -> bool:
        user_id, assistant_id = self.session.last_turn
        return self.queue.shadow_journal(self.home, self.session.id, user_id, assistant_id,
                                         backend_spec(self.session.backend))

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
            self.catch_up()
        self.queue.appended(self.home)
        self._mine_session()

    def _mine_session(self) -> None:
        """Mine the session that just ended when it is long enough (see the module doc)."""
        config = load_config(self.home)
        if not config.mining.on_session_end:
            return
        turns = self.store.log.read(stream=self.session.id, types=TURNS)
        if len(turns) < config.mining.min_turns:
            return
        if worker_present(self.home) and self.queue.mine_session(self.home, self.session.id):
            return
        self.echo("(mining this session into memory… Ctrl-C to skip)")
        try:
            report = mine(self.home, miner_spec(config), sessions=[self.session.id])
        except KeyboardInterrupt:
            self.echo("(mining skipped; the night's run will do it)")
            return
        except PassRunning:
            return  # a mining pass is running: it, or the next, mines this session
        except DiaristError as exc:
            self.echo(f"(mining skipped: {exc})")
            return
        self.echo(f"  (memory: +{report.new} mined, {report.reinforced} reinforced)")
