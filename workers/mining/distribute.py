"""Who extracts a pass's chunks: this process, or any worker of a shared (Redis) queue.

Extraction is stateless — a queued ``mine.extract`` task carries the chunk (its scrubbed
turns) and the :class:`~workers.mining.extract.MinerSpec`, and needs neither the log nor
the projections — so a worker on another machine, with its own model server, can do it.
Only the pass that planned the chunks appends what comes back, in chunk order, so the
SQLite log keeps one writer and the result does not depend on who extracted what.

The protocol over the queue's key-value store (``huey.put_if_empty`` is atomic on Redis
and SQLite alike): every chunk is enqueued; whoever first sets the chunk's *claim* key
extracts it — a worker's task, or the pass itself when it reaches a chunk nobody has
claimed — and a worker puts its extraction under the chunk's *result* key. The pass takes
chunks in order: its own claim means extract here; someone else's means wait for their
result (a worker that fails, or says nothing within ``timeout``, leaves the chunk to the
pass). So no worker at all, or a dead one, only makes the pass slower. At the end the pass
deletes its keys and the tasks still queued for it.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from typing import Any, Protocol

from events.config import LLMConfig
from events.ids import new_ulid
from events.logger import get_logger

from .candidates import Extraction
from .chunks import Chunk
from .extract import MinerSpec, extract, worker_id

POLL_S = 0.05
TIMEOUT_S = 900.0          # a claimed chunk whose result has not come within this is redone
TASK_NAME = "mine.extract"
Enqueue = Callable[[str, dict[str, Any], dict[str, Any]], object]
logger = get_logger("diarist.mining")


class Extractor(Protocol):
    def results(self, chunks: list[Chunk]) -> Iterator[tuple[Chunk, Extraction]]:
        """Each chunk with its extraction, in the chunks' order."""
        ...


class LocalExtractor:
    """Every chunk in this process: one after the other, or ``parallel`` at once.

    A model server with several slots (``serve-model --parallel N``, Ollama's
    ``OLLAMA_NUM_PARALLEL``) decodes their answers together, and on a CPU one step for three
    sequences costs little more than for one: writing, most of a small model's time, is
    shared. Results are still handed over in chunk order, so what is appended — and where a
    killed pass resumes — does not change; extractions in flight when a pass stops are lost
    and done again. An error (the server gone) is raised when its chunk's turn comes."""

    def __init__(self, spec: MinerSpec, llm: LLMConfig | None = None,
                 parallel: int = 1) -> None:
        self.spec, self.llm, self.parallel = spec, llm, max(1, parallel)

    def results(self, chunks: list[Chunk]) -> Iterator[tuple[Chunk, Extraction]]:
        if self.parallel == 1 or not self.spec.uses_model:
            for chunk in chunks:
                yield chunk, extract(chunk, self.spec, self.llm)
            return
        with ThreadPoolExecutor(self.parallel, thread_name_prefix="mine") as pool:
            ahead: deque[tuple[Chunk, Future[Extraction]]] = deque()
            todo = iter(chunks)
            try:
                while True:
                    for chunk in islice(todo, self.parallel - len(ahead)):
                        ahead.append((chunk, pool.submit(extract, chunk, self.spec, self.llm)))
                    if not ahead:
                        return
                    chunk, future = ahead.popleft()
                    yield chunk, future.result()
            finally:
                for _, future in ahead:
                    future.cancel()


def claim_key(pass_id: str, chunk_key: str) -> str:
    return f"mine:{pass_id}:{chunk_key}:claim"


def result_key(pass_id: str, chunk_key: str) -> str:
    return f"mine:{pass_id}:{chunk_key}:result"


def extract_queued(huey: Any, pass_id: str, chunk: dict[str, Any], spec: dict[str, Any],
                   llm: LLMConfig | None = None) -> bool:
    """A worker's share (the ``mine.extract`` task): claim the chunk, extract it, put the
    result for the pass; False when someone else had claimed it."""
    piece = Chunk.from_dict(chunk)
    if not huey.put_if_empty(claim_key(pass_id, piece.key), worker_id()):
        return False
    try:
        extraction = extract(piece, MinerSpec.from_dict(spec), llm)
    except Exception as exc:  # the pass redoes the chunk itself; say why in its log
        logger.warning("mine.extract_failed", chunk=piece.key, error=str(exc))
        huey.put(result_key(pass_id, piece.key), {"error": f"{type(exc).__name__}: {exc}"})
        return True
    huey.put(result_key(pass_id, piece.key), extraction.to_dict())
    return True


class QueueExtractor:
    """Chunks shared with the queue's workers (see the module doc)."""

    def __init__(self, huey: Any, spec: MinerSpec, enqueue: Enqueue,
                 llm: LLMConfig | None = None, timeout: float = TIMEOUT_S) -> None:
        self.huey, self.spec, self.enqueue, self.llm = huey, spec, enqueue, llm
        self.timeout = timeout
        self.pass_id = new_ulid()

    def results(self, chunks: list[Chunk]) -> Iterator[tuple[Chunk, Extraction]]:
        spec = self.spec.to_dict()
        try:
            for chunk in chunks:
                self.enqueue(self.pass_id, chunk.to_dict(), spec)
            for chunk in chunks:
                yield chunk, self._one(chunk)
        finally:
            self._clean(chunks)

    def _one(self, chunk: Chunk) -> Extraction:
        if self.huey.put_if_empty(claim_key(self.pass_id, chunk.key), worker_id()):
            return extract(chunk, self.spec, self.llm)
        deadline = time.monotonic() + self.timeout
        key = result_key(self.pass_id, chunk.key)
        while time.monotonic() < deadline:
            found = self.huey.get(key)
            if found is not None:
                if "error" not in found:
                    return Extraction.from_dict(found)
                logger.warning("mine.worker_failed", chunk=chunk.key, error=found["error"])
                break
            time.sleep(POLL_S)
        logger.info("mine.extract_here", chunk=chunk.key)
        return extract(chunk, self.spec, self.llm)

    def _clean(self, chunks: Iterable[Chunk]) -> None:
        for chunk in chunks:
            self.huey.delete(claim_key(self.pass_id, chunk.key))
            self.huey.delete(result_key(self.pass_id, chunk.key))
        from ..maintenance.queue import drop_tasks

        drop_tasks(self.huey, lambda name, args: name == TASK_NAME and bool(args)
                   and args[0] == self.pass_id)
