"""The projection engine: projectors, their checkpoints, catch-up, rebuild and digests.

A projector is pure: events in, rows out. The engine gives it one transaction per batch in
which it writes its output *and* its new position, so a crash (even kill -9) leaves either
the whole batch applied or none of it; catch-up then resumes after the stored position.
Events a projector does not handle still advance its position. Several processes may catch
up at once: the position is read inside the write transaction, so no event is applied twice.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from events import Event, EventLog, Home, RecordedEvent
from events.db import is_corrupt, write_transaction
from events.errors import NotFound, UnreadableEvent
from events.health import check_database, damaged, explain, read_only, writable
from events.log import connect

from .files import contained, remove_stale_temps, write_file

DEFAULT_BATCH = 1000
# The projections database is read through a memory map (up to this size): a recall reads
# hundreds of pages, each otherwise a read() into SQLite's cache — warm recall at 100,000
# items took ~0.9 ms less (paired, 2 × 200 questions; 10,000: 0.3 ms). The cost: an I/O
# error of the disk under a mapped page ends the process (SIGBUS) instead of raising —
# nothing is lost, the projections are rebuilt from the log. The event log is not mapped.
MMAP_BYTES = 1 << 30
Progress = Callable[[int], None]


class Projector(ABC):
    """One projection. Subclasses set ``name``, ``handles`` (the event classes it applies)
    and ``version`` (bump it when the output's shape changes: a stored older version is
    rebuilt on the next catch-up)."""

    name: ClassVar[str]
    handles: ClassVar[frozenset[type[Event]]]
    version: ClassVar[int] = 1

    @abstractmethod
    def create(self, db: sqlite3.Connection) -> None:
        """Create the output tables (inside the engine's transaction)."""

    @abstractmethod
    def drop(self, db: sqlite3.Connection) -> None:
        """Remove every output (inside the engine's transaction)."""

    @abstractmethod
    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        """Project one handled event: its fields from ``event.data`` (decoded once, typed),
        its metadata (seq, id, time, ref) from ``event``. Must not read the clock or call
        out."""

    @abstractmethod
    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        """The output in a canonical order, for the digest."""

    def check(self, db: sqlite3.Connection) -> None:  # noqa: B027 - optional, not abstract
        """Optional consistency check of derived structures (e.g. an FTS index); the default
        has nothing to check."""

    # --- file outputs (optional) ---------------------------------------------------------
    # A projector that writes files under ``var/memory/`` marks a file dirty (inside its
    # transaction) with :func:`mark_dirty`; after the commit the engine asks it for the file's
    # content and replaces the file atomically. Dirty marks survive a crash, so a file is
    # rewritten on the next catch-up if the process died in between.

    def owns_file(self, name: str) -> bool:
        """Whether a file in the memory folder (its path relative to the folder, with ``/``)
        is this projector's output."""
        return False

    def file_content(self, db: sqlite3.Connection, name: str) -> str | None:
        """The file's content from the projection's rows (None: the file should not exist)."""
        return None

    def expected_files(self, db: sqlite3.Connection) -> Iterable[str]:
        """Every file the rows say should exist (for noticing files deleted by hand)."""
        return ()


# What a projector raises on a payload it cannot use (a malformed event slipped past the
# type check, text SQLite cannot store, a duplicate key): reported with the event's name.
APPLY_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError,
                RecursionError, sqlite3.IntegrityError)


class _ApplyFailed(Exception):
    def __init__(self, index: int, error: UnreadableEvent) -> None:
        super().__init__(str(error))
        self.index, self.error = index, error


def unreadable(event: RecordedEvent, problem: str) -> UnreadableEvent:
    """The error that stops projecting at ``event``: what it is, why, and where things
    stand (``seq`` is kept on the error)."""
    return UnreadableEvent(
        f"{event.label()} cannot be projected: {problem}. Projecting stops before it: the "
        f"projections stay at seq {event.seq - 1} until it is resolved (nothing is skipped).",
        hint=(f"If a newer diarist wrote it, upgrade diarist. If the event is damaged, remove "
              f"its content with `diarist redact {event.id}`, or report it. `diarist events "
              f"show {event.seq}` shows the raw row."),
        seq=event.seq)


def _readable(events: list[RecordedEvent]) -> tuple[list[RecordedEvent],
                                                    UnreadableEvent | None]:
    """The events before the first one this code cannot read, and the error for it."""
    for index, event in enumerate(events):
        if event.problem:
            return events[:index], unreadable(event, event.problem)
    return events, None


def mark_dirty(db: sqlite3.Connection, projector: Projector, name: str) -> None:
    db.execute("INSERT OR IGNORE INTO projection_dirty (name, file) VALUES (?, ?)",
               (projector.name, name))


@dataclass(frozen=True)
class ProjectionStatus:
    name: str
    position: int
    head: int
    version: int

    @property
    def lag(self) -> int:
        return max(self.head - self.position, 0)


class ProjectionStore:
    """``projections.db`` of a home and the projectors that write to it.

    ``path``: another database file (a replay builds into a fresh one, then swaps it in).
    ``readonly``: open without writing anything (a read-only home); a missing file reads as
    empty projections. ``defer_files``: never write the memory folder, keep the dirty marks
    instead (the fresh database of a replay: whoever installs it writes the files).
    """

    def __init__(self, home: Home, log: EventLog, projectors: Sequence[Projector], *,
                 path: Path | None = None, readonly: bool = False,
                 defer_files: bool = False) -> None:
        self.home = home if readonly else home.ensure()
        self.log = log
        self.projectors = {p.name: p for p in projectors}
        self.path = path or home.projections_db
        self.readonly = readonly
        self.defer_files = defer_files or readonly
        self.files_dir = home.memory_dir
        try:
            if readonly:
                self.db = self._open_readonly()
                return
            if not writable(home, [self.path]):
                raise read_only(home, self.path.name)
            # Projections are rebuildable from the log, so NORMAL (durable against a process
            # crash, not necessarily against power loss) is enough here.
            self.db = connect(self.path, synchronous="NORMAL")
            self._create_state_tables()
            # Forgetting must leave no copy behind in free pages.
            self.db.execute("PRAGMA secure_delete=ON")
            self.db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        except sqlite3.DatabaseError as exc:
            if is_corrupt(exc):
                raise damaged(home, self.path,
                              check_database(self.path) or f"damaged ({exc})") from None
            raise explain(exc, home) or exc from None

    def _open_readonly(self) -> sqlite3.Connection:
        """The file read-only, or (none yet) an empty database in memory: no projections."""
        if self.path.exists():
            db = connect(self.path, readonly=True)
            db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            return db
        self.db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._create_state_tables()
        return self.db

    def _create_state_tables(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS projection_state ("
            " name TEXT PRIMARY KEY, position INTEGER NOT NULL, version INTEGER NOT NULL)"
        )
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS projection_dirty ("
            " name TEXT NOT NULL, file TEXT NOT NULL, PRIMARY KEY (name, file))"
        )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ProjectionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def projector(self, name: str) -> Projector:
        try:
            return self.projectors[name]
        except KeyError:
            raise NotFound(f"no projection {name!r}",
                           hint=f"Known projections: {', '.join(self.projectors)}.") from None

    # --- state --------------------------------------------------------------------------

    def _state(self, name: str) -> tuple[int, int] | None:
        row = self.db.execute(
            "SELECT position, version FROM projection_state WHERE name = ?", (name,)
        ).fetchone()
        return (row[0], row[1]) if row else None

    def position(self, name: str) -> int:
        state = self._state(name)
        return state[0] if state else 0

    def status(self) -> list[ProjectionStatus]:
        head = self.log.head()
        out = []
        for name, projector in self.projectors.items():
            state = self._state(name)
            position, version = state if state else (0, projector.version)
            out.append(ProjectionStatus(name, position, head, version))
        return out

    def _prepare(self, projector: Projector) -> int:
        """Inside a write transaction: make sure the output exists at the code's version;
        return the position to resume after."""
        state = self._state(projector.name)
        if state is not None and state[1] == projector.version:
            return state[0]
        self._drop(projector)
        return 0

    def _drop(self, projector: Projector) -> None:
        """Inside a write transaction: empty the output and reset the position. Files the
        projector owns are marked dirty, so they are rewritten (or removed) after commit."""
        projector.drop(self.db)
        projector.create(self.db)
        self.db.execute(
            "INSERT OR REPLACE INTO projection_state (name, position, version) VALUES (?, 0, ?)",
            (projector.name, projector.version),
        )
        for name in self._owned_files(projector):
            mark_dirty(self.db, projector, name)

    def _owned_files(self, projector: Projector) -> list[str]:
        if not self.files_dir.is_dir():
            return []
        names = (p.relative_to(self.files_dir).as_posix() for p in self.files_dir.rglob("*")
                 if p.is_file())
        return sorted(name for name in names if projector.owns_file(name))

    def materialize(self, projector: Projector) -> int:
        """Write every dirty file of ``projector`` from its rows; returns how many (0 with
        ``defer_files``: the marks stay).

        Under the projection database's write lock: the rows a file is rendered from cannot
        change while it is written, and two processes never write the same file at once — so
        the last file written always shows the last committed rows (a writer that rendered
        older rows can no longer rename over a newer file, and no mark set meanwhile is
        cleared unwritten). A crash before the commit leaves the marks, and the next catch-up
        writes the files again."""
        if self.defer_files:
            return 0
        if self.db.execute("SELECT 1 FROM projection_dirty WHERE name = ? LIMIT 1",
                           (projector.name,)).fetchone() is None:
            return 0
        with write_transaction(self.db):
            names = [row[0] for row in self.db.execute(
                "SELECT file FROM projection_dirty WHERE name = ? ORDER BY file",
                (projector.name,))]
            if names:
                remove_stale_temps(self.files_dir)  # left by a writer killed mid-write
            for name in names:
                if not projector.owns_file(name):
                    raise ValueError(f"{projector.name} marked {name!r}, which it does not own")
                path = contained(self.files_dir, name)
                write_file(path, projector.file_content(self.db, name))
                self.db.execute("DELETE FROM projection_dirty WHERE name = ? AND file = ?",
                                (projector.name, name))
        return len(names)

    # --- work ---------------------------------------------------------------------------

    def catch_up(self, name: str, *, upto: int | None = None, batch_size: int = DEFAULT_BATCH,
                 progress: Progress | None = None) -> int:
        """Apply every event after the stored position (up to ``upto``); returns how many
        events the position moved over.

        An event this code cannot read (``RecordedEvent.problem``) or that the projector
        fails on stops the catch-up just before it — everything before it is applied, it and
        what follows are not — with :class:`UnreadableEvent` naming it: never skipped."""
        projector = self.projector(name)
        self.materialize(projector)  # files a crashed run left dirty
        moved = 0
        while True:
            events, stop = self._batch(projector, upto, batch_size)
            self.materialize(projector)
            moved += len(events)
            if events and progress:
                progress(len(events))
            if stop is not None:
                raise stop
            if not events:
                return moved

    def _batch(self, projector: Projector, upto: int | None, limit: int,
               reads: dict[tuple[int, int], list[RecordedEvent]] | None = None,
               ) -> tuple[list[RecordedEvent], UnreadableEvent | None]:
        """One transaction: apply the next ``limit`` events and store the new position.
        Returns the events applied, and why it stopped early (or None). ``reads``: the
        events read so far by position and limit, shared with other projections' batches
        (the log only grows: a read is at worst a little behind, caught up next time)."""
        failure: UnreadableEvent | None = None
        while True:
            try:
                with write_transaction(self.db):
                    position = self._prepare(projector)
                    events = self._read(position, limit, upto, reads)
                    events, stop = _readable(events)
                    for index, event in enumerate(events):
                        if event.cls in projector.handles:
                            self._apply(projector, event, index)
                    if events:
                        self.db.execute(
                            "UPDATE projection_state SET position = ? WHERE name = ?",
                            (events[-1].seq, projector.name),
                        )
                return events, failure or stop
            except _ApplyFailed as failed:
                # The transaction is rolled back: apply what came before the failing event
                # (in a new one), then report it.
                failure, limit = failed.error, failed.index

    def _read(self, position: int, limit: int, upto: int | None,
              reads: dict[tuple[int, int], list[RecordedEvent]] | None) -> list[RecordedEvent]:
        if reads is None:
            return self.log.read(position, limit, upto=upto)
        if (position, limit) not in reads:
            reads[position, limit] = self.log.read(position, limit, upto=upto)
        return reads[position, limit]

    def _apply(self, projector: Projector, event: RecordedEvent, index: int) -> None:
        try:
            projector.apply(self.db, event)
        except APPLY_ERRORS as exc:
            raise _ApplyFailed(index, unreadable(
                event, f"the {projector.name} projection cannot apply it "
                       f"({type(exc).__name__}: {exc})")) from exc

    def catch_up_all(self, *, upto: int | None = None, batch_size: int = DEFAULT_BATCH,
                     progress: Progress | None = None) -> dict[str, int]:
        """Catch every projection up, a batch of each in turn: projections at the same
        position share one read of the log (and each event's decoded data), and what
        several of them derive from an event (a turn's passages) is still cached when the
        next asks. Each batch is its projection's own transaction, as in :meth:`catch_up`.
        One that stops at an event it cannot apply does not keep the others from catching
        up to theirs; the earliest such event is raised."""
        moved: dict[str, int] = {}
        stopped: list[UnreadableEvent] = []
        pending = [self.projector(name) for name in self.projectors]
        for projector in pending:
            self.materialize(projector)  # files a crashed run left dirty
            moved[projector.name] = 0
        while pending:
            reads: dict[tuple[int, int], list[RecordedEvent]] = {}
            going = []
            for projector in pending:
                events, stop = self._batch(projector, upto, batch_size, reads)
                self.materialize(projector)
                moved[projector.name] += len(events)
                if events and progress:
                    progress(len(events))
                if stop is not None:
                    stopped.append(stop)
                elif events:
                    going.append(projector)
            pending = going
        if stopped:
            raise min(stopped, key=lambda exc: exc.seq)
        return moved

    def reset(self, name: str) -> None:
        """Drop a projection's output and set its position to 0, in one transaction."""
        projector = self.projector(name)
        with write_transaction(self.db):
            self._drop(projector)
        self.materialize(projector)

    def rebuild(self, name: str, *, upto: int | None = None, batch_size: int = DEFAULT_BATCH,
                progress: Progress | None = None) -> int:
        self.reset(name)
        return self.catch_up(name, upto=upto, batch_size=batch_size, progress=progress)

    def file_drift(self, name: str) -> list[tuple[str, str]]:
        """Files of the projection that are not what its rows say — edited, deleted or put
        there by hand — as ``(file, "edited" | "missing" | "not from the log")``. Files
        waiting to be written (dirty) are not counted: the next catch-up writes them."""
        projector = self.projector(name)
        if self._state(name) is None:
            return []
        dirty = {row[0] for row in self.db.execute(
            "SELECT file FROM projection_dirty WHERE name = ?", (name,))}
        names = set(projector.expected_files(self.db)) | set(self._owned_files(projector))
        drift = []
        for file in sorted(names - dirty):
            want = projector.file_content(self.db, file)
            path = self.files_dir / file
            have = path.read_bytes() if path.is_file() else None
            if have == (want.encode("utf-8") if want is not None else None):
                continue
            drift.append((file, "missing" if have is None else
                          "not from the log" if want is None else "edited"))
        return drift

    def digest(self, name: str) -> str:
        """sha256 over the projection's canonical content (positions excluded)."""
        projector = self.projector(name)
        hasher = hashlib.sha256(f"{name}:v{projector.version}\n".encode())
        if self._state(name) is not None:
            for row in projector.canonical_rows(self.db):
                hasher.update(json.dumps(list(row), ensure_ascii=False,
                                         separators=(",", ":")).encode())
                hasher.update(b"\n")
            for file in self._owned_files(projector):
                hasher.update(f"file {file}\n".encode())
                hasher.update((self.files_dir / file).read_bytes())
        return hasher.hexdigest()

    def check(self, name: str, db: sqlite3.Connection | None = None) -> None:
        """Run the projection's consistency check (on ``db``, a copy of this database, when
        given: a read-only connection cannot run FTS5's integrity-check)."""
        if self._state(name) is not None:
            self.projector(name).check(db or self.db)
