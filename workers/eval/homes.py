"""One home per conversation: its transcript imported and synced, as a user's would be.

The embedding model is exported once, not once per home: the files of a home that has them
(the workspace's own ``var/models/``, or the first conversation's home) are hard-linked (or
copied, across file systems) into each new home before its ``sync``, together with their
checksum sidecars, so ``ensure_model`` finds them and only records its choice.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from events import EventLog, Home
from events.transcript import import_file
from projections.embedding import BASE_MODEL, model_files, model_id
from projections.files import write_file

from ..models.embedding import DEFAULT_VARIANT
from ..sync.catch_up import sync
from .dataset import Conversation, safe_file_stem


@dataclass(frozen=True)
class BuiltHome:
    home: Home
    imported: int      # turns appended now (0 when the home was already built)
    embedded: int      # texts embedded now


def model_folder(home: Home) -> Path | None:
    """``var/models/all-MiniLM-L6-v2`` of ``home`` when it holds the default model's files."""
    model_file, tokenizer_file = model_files(home, model_id(DEFAULT_VARIANT))
    return model_file.parent if model_file.is_file() and tokenizer_file.is_file() else None


def share_models(source: Path, home: Home) -> None:
    """Put ``source``'s model files into ``home`` (hard links where possible), unless the
    home has its own already."""
    target = home.models_dir / BASE_MODEL
    if model_folder(home) is not None:
        return
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        destination = target / path.name
        if destination.exists():
            continue
        try:
            os.link(path, destination)
        except OSError:
            shutil.copy2(path, destination)  # keeps the mtime the checksum sidecar is keyed on


def build_home(root: Path, conversation: Conversation, *, embed: bool,
               models: Path | None) -> BuiltHome:
    """``root/<conversation>``: import its transcript and sync (embedding unless ``embed`` is
    False). An existing home is reused: the import appends nothing twice, the sync only
    what is new; the transcript file is replaced whole, so a second run building the same
    homes at once never reads it half-written."""
    home = Home(root / safe_file_stem(conversation.id)).ensure()
    transcript = home.root / "transcript.jsonl"
    write_file(transcript, "".join(conversation.transcript_lines()))
    with EventLog(home.events_db) as log:
        imported = import_file(log, transcript).appended
    if embed and models is not None:
        share_models(models, home)
    report = sync(home, embed=embed)
    return BuiltHome(home, imported, report.embedded or 0)


def night_over(home: Home) -> None:
    """The default night on a built home, as the worker runs it with nothing configured
    (a home that had its night already gets nothing new: every pass resumes)."""
    from ..mining.distribute import LocalExtractor
    from ..schedule import run_night

    run_night(home, lambda _home, spec: LocalExtractor(spec))
