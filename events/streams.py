"""The names of the log's fixed streams (a chat or imported session is its own stream)."""
from __future__ import annotations

MEMORY = "memory"    # notes, extracted facts, memory decisions, the embedding model's choice
PROFILE = "profile"  # the workspace profile, project facts, onboarding answers
LOG = "log"          # changes to the log itself: `diarist redact`'s `Redacted` events
