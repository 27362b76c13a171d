"""Onboarding: the workspace profile (four questions on the first chat) and the project facts
detected from the files of the project the chat runs in.

Both become events on the ``profile`` stream: ``ProfileSet`` (the answers, empty ones
skipped) and ``ProjectFactsDetected`` (only when the detected facts differ from the last
detection). The memories projection turns them into ``workspace_profile`` and
``project_fact`` memories, which recall puts at the head of every injection. Skipping every
question appends ``OnboardingDeclined`` instead, so the questions are not asked again
(``diarist chat --onboard`` still asks).

Detection reads files only; it never runs git or any other program, and it never records
credentials: userinfo, query and fragment are dropped from remote URLs, and every value goes
through :func:`projections.secrets.scrub`.
"""
from __future__ import annotations

import configparser
import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from events import EventLog, Home, NewEvent, RecordedEvent, streams
from events.memory_types import PROFILE
from events.types import OnboardingDeclined, ProfileSet, ProjectFactsDetected
from projections.memories import list_memories
from projections.secrets import scrub

MAX_LIST = 10  # dependencies, scripts, requires: the first ten, then "… (+N more)"
ONBOARDING_QUESTIONS = [
    ("name", "What should I call you?"),
    ("role", "What is your role?"),
    ("tools", "Which languages and tools do you use?"),
    ("notes", "Anything else I should always remember?"),
]
SOURCES = ("pyproject.toml", "package.json", "go.mod", "codemeta.json", ".git/config")


# --- detection --------------------------------------------------------------------------------


def _listing(values: list[str]) -> str:
    values = [v for v in values if v]
    shown = ", ".join(values[:MAX_LIST])
    return shown + (f" … (+{len(values) - MAX_LIST} more)" if len(values) > MAX_LIST else "")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, (list, tuple)):
        return _listing([_text(v) for v in value])
    if isinstance(value, dict):  # codemeta: {"name": "Python", ...}
        return _text(value.get("name") or value.get("@id") or value.get("identifier") or "")
    return "" if value is None else str(value)


def _dep_name(spec: str) -> str:
    """``requests>=2; python_version<'3.12'`` → ``requests``."""
    return re.split(r"[\s<>=!~;\[(@]", spec.strip(), maxsplit=1)[0]


def _pyproject(path: Path) -> list[tuple[str, str]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    project = data.get("project")
    if isinstance(project, dict) and project:
        names = [_dep_name(d) for d in project.get("dependencies") or [] if isinstance(d, str)]
        return [("python.name", _text(project.get("name"))),
                ("python.description", _text(project.get("description"))),
                ("python.requires_python", _text(project.get("requires-python"))),
                ("python.dependencies", _listing(names)),
                ("python.scripts", _listing(sorted(project.get("scripts") or {})))]
    poetry = (data.get("tool") or {}).get("poetry")
    if isinstance(poetry, dict):
        deps = dict(poetry.get("dependencies") or {})
        python = deps.pop("python", "")
        return [("python.name", _text(poetry.get("name"))),
                ("python.description", _text(poetry.get("description"))),
                ("python.requires_python", _text(python)),
                ("python.dependencies", _listing(list(deps))),
                ("python.scripts", _listing(sorted(poetry.get("scripts") or {})))]
    return []


def _package_json(path: Path) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    engines = data.get("engines") or {}
    return [("node.name", _text(data.get("name"))),
            ("node.description", _text(data.get("description"))),
            ("node.scripts", _listing(list(data.get("scripts") or {}))),
            ("node.dependencies", _listing(list(data.get("dependencies") or {}))),
            ("node.engines", _listing([f"{k} {v}" for k, v in sorted(dict(engines).items())]))]


def _go_mod(path: Path) -> list[tuple[str, str]]:
    module = version = ""
    requires: list[str] = []
    in_block = False
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if in_block:
            if line == ")":
                in_block = False
            else:
                requires.append(line.split()[0])
        elif line.startswith("module "):
            module = line.split(None, 1)[1].strip().strip('"')
        elif line.startswith("go "):
            version = line.split(None, 1)[1].strip()
        elif line.startswith("require ("):
            in_block = True
        elif line.startswith("require "):
            requires.append(line.split()[1])
    if not module:
        raise ValueError("no module line")
    return [("go.module", module), ("go.version", version), ("go.requires", _listing(requires))]


def _codemeta(path: Path) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return [("codemeta.name", _text(data.get("name"))),
            ("codemeta.description", _text(data.get("description"))),
            ("codemeta.programming_language", _text(data.get("programmingLanguage"))),
            ("codemeta.license", _text(data.get("license")))]


def clean_remote(url: str) -> str:
    """A remote URL without credentials: ``https://user:token@host/x`` → ``https://host/x``.

    HTTP(S) URLs lose their userinfo, query and fragment; other URLs (``ssh://git@host``)
    keep a bare user name but lose any password. scp-like ``git@host:path`` has no password.
    """
    url = url.strip()
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    if parts.scheme in ("http", "https"):
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    user = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    netloc = f"{user}@{host}" if user and ":" not in user else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _git_config(path: Path) -> list[tuple[str, str]]:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read_string(path.read_text(encoding="utf-8"))
    facts = []
    origin = 'remote "origin"'
    if parser.has_option(origin, "url"):
        facts.append(("git.origin", clean_remote(parser.get(origin, "url"))))
    branch = parser.get("init", "defaultbranch", fallback="")
    if not branch:
        branches = sorted(s[len('branch "'):-1] for s in parser.sections()
                          if s.startswith('branch "') and s.endswith('"'))
        preferred = [b for b in ("main", "master", "trunk") if b in branches]
        branch = preferred[0] if preferred else (branches[0] if len(branches) == 1 else "")
    facts.append(("git.default_branch", branch))
    return facts


_READERS = {"pyproject.toml": _pyproject, "package.json": _package_json, "go.mod": _go_mod,
            "codemeta.json": _codemeta, ".git/config": _git_config}


def detect_project_facts(root: Path, warnings: list[str] | None = None) -> list[dict]:
    """Facts about the project in ``root``, in a fixed order: ``{"key", "value", "sources"}``.

    A file that is missing adds nothing; a file that cannot be read or parsed is skipped
    and a line saying why goes to ``warnings`` (when given). Empty values are left out.
    """
    facts: list[dict] = []
    for name in SOURCES:
        path = Path(root) / name
        if not path.is_file():
            continue
        try:
            pairs = _READERS[name](path)
        except (OSError, UnicodeDecodeError, ValueError, TypeError, AttributeError,
                tomllib.TOMLDecodeError, configparser.Error) as exc:
            if warnings is not None:
                warnings.append(f"{name}: skipped ({exc.__class__.__name__}: {exc})"[:300])
            continue
        for key, value in pairs:
            value = scrub(value)
            if value.strip():
                facts.append({"key": key, "value": value, "sources": [name]})
    return facts


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def record_project_facts(log: EventLog, root: Path,
                         warnings: list[str] | None = None) -> RecordedEvent | None:
    """Append ``ProjectFactsDetected`` when the facts differ from the last detection.

    Nothing is appended when nothing is detected or nothing changed. The idempotency key
    ``project-facts:<sha256>`` hashes the canonical JSON of the facts and of the previous
    detection's id, so two chats starting at once append one event, and a project that
    goes back to earlier facts (A → B → A) is still recorded.
    """
    facts = detect_project_facts(root, warnings)
    last = log.read(types=[ProjectFactsDetected], descending=True, limit=1)
    previous = last[0] if last else None
    unchanged = (previous is not None
                 and _canonical(previous.payload.get("facts")) == _canonical(facts))
    if not facts or unchanged:
        return None
    digest = hashlib.sha256(_canonical({"after": previous.id if previous else None,
                                        "facts": facts}).encode("utf-8")).hexdigest()
    appended = log.append_many([NewEvent(stream=streams.PROFILE,
                                         data=ProjectFactsDetected(facts=facts),
                                         idempotency_key=f"project-facts:{digest}")])
    return appended[0] if appended.new else None


# --- the workspace profile --------------------------------------------------------------------


def needs_onboarding(store: Any) -> bool:
    """True when no active ``workspace_profile`` memory exists (``store``: a ProjectionStore
    or its connection)."""
    return not list_memories(getattr(store, "db", store), PROFILE.name)


def onboarding_declined(log: EventLog) -> bool:
    """True once the user has skipped every onboarding question (``OnboardingDeclined``)."""
    return bool(log.read(types=[OnboardingDeclined], stream=streams.PROFILE, limit=1))


def record_declined(log: EventLog) -> RecordedEvent:
    """Append ``OnboardingDeclined``: the questions are not asked again without --onboard."""
    return log.append(OnboardingDeclined(questions=[key for key, _q in ONBOARDING_QUESTIONS]),
                      stream=streams.PROFILE)


def record_profile(log: EventLog, answers: dict[str, Any]) -> RecordedEvent | None:
    """Append ``ProfileSet`` with the non-empty answers; nothing when all are empty."""
    fields = {str(k).strip(): " ".join(str(v).split()) for k, v in answers.items()
              if str(k).strip() and v is not None and str(v).strip()}
    if not fields:
        return None
    return log.append(ProfileSet(fields=fields), stream=streams.PROFILE)


# --- at the start of a chat ---------------------------------------------------------------------


def detect_here(home: Home, log: EventLog, cwd: Path) -> list[str]:
    """Record the project facts of ``cwd`` when the home lies in it (a shared home elsewhere
    would mix projects: see docs/architecture.md); returns warnings about files it could not
    read."""
    warnings: list[str] = []
    if home.root.resolve().is_relative_to(cwd.resolve()):
        record_project_facts(log, cwd.resolve(), warnings)
    return warnings


def should_ask(log: EventLog, store: Any, *, force: bool, interactive: bool) -> bool:
    """Ask the onboarding questions? Only on a workspace without a profile, and then with
    ``--onboard`` (``force``), or in a terminal unless they were all skipped once."""
    if not needs_onboarding(store):
        return False
    return force or (interactive and not onboarding_declined(log))


def record_answers(log: EventLog, answers: dict[str, str]) -> bool:
    """Record the answers as the profile (True), or, when all were skipped, that onboarding
    was declined (False)."""
    if record_profile(log, answers):
        return True
    record_declined(log)
    return False


def set_profile_field(log: EventLog, store: Any, key: str, value: str) -> None:
    """``/memory profile set KEY VALUE``: one profile field, projected at once."""
    record_profile(log, {key: value})
    store.catch_up_all()
