"""The workspace config: one YAML file, ``var/diarist.yaml``, validated on load.

Unknown keys and wrong values are errors that name the key and what is allowed; a missing
file (or key) means the default.

```yaml
memory:
  budget_pct: 0.25          # share of the model's context window for injected memory
  top_k: 16                 # scored items at most (after profile, project facts, MEMORY.md)
  inject_on_start: true     # inject memory when a chat session starts
  shadow_journal: false     # after each chat turn, ask the model for new facts (one more
                            # LLM call per turn: off by default, see docs/architecture.md)
  tools: true               # let the chat model call remember / memory_search / memory_get
  turn_recall: true         # recall for each message; attach what is new as a memory note
  first_note: true          # ... the first message too, capped at half the message's own
                            # size so its reply waits for little (a short one gets none);
                            # false: never
  rolling_summary:
    enabled: true
    warn_at_pct: 0.80       # compress older turns when history reaches this share
    keep_turns: 6           # turns kept verbatim when compressing
queue:
  redis_url: null           # or $DIARIST_REDIS_URL; default: SQLite at var/queue.db
llm:
  backend: null             # ollama | openai | scripted for `diarist chat` (null: ollama)
  model: null               # the model name (null: the server's first model)
  base_url: null            # server URL; $OLLAMA_HOST / $DIARIST_OPENAI_BASE_URL win over it
  api_key: null             # OpenAI-compatible servers; $DIARIST_OPENAI_API_KEY wins over it.
                            # Prefer the environment variable: this file is plain text.
  max_reply_tokens: null    # cap on each chat reply (null: the server's default); a cap
                            # bounds a reply's latency on a slow CPU
  temperature: null         # sampling temperature for chat replies (null: the server's)
  timeout: null             # seconds the server may stay silent, before its first token
                            # too (null: 120); metadata requests wait at most 10 s
  mining_model: null        # the model for mining and consolidation (null: llm.model), e.g.
                            # qwen2.5-coder-1.5b, so the chat can stay on a faster one
  mining_base_url: null     # its server (null: the chat's); $DIARIST_MINING_BASE_URL wins
mining:
  nightly: true             # mine, dream and consolidate every night in `diarist worker`
  at: "02:00"               # local time the night's run may start (HH:MM, 24 h)
  on_session_end: true      # mine a session when it ends ...
  min_turns: 10             # ... if it had at least this many turns
  chunk_tokens: null        # turns per model call, in estimated tokens (null: from its window)
  idle_hours: 6             # a session that never ended counts as ended after this long
  parallel: 1               # chunks extracted at once: match `serve-model --parallel N`
  json_schema: false        # send the answer's JSON schema (a grammar); false: parse leniently
dreaming:
  half_life_days: 90        # relevancy of a mined memory halves when unsaid this long
  floor: 0.1                # below this relevancy a mined memory is archived
maintenance:
  enabled: true             # archive old journals and prune the queue in `diarist worker`
  every_hours: 6
  archive_after_days: 90    # journals older than this move to memory/archive/
```
"""
from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .errors import ConfigError
from .home import Home
from .settings import setting

if TYPE_CHECKING:  # pragma: no cover
    import yaml

REDIS_ENV = "DIARIST_REDIS_URL"

# A value check: None when the value is allowed, else what is allowed ("an integer from 1 to 9").
Check = Callable[[Any], "str | None"]



@dataclass(frozen=True)
class RollingSummaryConfig:
    enabled: bool = True
    warn_at_pct: float = 0.80
    keep_turns: int = 6


@dataclass(frozen=True)
class MemoryConfig:
    budget_pct: float = 0.25
    top_k: int = 16
    inject_on_start: bool = True
    # Off by default: on a Pi-class CPU the extra call costs seconds per turn and competes
    # with the chat for the one loaded model, so the next reply would wait for it.
    shadow_journal: bool = False
    tools: bool = True  # the chat model may call the memory tools (`diarist chat --no-tools`)
    turn_recall: bool = True  # a memory note for each message (workers/chat/memory.py)
    first_note: bool = True  # ... the first message of a session too (see docs: first token)
    rolling_summary: RollingSummaryConfig = field(default_factory=RollingSummaryConfig)


@dataclass(frozen=True)
class QueueConfig:
    redis_url: str | None = None


@dataclass(frozen=True)
class LLMConfig:
    backend: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never in a repr, a log or an event
    max_reply_tokens: int | None = None
    temperature: float | None = None
    timeout: float | None = None
    mining_model: str | None = None
    mining_base_url: str | None = None


@dataclass(frozen=True)
class MiningConfig:
    nightly: bool = True
    at: str = "02:00"
    on_session_end: bool = True
    min_turns: int = 10
    chunk_tokens: int | None = None
    idle_hours: float = 6
    parallel: int = 1
    json_schema: bool = False


@dataclass(frozen=True)
class DreamingConfig:
    # A separate knob from recall's weights.FRESHNESS_HALF_LIFE_DAYS (a ranking weight by age).
    half_life_days: float = 90
    floor: float = 0.1


@dataclass(frozen=True)
class MaintenanceConfig:
    enabled: bool = True
    every_hours: float = 6
    archive_after_days: int = 90


@dataclass(frozen=True)
class Config:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    queue: QueueConfig = field(default_factory=QueueConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    mining: MiningConfig = field(default_factory=MiningConfig)
    dreaming: DreamingConfig = field(default_factory=DreamingConfig)
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)

    @property
    def redis_url(self) -> str | None:
        return setting(None, REDIS_ENV, self.queue.redis_url)


def _number(value: Any) -> bool:
    """A real, finite number (YAML's ``.nan`` and ``.inf`` are not; nor is ``true``)."""
    return (not isinstance(value, bool) and isinstance(value, int | float)
            and math.isfinite(value))


def _fraction(low: float, high: float, *, low_open: bool = True) -> Check:
    def check(value: Any) -> str | None:
        if not _number(value):
            return f"a number in ({low}, {high}]"
        if (value <= low if low_open else value < low) or value > high:
            return f"a number in ({low}, {high}]"
        return None
    return check


def _int_range(low: int, high: int) -> Check:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"an integer from {low} to {high}"
        return None
    return check


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _or_null(check: Check) -> Check:
    def nullable(value: Any) -> str | None:
        problem = None if value is None else check(value)
        return f"null or {problem}" if problem else None
    return nullable


def _number_range(low: float, high: float) -> Check:
    def check(value: Any) -> str | None:
        if not _number(value) or not low <= value <= high:
            return f"a number from {low} to {high}"
        return None
    return check


def _one_of(*choices: str) -> Check:
    def check(value: Any) -> str | None:
        return None if value in choices else f"one of {', '.join(choices)}"
    return check


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) and value.strip() else "a non-empty string"


def _http_url(value: Any) -> str | None:
    """``http://host[:port][/path]``; any host name, with or without a dot (``http://a``,
    ``http://gpu-box:8080``)."""
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        try:
            parts = urllib.parse.urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError:
            return "an http:// or https:// URL"
        if parts.hostname:
            return None
    return "an http:// or https:// URL"


def _secret(value: Any) -> str | None:
    return None if isinstance(value, str) and value.strip() else "a non-empty string"


def _clock_time(value: Any) -> str | None:
    if isinstance(value, str) and re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", value):
        return None
    return 'a time of day "HH:MM" (24 h, quoted)'


def _url_or_null(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and value.startswith(("redis://", "rediss://", "unix://"))):
        return None
    return "null or a redis:// URL"


_CHECKS: dict[str, Any] = {
    "memory.budget_pct": _fraction(0.0, 1.0),
    "memory.top_k": _int_range(1, 1000),
    "memory.inject_on_start": _boolean,
    "memory.shadow_journal": _boolean,
    "memory.tools": _boolean,
    "memory.turn_recall": _boolean,
    "memory.first_note": _boolean,
    "memory.rolling_summary.enabled": _boolean,
    "memory.rolling_summary.warn_at_pct": _fraction(0.0, 1.0),
    "memory.rolling_summary.keep_turns": _int_range(0, 1000),
    "queue.redis_url": _url_or_null,
    "llm.backend": _or_null(_one_of("ollama", "openai", "scripted")),
    "llm.model": _or_null(_text),
    "llm.base_url": _or_null(_http_url),
    "llm.api_key": _or_null(_secret),
    "llm.max_reply_tokens": _or_null(_int_range(1, 32768)),
    "llm.temperature": _or_null(_number_range(0.0, 2.0)),
    "llm.timeout": _or_null(_number_range(0.1, 86_400.0)),
    "llm.mining_model": _or_null(_text),
    "llm.mining_base_url": _or_null(_http_url),
    "mining.nightly": _boolean,
    "mining.at": _clock_time,
    "mining.on_session_end": _boolean,
    "mining.min_turns": _int_range(1, 100_000),
    "mining.chunk_tokens": _or_null(_int_range(128, 100_000)),
    "mining.idle_hours": _number_range(0.0, 10_000.0),
    "mining.parallel": _int_range(1, 16),
    "mining.json_schema": _boolean,
    "dreaming.half_life_days": _number_range(1.0, 100_000.0),
    "dreaming.floor": _number_range(0.0, 1.0),
    "maintenance.enabled": _boolean,
    "maintenance.every_hours": _number_range(0.1, 10_000.0),
    "maintenance.archive_after_days": _int_range(1, 100_000),
}


def _build(cls: type, raw: Any, prefix: str, where: str) -> Any:
    if raw is None:
        return cls()
    names = {f.name: f for f in fields(cls)}
    if not isinstance(raw, dict):
        what = f"`{prefix}`" if prefix else "the top level"
        raise ConfigError(f"{where}: {what} must be a mapping with keys {', '.join(names)}")
    values = {}
    for key, value in raw.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in names:
            raise ConfigError(f"{where}: unknown key `{path}`; allowed keys: {', '.join(names)}")
        section: Any = names[key].default_factory  # a nested section's dataclass, or MISSING
        if is_dataclass(section):
            values[key] = _build(cast(type, section), value, path, where)
            continue
        problem = _CHECKS[path](value)
        if problem:
            shown = "a value (not shown: it is a secret)" if path == "llm.api_key" else repr(value)
            raise ConfigError(f"{where}: `{path}` must be {problem}, got {shown}")
        values[key] = value
    return cls(**values)


def load_config(home: Home) -> Config:
    path = home.config_file
    if not path.exists():
        return Config()
    import yaml  # here: most homes have no config file, and a one-shot command starts faster

    try:
        raw = yaml.safe_load(_read_text(path))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({_yaml_problem(exc)})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid YAML (nested too deeply)") from None
    return _build(Config, raw or {}, "", str(path))


def _read_text(path: Path) -> str:
    """The config file as text: UTF-8 (a byte-order mark is allowed), else a clear error."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a YAML file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{path}: is UTF-16 text; diarist reads UTF-8",
                          hint="Save it as UTF-8 (iconv -f UTF-16 -t UTF-8 diarist.yaml > "
                               "new.yaml, then rename new.yaml to diarist.yaml).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start + 1})",
                          hint="Save the config file as UTF-8 text.") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong and where (line and column)."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"
