"""``diarist proxy``: an OpenAI-compatible endpoint with memory, in front of any
OpenAI-compatible server.

A client (Open WebUI, the ``openai`` library, an editor plugin) talks to the proxy as to its
model server. For each chat completion the proxy recognises the conversation from the
messages the client resends (:mod:`.conversations`), records the new user turn and the reply
in the log, and puts memory into the prompt the way ``diarist chat`` does — the stable start
block at the end of the system message, a note on the new message, within ``budget_pct`` of
the upstream's window, each a ``MemoryInjected`` event (:mod:`.memory`). The request is
otherwise passed through untouched, streamed or not (:mod:`.app`).
"""
