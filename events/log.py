"""The EventLog: an append-only SQLite table, the only truth in diarist.

- ``seq`` is the global position (no gaps: rows are never deleted and a rolled-back append
  takes no number); ``(stream, stream_version)`` is unique, so a stale writer fails instead
  of overwriting (optimistic concurrency).
- Triggers reject UPDATE, DELETE and any INSERT that would replace a row, so even a raw
  ``sqlite3`` session cannot change history (``INSERT OR REPLACE`` deletes without firing
  delete triggers, hence the insert trigger).
- WAL with ``synchronous=FULL``: an append that returned survives a crash or power loss.
  Appends take the write lock with ``BEGIN IMMEDIATE``; several processes may append at once.
- An append whose ``idempotency_key`` is already in the log appends nothing and returns the
  original event.
- The one sanctioned exception (``diarist redact``, :meth:`EventLog.rewrite_payloads`): an
  UPDATE that changes only ``payload``, of a row whose ``seq`` and exact new payload are
  named in ``events_redaction`` — a permit written, used and deleted inside the redaction's
  own transaction together with its ``Redacted`` event. An UPDATE without a matching permit
  row, or one that touches any other column, is still rejected.
"""
from __future__ import annotations

import builtins
import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import clock
from .db import (
    connect_readonly,
    is_corrupt,
    is_full,
    is_io_error,
    is_readonly,
    online_backup,
    retry_busy,
    write_transaction,
)
from .errors import ConcurrencyError, DiaristError, NotFound, UnreadableEvent
from .health import (
    check_database,
    damaged,
    disk_full,
    explain,
    out_of_space,
    read_only,
    writable,
)
from .home import Home
from .ids import new_ulid
from .logger import get_logger
from .migrations import MigrationFailed, Migrations
from .types import Event, Payload, Registry, type_names
from .types import registry as default_registry

EventT = TypeVar("EventT", bound=Event)
BUSY_TIMEOUT_S = 60.0
META_KEYS = ("causation_id", "correlation_id", "ref", "idempotency_key")

migrations = Migrations("events", label="the log")


@migrations()
def m001_events(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE events (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            stream TEXT NOT NULL,
            stream_version INTEGER NOT NULL CHECK (stream_version >= 1),
            type TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            occurred_at TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            payload TEXT NOT NULL CHECK (json_valid(payload)),
            meta TEXT NOT NULL CHECK (json_valid(meta)),
            UNIQUE (stream, stream_version)
        )"""
    )
    db.execute(
        "CREATE UNIQUE INDEX events_idempotency ON events (json_extract(meta, '$.idempotency_key'))"
        " WHERE json_extract(meta, '$.idempotency_key') IS NOT NULL"
    )
    db.execute("CREATE INDEX events_type ON events (type, seq)")
    db.execute(
        "CREATE INDEX events_ref ON events (json_extract(meta, '$.ref'))"
        " WHERE json_extract(meta, '$.ref') IS NOT NULL"
    )
    db.execute(
        """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
           BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE rejected'); END"""
    )
    db.execute(
        """CREATE TRIGGER events_no_delete BEFORE DELETE ON events
           BEGIN SELECT RAISE(ABORT, 'events is append-only: DELETE rejected'); END"""
    )
    # INSERT OR REPLACE / REPLACE delete the conflicting row without firing delete triggers
    # (unless recursive_triggers is on), so refuse any insert that collides with a row.
    db.execute(
        """CREATE TRIGGER events_no_replace BEFORE INSERT ON events
           WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq)
             OR EXISTS (SELECT 1 FROM events WHERE id = NEW.id)
             OR EXISTS (SELECT 1 FROM events WHERE stream = NEW.stream
                                               AND stream_version = NEW.stream_version)
             OR EXISTS (SELECT 1 FROM events
                        WHERE json_extract(meta, '$.idempotency_key')
                              = json_extract(NEW.meta, '$.idempotency_key')
                          AND json_extract(meta, '$.idempotency_key') IS NOT NULL)
           BEGIN SELECT RAISE(ABORT, 'events is append-only: INSERT would replace a row'); END"""
    )


@migrations()
def m002_redaction_permit(db: sqlite3.Connection) -> None:
    """The guarded path of ``diarist redact``: see the module doc."""
    db.execute("CREATE TABLE events_redaction (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
    db.execute("DROP TRIGGER events_no_update")
    db.execute(
        """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
           WHEN NOT EXISTS (SELECT 1 FROM events_redaction
                            WHERE seq = OLD.seq AND payload = NEW.payload)
             OR NEW.seq IS NOT OLD.seq OR NEW.id IS NOT OLD.id OR NEW.stream IS NOT OLD.stream
             OR NEW.stream_version IS NOT OLD.stream_version OR NEW.type IS NOT OLD.type
             OR NEW.schema_version IS NOT OLD.schema_version
             OR NEW.occurred_at IS NOT OLD.occurred_at OR NEW.recorded_at IS NOT OLD.recorded_at
             OR NEW.meta IS NOT OLD.meta
           BEGIN SELECT RAISE(ABORT, 'events is append-only: UPDATE rejected'); END"""
    )


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class NewEvent:
    """An event to append. ``expected_version`` is the stream's version before this event
    (0 for a new stream); None appends at the end whatever the version."""

    stream: str
    data: Event
    occurred_at: dt.datetime | None = None
    expected_version: int | None = None
    ref: str | None = None
    causation_id: str | None = None
    correlation_id: str | None = None
    idempotency_key: str | None = None

    def meta(self) -> dict[str, str]:
        values = {k: getattr(self, k) for k in META_KEYS}
        return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class RecordedEvent:
    seq: int
    id: str
    stream: str
    stream_version: int
    type: str
    schema_version: int
    occurred_at: str
    recorded_at: str
    payload: Payload
    meta: dict[str, Any] = field(default_factory=dict)
    registry: Registry = field(default=default_registry, repr=False, compare=False)
    # Why this code cannot read the row (an unknown type, a newer schema_version, a payload
    # that does not fit its type), or None. Such a row is kept as stored (``payload`` raw):
    # reading commands show it with this marker, projecting refuses it.
    problem: str | None = None

    @property
    def data(self) -> Event:
        """The typed event (upcast, then its dataclass): projectors and their helpers read
        fields from it, so mypy checks the names. Decoded once per recorded event and kept
        beside the fields (by hand: ``functools.cached_property`` takes a lock on every first
        read in Python 3.11, 1.6 µs an event)."""
        data: Event | None = self.__dict__.get("_data")
        if data is None:
            if self.problem:
                raise UnreadableEvent(f"{self.label()}: {self.problem}")
            data = self.__dict__["_data"] = self.registry.decode(
                self.type, self.schema_version, self.payload)
        return data

    def data_as(self, cls: builtins.type[EventT]) -> EventT:
        """:attr:`data`, which must be a ``cls`` (a read filtered by that type)."""
        data = self.data
        if not isinstance(data, cls):
            raise TypeError(f"{self.label()} is not a {cls.type_name()}")
        return data

    @property
    def cls(self) -> builtins.type[Event]:
        """The event's class, by its stored type name (raises for a type this code does
        not know)."""
        return self.registry.cls(self.type)

    def label(self) -> str:
        """The event as a person can find it again: seq, id, type and schema_version."""
        return (f"event seq {self.seq} (id {self.id}, type {self.type}, "
                f"schema_version {self.schema_version})")

    @property
    def ref(self) -> str | None:
        return self.meta.get("ref")

    def to_json(self) -> dict[str, Any]:
        """The row as JSON; an unreadable one (see ``problem``) gets a ``problem`` key."""
        out = {
            "seq": self.seq, "id": self.id, "stream": self.stream,
            "stream_version": self.stream_version, "type": self.type,
            "schema_version": self.schema_version, "occurred_at": self.occurred_at,
            "recorded_at": self.recorded_at, "payload": self.payload, "meta": self.meta,
        }
        if self.problem:
            out["problem"] = self.problem
        return out


class Appended(list[RecordedEvent]):
    """The recorded events of a batch; ``new`` counts those this call appended."""

    new: int = 0


_COLUMNS = ("seq, id, stream, stream_version, type, schema_version, occurred_at, recorded_at,"
            " payload, meta")


def connect(path: Path | str, *, readonly: bool = False,
            synchronous: str = "FULL") -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, synchronous=FULL
    unless told otherwise; ``readonly`` writes nothing at all (:func:`connect_readonly`)."""
    if readonly:
        db = connect_readonly(path, timeout=BUSY_TIMEOUT_S)
    else:
        db = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_S,
                             check_same_thread=False)
        _enable_wal(db)
        db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    return db


def _enable_wal(db: sqlite3.Connection) -> None:
    """Switch to WAL, retrying while another process holds a lock: switching a new file's
    journal mode can fail at once with "database is locked" (SQLite skips the busy handler
    there), e.g. when two processes open a fresh home at the same moment."""
    def switch() -> None:
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise sqlite3.OperationalError(
                f"database is locked (could not switch to WAL, journal mode {mode})")

    retry_busy(switch, timeout=BUSY_TIMEOUT_S)


class EventLog:
    """The log at ``path``; migrations run on open, so old and new files take one path.

    A log written by a newer diarist is refused before anything is written (:class:`NewerHome`);
    an older one is backed up (``backups/events-v<N>-<time>.db`` beside it) and then migrated.
    ``readonly`` opens without writing anything — no migration, no WAL switch — for reading
    a read-only home; appends then fail with :class:`ReadOnlyHome`.
    """

    def __init__(self, path: Path | str, registry: Registry = default_registry, *,
                 readonly: bool = False) -> None:
        self.path = Path(path)
        self.registry = registry
        self.readonly = readonly
        self.backups: list[Path] = []  # taken before a migration by this open
        if readonly:
            self.db = self._open_readonly()
            return
        self._ensure_writable()
        if self.path.exists() and self.path.stat().st_size:
            self._refuse_newer()
        try:
            self.db = connect(self.path)
        except sqlite3.DatabaseError as exc:
            raise self._explained(exc) from None
        try:
            applied = migrations.apply(self.db, before=self._backup_before_migrating)
        except BaseException as exc:
            self.db.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise self._explained(exc) from None
            if isinstance(exc, MigrationFailed) and self.backups:
                exc.hint = (f"A copy of the log from before the upgrade is in {self.backups[-1]}. "
                            + MigrationFailed.hint)
            raise
        if applied and self.backups:
            get_logger("diarist.log").warning(
                "log.upgraded", schema=migrations.version, steps=",".join(applied),
                backup=str(self.backups[-1]))

    @classmethod
    def reader(cls, home: Home) -> EventLog:
        """The home's log opened for reading: read-only when the home cannot be written
        (a read-only disk or folder), else as usual."""
        return cls(home.events_db, readonly=not writable(home))

    def _ensure_writable(self) -> None:
        home = Home(self.path.parent)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_readonly(exc):
                raise read_only(home, self.path.parent.name, exc.strerror) from None
            raise
        if not writable(home, [self.path]):
            raise read_only(home, self.path.name)

    def _refuse_newer(self) -> None:
        """A newer diarist's log is refused by a connection that writes nothing."""
        try:
            peek = connect_readonly(self.path)
        except sqlite3.DatabaseError as exc:
            raise self._explained(exc) from None
        try:
            migrations.check(peek, self.path)
        except sqlite3.DatabaseError as exc:
            raise self._explained(exc) from None
        finally:
            peek.close()

    def _open_readonly(self) -> sqlite3.Connection:
        if not self.path.exists():
            raise NotFound(f"no event log at {self.path}",
                           hint="Check --home (or $DIARIST_HOME); a read-only home cannot "
                                "start a new log.")
        try:
            db = connect(self.path, readonly=True)
            version = migrations.check(db, self.path)
        except sqlite3.DatabaseError as exc:
            raise self._explained(exc) from None
        if version < migrations.version:
            db.close()
            raise read_only(Home(self.path.parent), self.path.name,
                            f"it needs an upgrade to schema {migrations.version} first")
        return db

    def _explained(self, exc: sqlite3.DatabaseError) -> Exception:
        home = Home(self.path.parent)
        if is_io_error(exc) and out_of_space(self.path):
            return disk_full(self.path, exc)
        if is_corrupt(exc):
            return damaged(home, self.path, check_database(self.path) or f"damaged ({exc})")
        return explain(exc, home) or exc

    def _backup_before_migrating(self, version: int) -> None:
        """Before an existing log is migrated: a consistent copy of it, as it was, in
        ``backups/events-v<version>-<time>.db`` beside it."""
        folder = self.path.parent / "backups"
        stamp = clock.now().strftime("%Y%m%dT%H%M%S%fZ")
        target = folder / f"events-v{version}-{stamp}.db"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            online_backup(self.db, target)
        except (OSError, sqlite3.OperationalError) as exc:
            if is_full(exc):
                raise disk_full(target, exc) from None
            raise
        self.backups.append(target)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ------------------------------------------------------------------------

    def append(self, data: Event, *, stream: str, **options: Any) -> RecordedEvent:
        """Append one event (see :class:`NewEvent` for the options)."""
        return self.append_many([NewEvent(stream=stream, data=data, **options)])[0]

    def append_many(self, batch: Sequence[NewEvent], *,
                    check: Callable[[], None] | None = None) -> Appended:
        """Append a batch in one transaction: all of it, or (on any error) none of it.

        Returns one recorded event per input, in order; an input whose idempotency key is
        already in the log (or earlier in the batch) gets the original back. ``check`` runs
        first under the write lock (what it reads cannot change before the batch is in);
        raising refuses the whole batch.
        """
        if not batch:
            return Appended()
        if self.readonly:
            raise read_only(Home(self.path.parent), self.path.name)
        recorded_at = clock.now_iso()
        out = Appended()
        try:
            with write_transaction(self.db):
                if check is not None:
                    check()
                versions: dict[str, int] = {}
                seen_keys: dict[str, RecordedEvent] = {}
                for new in batch:
                    event, created = self._append_one(new, recorded_at, versions, seen_keys)
                    out.append(event)
                    out.new += created
        except sqlite3.OperationalError as exc:
            if is_full(exc):  # rolled back: the log is as it was
                raise disk_full(self.path, exc) from None
            if is_readonly(exc):
                raise read_only(Home(self.path.parent), self.path.name, exc) from None
            raise
        return out

    def _append_one(self, new: NewEvent, recorded_at: str, versions: dict[str, int],
                    seen_keys: dict[str, RecordedEvent]) -> tuple[RecordedEvent, bool]:
        key = new.idempotency_key
        if key is not None:
            original = seen_keys.get(key) or self._by_idempotency_key(key)
            if original is not None:
                return original, False
        type_name = new.data.type_name()
        cls = self.registry.cls(type_name)
        if not isinstance(new.data, cls):
            raise TypeError(f"{type_name} is not the registered class for that name")
        if not new.stream:
            raise ValueError("an event needs a stream")
        current = versions.get(new.stream)
        if current is None:
            current = self._stream_version(new.stream)
        if new.expected_version is not None and new.expected_version != current:
            raise ConcurrencyError(
                f"stream {new.stream!r} is at version {current}, expected {new.expected_version}"
            )
        version = current + 1
        occurred = clock.to_iso(new.occurred_at) if new.occurred_at else recorded_at
        payload, meta = new.data.to_payload(), new.meta()
        row = (
            new_ulid(), new.stream, version, type_name, cls.schema_version, occurred,
            recorded_at, dumps(payload), dumps(meta),
        )
        try:
            cursor = self.db.execute(
                "INSERT INTO events (id, stream, stream_version, type, schema_version,"
                " occurred_at, recorded_at, payload, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        except UnicodeEncodeError:  # a lone surrogate cannot be written as UTF-8
            raise DiaristError(
                f"{type_name} holds text that is not valid Unicode (a lone surrogate)",
                hint="Remove the broken character and try again; nothing was appended.",
            ) from None
        versions[new.stream] = version
        event = RecordedEvent(
            seq=_rowid(cursor), id=row[0], stream=new.stream, stream_version=version,
            type=type_name, schema_version=cls.schema_version, occurred_at=occurred,
            recorded_at=recorded_at, payload=payload, meta=meta, registry=self.registry,
        )
        if key is not None:
            seen_keys[key] = event
        return event, True

    def rewrite_payloads(self, payloads: dict[int, Payload], record: NewEvent) -> RecordedEvent:
        """``diarist redact``'s one change of history: in ONE transaction, replace the stored
        payload of each event ``seq`` in ``payloads`` (as stored: not upcast) and append
        ``record`` (its ``Redacted`` event) — both, or on any error neither. Each UPDATE
        passes the append-only trigger only through its permit row (module doc), which is
        deleted before the commit."""
        recorded_at = clock.now_iso()
        self.db.execute("PRAGMA secure_delete=ON")  # freed cells and pages are zeroed
        with write_transaction(self.db):
            for seq, payload in sorted(payloads.items()):
                text = dumps(payload)
                self.db.execute("INSERT INTO events_redaction (seq, payload) VALUES (?, ?)",
                                (seq, text))
                changed = self.db.execute("UPDATE events SET payload = ? WHERE seq = ?",
                                          (text, seq)).rowcount
                self.db.execute("DELETE FROM events_redaction WHERE seq = ?", (seq,))
                if changed != 1:
                    raise NotFound(f"no event at seq {seq}")
            event, _ = self._append_one(record, recorded_at, {}, {})
        return event

    # --- reading ------------------------------------------------------------------------

    def stored_payload(self, seq: int) -> Payload:
        """The payload of the event at ``seq`` as stored (not upcast)."""
        row = self.db.execute("SELECT payload FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise NotFound(f"no event at seq {seq}", hint="List events with `diarist events`.")
        return json.loads(row[0])

    def stored_payloads(self, containing: Sequence[str] = ()) -> Iterator[tuple[int, Payload]]:
        """``(seq, payload as stored — not upcast)`` of every event whose stored JSON holds
        any of ``containing`` (every event when empty), oldest first."""
        where = " OR ".join("instr(payload, ?) > 0" for _ in containing) or "1"
        for seq, payload in self.db.execute(
                f"SELECT seq, payload FROM events WHERE {where} ORDER BY seq", list(containing)):
            yield seq, json.loads(payload)

    def read(self, after: int = 0, limit: int | None = None, *, upto: int | None = None,
             types: Iterable[type[Event] | str] | None = None, stream: str | None = None,
             descending: bool = False) -> list[RecordedEvent]:
        """Events with ``seq > after`` (and ``<= upto``), oldest first unless ``descending``;
        of ``types`` only (event classes, or names as a user gives them) when given."""
        where, args = ["seq > ?"], list[object]([after])
        if upto is not None:
            where.append("seq <= ?")
            args.append(upto)
        if types:
            names = type_names(types)
            where.append(f"type IN ({','.join('?' * len(names))})")
            args.extend(names)
        if stream is not None:
            where.append("stream = ?")
            args.append(stream)
        sql = f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY seq"
        sql += " DESC" if descending else ""
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [self._row_to_event(row) for row in self.db.execute(sql, args)]

    def iter_all(self, batch: int = 5000, upto: int | None = None) -> Iterator[RecordedEvent]:
        after = 0
        while True:
            events = self.read(after, batch, upto=upto)
            if not events:
                return
            yield from events
            after = events[-1].seq

    def get(self, key: str | int) -> RecordedEvent:
        """One event by seq, ULID or ref."""
        text = str(key)
        if text.isdigit():
            row = self.db.execute(f"SELECT {_COLUMNS} FROM events WHERE seq = ?",
                                  (int(text),)).fetchone()
        else:
            row = self.db.execute(f"SELECT {_COLUMNS} FROM events WHERE id = ?",
                                  (text.upper(),)).fetchone()
            row = row or self.db.execute(
                f"SELECT {_COLUMNS} FROM events WHERE json_extract(meta, '$.ref') = ?"
                " ORDER BY seq LIMIT 1", (text,)).fetchone()
        if row is None:
            raise NotFound(f"no event {text!r}", hint="List events with `diarist events`.")
        return self._row_to_event(row)

    def head(self) -> int:
        """The last ``seq`` (0 for an empty log)."""
        return self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0]

    def latest_occurred(self, types: Sequence[type[Event] | str]) -> str | None:
        """The newest ``occurred_at`` among events of ``types`` (None when there is none):
        the log's own "now", which an imported history keeps from when it was said."""
        marks = ", ".join("?" * len(types))
        return self.db.execute(f"SELECT MAX(occurred_at) FROM events WHERE type IN ({marks})",
                               type_names(types)).fetchone()[0]

    def stream_version(self, stream: str) -> int:
        return self._stream_version(stream)

    def streams(self) -> list[tuple[str, int]]:
        return self.db.execute(
            "SELECT stream, MAX(stream_version) FROM events GROUP BY stream ORDER BY MIN(seq)"
        ).fetchall()

    def _stream_version(self, stream: str) -> int:
        return self.db.execute(
            "SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream = ?", (stream,)
        ).fetchone()[0]

    def by_idempotency_keys(self, keys: Sequence[str]) -> dict[str, RecordedEvent]:
        """The events of those idempotency keys that are in the log, by key."""
        if not keys:
            return {}
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM events WHERE json_extract(meta, '$.idempotency_key')"
            f" IN ({','.join('?' * len(keys))})", list(keys)).fetchall()
        events = [self._row_to_event(row) for row in rows]
        return {e.meta["idempotency_key"]: e for e in events}

    def _by_idempotency_key(self, key: str) -> RecordedEvent | None:
        row = self.db.execute(
            f"SELECT {_COLUMNS} FROM events WHERE json_extract(meta, '$.idempotency_key') = ?",
            (key,),
        ).fetchone()
        return self._row_to_event(row) if row else None

    def _row_to_event(self, row: Sequence[Any]) -> RecordedEvent:
        (seq, id_, stream, version, type_name, schema_version, occurred, recorded, payload,
         meta) = row
        payload = json.loads(payload) if isinstance(payload, str) else payload
        schema_version, payload, problem = self.registry.problem(type_name, schema_version,
                                                                 payload)
        meta = json.loads(meta) if isinstance(meta, str) else meta
        if not isinstance(meta, dict):
            problem = problem or f"the meta is a JSON {type(meta).__name__}, not an object"
            meta = {"raw": meta}
        return RecordedEvent(
            seq=seq, id=id_, stream=stream, stream_version=version, type=type_name,
            schema_version=schema_version, occurred_at=occurred, recorded_at=recorded,
            payload=payload, meta=meta, registry=self.registry, problem=problem,
        )


__all__ = ["Appended", "EventLog", "NewEvent", "RecordedEvent", "connect", "dumps"]


def _rowid(cursor: sqlite3.Cursor) -> int:
    """The rowid an INSERT just gave (always set after a successful single-row insert)."""
    if cursor.lastrowid is None:
        raise RuntimeError("INSERT returned no rowid")
    return cursor.lastrowid
