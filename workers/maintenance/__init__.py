"""Maintenance: old journals to ``memory/archive/`` (``JournalArchived``), a pruned queue."""
