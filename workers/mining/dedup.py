"""Never mine a memory that is already active: the same text (normal form), or a near
duplicate by embedding (:func:`workers.mining.text.says_as_much`: cosine ≥ 0.90 with the
guards on numbers, names and word order, or a shorter statement an active one subsumes; a
fuller statement is mined, and dreaming merges the shorter into it). A person's own note
in the first person ("I'm allergic to penicillin", a ``/remember``) is read as mining
would write it too ("The user is allergic to penicillin", or in the person's name when the
log gives one: "Maya is …"), so what they also said in a chat is no second line.

The embedding check runs only when an embedding model has been chosen (``diarist sync``
exports it): the embedder is loaded on the first candidate that the normal form does not
settle, active memories use the vectors already cached (missing ones are embedded here,
not cached), and each memory kept during the pass is added, so a pass never creates a
duplicate of its own memories either. With no model the check is by normal form only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from events import Home
from projections import ProjectionStore
from projections.memories import USER, list_memories
from projections.memory_vectors import memory_vectors
from projections.speakers import person_name

from .requests import about_speaker
from .statements import third_person
from .text import normal, says_as_much

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class ActiveMemories:
    """The active memories a candidate is compared with, growing as the pass keeps some."""

    def __init__(self, home: Home, store: ProjectionStore, *, embed: bool = True) -> None:
        self.home, self.store, self.embed = home, store, embed
        self.ids: list[str] = []
        self.contents: list[str] = []
        self.by_normal: dict[str, str] = {}
        self.subjects: set[str] = set()   # the subject keys of the current values
        self._restated: set[int] = set()    # rows of a note in the third person: embed anew
        person = person_name(store.db) or USER   # as mining names them (:func:`.chunks.speaker`)
        for memory in list_memories(store.db):
            self._remember(memory.id, memory.content, memory.subject)
            if memory.source == USER and about_speaker(memory.content):
                self._restated.add(len(self.ids))
                self._remember(memory.id, third_person(memory.content, person))
        self._embedder: Any = None
        self._buffer: np.ndarray | None = None   # row i: the vector of self.ids[i]
        self._rows = 0
        self._loaded = False

    def _remember(self, memory_id: str, content: str, subject: str = "") -> None:
        self.ids.append(memory_id)
        if subject:
            self.subjects.add(subject)
        self.contents.append(content)
        self.by_normal.setdefault(normal(content), memory_id)

    def _load(self) -> bool:
        """Load the embedder and the active memories' vectors once; False without a model."""
        if not self._loaded:
            self._loaded = True
            if self.embed:
                self._prepare()
        return self._embedder is not None

    def _prepare(self) -> None:
        import numpy as np

        from projections.embedding import active_embedder

        self._embedder = active_embedder(self.home, self.store)
        if self._embedder is None:
            return
        cached_ids, cached = memory_vectors(self.store.db, self.ids)
        found = dict(zip(cached_ids, cached if cached is not None else [], strict=False))
        missing = [i for i, memory_id in enumerate(self.ids)
                   if memory_id not in found or i in self._restated]
        fresh = self._embedder.embed([self.contents[i] for i in missing]) if missing else None
        dimension = 384 if cached is None else cached.shape[1]
        rows = np.zeros((max(len(self.ids) * 2, 64), dimension), dtype=np.float32)
        for i, memory_id in enumerate(self.ids):
            if memory_id in found and i not in self._restated:
                rows[i] = found[memory_id]
        for j, i in enumerate(missing):
            rows[i] = fresh[j]  # type: ignore[index]
        self._buffer, self._rows = rows, len(self.ids)

    def known(self, content: str, vector: Any = None) -> str | None:
        """The id of an active memory that says ``content`` already, or None."""
        same = self.by_normal.get(normal(content))
        if same is not None or vector is None or self._buffer is None or not self._rows:
            return same
        scores = self._buffer[:self._rows] @ vector
        for i in scores.argsort()[::-1][:5]:
            if says_as_much(self.contents[i], content, float(scores[i])):
                return self.ids[i]
        return None

    def embedder(self) -> Any:
        """The home's embedder (loaded once), or None without a model."""
        return self._embedder if self._load() else None

    def vectors(self, contents: list[str]) -> list[Any]:
        """Embeddings of ``contents`` (Nones without a model); only loads what is needed."""
        if not contents or all(normal(c) in self.by_normal for c in contents) \
                or not self._load():
            return [None] * len(contents)
        return list(self._embedder.embed(contents))

    def add(self, memory_id: str, content: str, vector: Any = None,
            subject: str = "") -> None:
        """A memory the pass keeps: later candidates are compared with it too."""
        self._remember(memory_id, content, subject)
        if self._buffer is None:
            return
        import numpy as np

        if self._rows == len(self._buffer):
            grown = np.zeros((len(self._buffer) * 2, self._buffer.shape[1]), dtype=np.float32)
            grown[:self._rows] = self._buffer
            self._buffer = grown
        if vector is not None:
            self._buffer[self._rows] = vector
        self._rows += 1
