"""How much room a home takes, for ``diarist status``."""
from __future__ import annotations

from pathlib import Path

from events import Home


def _size(paths: list[Path]) -> tuple[int, int]:
    files = [p for p in paths if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def disk_usage(home: Home) -> list[tuple[str, int, int]]:
    """(what, bytes, files) of the log, the projections, the queue, the journals (active and
    archived), MEMORY.md, the models and the vector files."""
    root, memory = home.root, home.memory_dir
    parts = [
        ("log", list(root.glob("events.db*"))),
        ("projections", list(root.glob("projections.db*"))),
        ("queue", list(root.glob("queue.db*"))),
        ("journals", list(memory.glob("????-??-??.md"))),
        ("archived journals", list((memory / "archive").glob("????-??-??.md"))),
        ("MEMORY.md", [memory / "MEMORY.md"]),
        ("models", list(home.models_dir.rglob("*")) if home.models_dir.is_dir() else []),
        ("vectors", list((root / "vectors").glob("*")) if (root / "vectors").is_dir() else []),
    ]
    return [(name, *_size(paths)) for name, paths in parts]


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"  # pragma: no cover
