"""The application layer: what diarist does, built on the projections and the log.

One subpackage per capability — ``chat`` (the session, memory tools, onboarding, the shadow
journal, the hand-off to a worker), ``llm`` (the model backends), ``models`` (provisioning
the embedding model and the local llama.cpp server), ``memory`` (remember, recall, forget,
journal, counts), ``sync`` (catch-up, replay and verification, status), ``presence`` (is a
worker running?) — and the Huey side at the edge: ``app`` (the queue), ``tasks`` (thin task
wrappers over the above), ``dispatch`` (the queue handed to capabilities) and ``worker``. A
capability never imports the edge: it takes a ``queue_port.QueuePort`` argument. ``cli``
calls into here; nothing here imports ``cli``. Importing this package imports nothing else.
"""
