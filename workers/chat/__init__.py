"""The chat: the session's event flow, the memory tools, onboarding, the shadow journal and
the hand-off of after-reply work to a running worker. The terminal side is ``cli/chat.py``."""
