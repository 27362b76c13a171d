"""What every command shares: the ``--home`` option, opening the log and the projections,
and turning diarist's errors into click errors with their hint."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import click

from events import DiaristError, EventLog, Home
from events.db import is_busy
from events.health import explain
from events.home import HOME_ENV, tighten
from projections import ProjectionStore, open_store

from .output import echo, visible

F = TypeVar("F", bound=Callable[..., Any])


def _remember_home(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value:
        ctx.ensure_object(dict)["home"] = value
    return value


def home_option(fn: F) -> F:
    """``--home`` on a command (also settable on the group, or with $DIARIST_HOME)."""
    return click.option(
        "--home", type=click.Path(file_okay=False), expose_value=False, is_eager=True,
        callback=_remember_home,
        help=f"Workspace state directory (default: ${HOME_ENV}, else ./var).",
    )(fn)


_checked: set[Home] = set()


def current_home(*, create: bool = False) -> Home:
    """The home this command works on. It must exist — a mistyped ``--home`` is an error
    that creates nothing — unless ``create`` (the commands that start a home: import,
    remember, chat, worker …): their library call creates it (private, 0700) once the input
    is valid, and the command then says so on stderr. On first use in a process a home with
    looser modes is tightened, with a one-line note on stderr."""
    ctx = click.get_current_context()
    root = ctx.find_root()
    chosen = (ctx.obj or {}).get("home") or (root.obj or {}).get("home")
    home = Home.resolve(chosen)
    if home.exists():
        _tighten_once(home)
        return home
    if not create:
        raise fail(home.missing())

    def note() -> None:
        if home.exists():
            echo(f"(created a new diarist home at {home.root})", err=True)

    ctx.call_on_close(note)
    return home


def _tighten_once(home: Home) -> None:
    if home not in _checked:
        _checked.add(home)
        changed = tighten(home)
        if changed:
            echo(f"diarist: made {home.root} private to you (0700 folders, 0600 files;"
                 f" {changed} changed)", err=True)


def fail(exc: DiaristError) -> click.ClickException:
    message = str(exc)
    if exc.hint:
        message += f"\nHint: {exc.hint}"
    return click.ClickException(visible(message))


def friendly_errors(fn: F) -> F:
    """Library errors become ``Error: … / Hint: …`` with exit code 1, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DiaristError as exc:
            raise fail(exc) from None
        except Exception as exc:
            if is_busy(exc):
                raise click.ClickException(
                    f"the database stayed locked ({exc})\n"
                    "Hint: another diarist process is holding a write; wait and retry."
                ) from None
            explained = _explained(exc)
            if explained is not None:  # a full disk, a read-only home, a damaged database
                raise fail(explained) from None
            raise

    return cast(F, wrapper)


def _explained(exc: Exception) -> DiaristError | None:
    try:
        home = current_home()
    except Exception:  # the home itself is the problem: say what was raised
        return None
    return explain(exc, home)


@contextlib.contextmanager
def opened(home: Home) -> Iterator[tuple[EventLog, ProjectionStore]]:
    """The log and the projections, for reading: read-only (nothing written, not even a
    migration) when the home cannot be written."""
    log = EventLog.reader(home)
    store = open_store(home, log, readonly=log.readonly)
    try:
        yield log, store
    finally:
        store.close()
        log.close()
