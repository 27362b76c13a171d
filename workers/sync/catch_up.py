"""``diarist sync``: catch every projection up, then embed what has no vector yet."""
from __future__ import annotations

import os
from dataclasses import dataclass

from events import DiaristError, EventLog, Home
from events.health import explain
from events.logger import get_logger
from projections import ProjectionStore, open_store
from projections.embedding import ModelUnavailable, load_embedder
from projections.engine import DEFAULT_BATCH
from projections.vector_cache import active_model, pending_count
from projections.vector_embed import embed_pending
from projections.vector_matrix import refresh_vectors

from ..queue_port import NO_QUEUE, QueuePort
from .progress import ProgressFactory, no_progress


@dataclass(frozen=True)
class SyncReport:
    positions: dict[str, int]      # projection → position after the sync
    moved: dict[str, int]          # projection → events it moved over
    embedded: int | None = None    # texts embedded (None: embeddings skipped)
    model: str | None = None       # the embedding model used
    pending: int = 0               # texts still waiting for a vector


def lag(store: ProjectionStore) -> int:
    return sum(s.lag for s in store.status())


NO_EMBED_ENV = "DIARIST_NO_EMBED"   # set: passes that settle project without embedding


def settle(home: Home, *, queue: QueuePort = NO_QUEUE) -> SyncReport:
    """What a pass runs when it ends (and mining before it starts): :func:`sync`, embedding
    unless ``$DIARIST_NO_EMBED`` is set (as ``diarist sync --no-embed``)."""
    return sync(home, embed=not os.environ.get(NO_EMBED_ENV), queue=queue)


def sync(home: Home, *, batch_size: int = DEFAULT_BATCH, embed: bool = True,
         progress: ProgressFactory = no_progress, queue: QueuePort = NO_QUEUE) -> SyncReport:
    """Run all pending projection work in this process. With ``embed``: make sure the
    embedding model is exported and chosen in the log (the first time this imports torch
    and takes several seconds), then embed every item that has no vector yet. Either way the
    matrix file is refreshed, so vectors of forgotten items leave it. Then ``queue`` is
    pruned."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        with progress(lag(store), "Projecting") as step:
            moved = store.catch_up_all(batch_size=batch_size, progress=step)
        embedded = model = None
        if embed and "vectors" in store.projectors:
            from ..models.embedding import ensure_model  # imports torch only when exporting

            ensure_model(home, log)  # may append an EmbeddingModelChosen: project it too
            for name, n in store.catch_up_all(batch_size=batch_size).items():
                moved[name] += n
            embedded, model = _embed(home, store, progress)
        else:
            refresh_vectors(store)
        report = SyncReport({s.name: s.position for s in store.status()}, moved, embedded,
                            model, pending_count(store))
    from ..maintenance.maintain import prune

    prune(home, queue)  # the catch-ups queued for a worker are done: dropped if none runs
    return report


def _embed(home: Home, store: ProjectionStore, progress: ProgressFactory) -> tuple[int, str]:
    active = active_model(store)
    if active is None:  # ensure_model appended the choice just before: cannot happen
        raise RuntimeError("no embedding model is active after ensure_model")
    pending = pending_count(store)
    if not pending:  # loading the model costs ~0.3 s: only when there is work
        refresh_vectors(store)
        return 0, active.model
    embedder = load_embedder(home, active)
    with progress(pending, "Embedding") as step:
        return embed_pending(store, embedder, progress=step), active.model


def catch_up_after_append(store: ProjectionStore) -> str | None:
    """After an append that is already safe in the log, catch every projection up as far as
    it goes. A failure — an event that cannot be projected, a full disk, a damaged
    projections.db — comes back as a warning to show, not an error: the append stands (a
    user who retried would add it twice), only memory is not up to date yet."""
    try:
        store.catch_up_all()
    except Exception as exc:
        return not_up_to_date(exc, store.home)
    return None


def not_up_to_date(exc: Exception, home: Home) -> str:
    """The warning for a catch-up that failed after an append (see above); re-raises what
    is not a storage problem diarist can explain."""
    error = exc if isinstance(exc, DiaristError) else explain(exc, home)
    if error is None:
        raise exc
    get_logger("diarist.sync").info("catch_up.failed", error=str(error))
    hint = f" ({error.hint})" if error.hint else ""
    return f"saved in the log, but memory is not up to date: {error}{hint}"


def catch_up_one(home: Home, name: str) -> int:
    """Catch one projection up (a worker's ``project.<name>`` task); returns events moved."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        return store.catch_up(name)


def embed_available(home: Home) -> int:
    """Embed what is pending with the model the log chose — never exporting one (that needs
    torch and is ``diarist sync``'s job); returns how many texts. With no model chosen, or
    its files unusable (logged), only the matrix file is refreshed, so vectors of forgotten
    items leave it either way. The model loads once per process, and only when there is
    something to embed."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        active = active_model(store)
        if active is not None and pending_count(store):
            try:
                embedder = load_embedder(home, active)
            except ModelUnavailable as exc:
                get_logger("diarist.worker").warning(
                    "embed.model_unavailable", error=str(exc), hint=exc.hint)
            else:
                return embed_pending(store, embedder)
        refresh_vectors(store)
        return 0
