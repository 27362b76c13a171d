"""The headers of the memory block a prompt carries (:mod:`.inject` writes them): known to
recall too, which leaves out a model's reply that copies the block."""
from __future__ import annotations

from events.memory_types import head

HEADER = "[memory context]"
NOTE_HEADER = "[memory note]"
HEAD_TITLES = tuple(kind.heading for kind in head())   # [workspace profile], [project facts]
MEMORIES_TITLE = "[relevant experience]"
KNOWLEDGE_TITLE = "[knowledge]"
BEST_TITLE = "[most relevant]"      # a question's best match, apart (inject.render_block)
OTHERS_TITLE = "[other memories]"
ALL = (HEADER, NOTE_HEADER, *HEAD_TITLES, MEMORIES_TITLE, KNOWLEDGE_TITLE,
       BEST_TITLE, OTHERS_TITLE)
