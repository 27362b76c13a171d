"""The worker side: the Huey app and its tasks (thin wrappers over projections)."""
from .app import configure, huey
from .tasks import PROJECTION_TASKS, enqueue_catch_up

__all__ = ["PROJECTION_TASKS", "configure", "enqueue_catch_up", "huey"]
