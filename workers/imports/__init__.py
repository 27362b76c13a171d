"""What `diarist import` reads: a transcript, or a ChatGPT, Claude or Open WebUI chat export.

:func:`read_export` (:mod:`.detect`) tells the format by the file's content and returns the
checked turns with each conversation's title (:class:`Export`); one module a format
(:mod:`.chatgpt`, :mod:`.claude`, :mod:`.openwebui`) reads one export, :mod:`.common` holds
what they share. Only the branch a person kept and only the words shown in the chat become
turns; refs are the exports' own message ids, so importing a newer export appends only what
is new. ``workers.transcripts.import_transcript`` appends them.
"""
from .common import LABELS, Export
from .detect import read_export

__all__ = ["LABELS", "Export", "read_export"]
