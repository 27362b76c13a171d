"""The instruction: the first sentences of the system prompt, for the model asked.

The chat, the proxy and `diarist eval --answer` all ask with it (``system_prompt`` in
:mod:`.session`), so the eval measures what the chat sends. The memory block is read in
recall's order (the head, then each section most relevant first), and the model is told so.

Each installed model gets the wording measured best for it (docs/benchmarks.md, "Replies,
not refusals"; docs/experiments.md). Told nothing of how to reply, the 0.5B model refused 16
of 40 LoCoMo messages telling it of the user's life ("I'm sorry, but I can't assist with
that"); :data:`GENERAL`'s second sentence stopped that, with memory in the prompt or without
(benchmarks/bench_chat_refusals.py). The 1.5B model answered the eval's questions in more
words with that sentence; with "Reply briefly." alone (:data:`BRIEF`) its F1 rose (+0.025
over two dev samples, paired) and it refused no more than with the sentence. A model the
table does not name (Ollama's, another server's) gets :data:`GENERAL`, the wording that
refuses least.
"""
from __future__ import annotations

from ..models.llama_server import MINING_MODEL

_ROLE = "You are a helpful assistant running on the user's own machine. "
_MEMORY = ("Use the memory context below when it is relevant; "
           "its most relevant lines come first.")
GENERAL = (_ROLE + "The user may tell you about their life or ask you something; "
           "either way, reply briefly. " + _MEMORY)
BRIEF = _ROLE + "Reply briefly. " + _MEMORY

# by the model id the server reports (`diarist serve-model` serves the installed models)
BY_MODEL: dict[str, str] = {MINING_MODEL.alias: BRIEF}


def instruction(model: str | None) -> str:
    """The instruction for ``model`` (the backend's model id; None: not known)."""
    return BY_MODEL.get(model or "", GENERAL)
