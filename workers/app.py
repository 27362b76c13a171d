"""The one Huey instance of diarist, bound to a home at run time.

Task modules import ``huey`` from here (huey's docs/imports.rst layout); the consumer entry
point (``diarist worker``) imports this module and ``workers.tasks``. Until :func:`configure`
binds it to a home, the instance uses in-memory storage, so importing diarist never creates
files anywhere.

- ``SqliteHuey`` storage at ``var/queue.db`` by default: nothing else to run.
- ``RedisHuey`` storage (``RedisExpireStorage``: lock TTLs on any Redis) when
  ``DIARIST_REDIS_URL`` or ``queue.redis_url`` in the config names a Redis server, so many
  workers on many machines can share the work.

A second queue, :data:`mining_queue` (``diarist.mining``, same storage), carries only the
stateless ``mine.extract`` tasks: ``diarist worker --mining`` consumes it alone, so a worker
on another machine (with its own model server and no access to the home's files) takes
mining chunks and never a projection catch-up, which must run where the log is.
"""
from __future__ import annotations

from huey import Huey
from huey.storage import MemoryStorage, RedisExpireStorage, SqliteStorage

from events import Home
from events.config import load_config

QUEUE_NAME = "diarist"

huey = Huey(QUEUE_NAME, storage_class=MemoryStorage, results=False, utc=True)
mining_queue = Huey(f"{QUEUE_NAME}.mining", storage_class=MemoryStorage, results=False, utc=True)
_bound: dict[str, object] = {}


def configure(home: Home, *, immediate: bool = False) -> Huey:
    """Bind the queue to ``home`` (SQLite file or Redis); ``immediate`` runs tasks inline
    (tests, and commands that must not depend on a consumer)."""
    config = load_config(home)
    for queue in (huey, mining_queue):
        if config.redis_url:
            queue.storage_class = RedisExpireStorage  # expiring keys on any Redis version
            queue.storage_kwargs = {"url": config.redis_url}
        else:
            home.ensure()
            queue.storage_class = SqliteStorage
            queue.storage_kwargs = {"filename": str(home.queue_db), "timeout": 30}
        queue._immediate = immediate
        queue.immediate_use_memory = False  # immediate mode still needs the lock storage
        queue.storage = queue.create_storage()
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

