"""The one Huey instance of diarist, bound to a home at run time.

Task modules import ``huey`` from here (huey's docs/imports.rst layout); the consumer entry
point (``diarist worker``) imports this module and ``workers.tasks``. Until :func:`configure`
binds it to a home, the instance uses in-memory storage, so importing diarist never creates
files anywhere.

- ``SqliteHuey`` storage at ``var/queue.db`` by default: nothing else to run.
- ``RedisHuey`` storage (``RedisExpireStorage``: lock TTLs on any Redis) when
  ``DIARIST_REDIS_URL`` or ``queue.redis_url`` in the config names a Redis server, so many
  workers on many machines can share the work.
"""
from __future__ import annotations

from huey import Huey
from huey.storage import MemoryStorage, RedisExpireStorage, SqliteStorage

from events import Home
from events.config import load_config

QUEUE_NAME = "diarist"

huey = Huey(QUEUE_NAME, storage_class=MemoryStorage, results=False, utc=True)
_bound: dict[str, object] = {}


def configure(home: Home, *, immediate: bool = False) -> Huey:
    """Bind the queue to ``home`` (SQLite file or Redis); ``immediate`` runs tasks inline
    (tests, and commands that must not depend on a consumer)."""
    config = load_config(home)
    if config.redis_url:
        huey.storage_class = RedisExpireStorage  # expiring keys on any Redis version
        huey.storage_kwargs = {"url": config.redis_url}
    else:
        home.ensure()
        huey.storage_class = SqliteStorage
        huey.storage_kwargs = {"filename": str(home.queue_db), "timeout": 30}
    huey._immediate = immediate
    huey.immediate_use_memory = False  # immediate mode still needs the lock storage
    huey.storage = huey.create_storage()
    _bound["home"] = home
    return huey


def bound_home() -> Home:
    """The home the queue was configured for; a task runs against it."""
    home = _bound.get("home")
    if not isinstance(home, Home):
        # A consumer process started by huey's own tooling: fall back to the environment.
        home = Home.resolve()
        configure(home)
    return home

