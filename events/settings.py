"""The one precedence rule for a setting: command line, environment, config file, default."""
from __future__ import annotations

import os
from typing import TypeVar, cast

T = TypeVar("T")


def setting(flag: T | None, env: str | None, file_value: T | None,
            default: T | None = None) -> T | None:
    """One setting, by the one precedence rule: the command-line value, else the environment
    variable ``env`` (a string; unset or empty means not set), else the config file's value,
    else ``default``. ``None`` (and an empty string) means "not given" at every level; a
    ``0`` or ``False`` is a value."""
    for value in (flag, os.environ.get(env) if env else None, file_value):
        if value is not None and value != "":
            return cast(T, value)  # an environment variable only backs a str setting
    return default
