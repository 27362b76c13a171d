"""The workspace config: one YAML file, ``var/diarist.yaml``, validated on load.

Unknown keys and wrong types are errors that name the key and what is allowed; a missing
file means every default.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from .errors import ConfigError
from .home import Home

REDIS_ENV = "DIARIST_REDIS_URL"


@dataclass(frozen=True)
class QueueConfig:
    redis_url: str | None = None


@dataclass(frozen=True)
class Config:
    queue: QueueConfig = field(default_factory=QueueConfig)

    @property
    def redis_url(self) -> str | None:
        return os.environ.get(REDIS_ENV) or self.queue.redis_url


_SCHEMA: dict[str, dict[str, tuple[type, ...]]] = {
    "queue": {"redis_url": (str, type(None))},
}


def _check_section(name: str, raw: Any, where: str) -> dict[str, Any]:
    allowed = _SCHEMA[name]
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: `{name}` must be a mapping of {sorted(allowed)}")
    for key, value in raw.items():
        if key not in allowed:
            raise ConfigError(
                f"{where}: unknown key `{name}.{key}`; allowed keys: {', '.join(sorted(allowed))}"
            )
        if not isinstance(value, allowed[key]):
            kinds = " or ".join("null" if t is type(None) else t.__name__ for t in allowed[key])
            raise ConfigError(f"{where}: `{name}.{key}` must be {kinds}, got {value!r}")
    return dict(raw)


def load_config(home: Home) -> Config:
    path = home.config_file
    if not path.exists():
        return Config()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    for key in raw:
        if key not in _SCHEMA:
            raise ConfigError(
                f"{path}: unknown top-level key `{key}`; allowed: {', '.join(sorted(_SCHEMA))}"
            )
    queue = _check_section("queue", raw.get("queue"), str(path))
    return Config(queue=QueueConfig(**queue))
