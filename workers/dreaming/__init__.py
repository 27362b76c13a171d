"""Dreaming: merge duplicate memories, resolve conflicts, let relevancy fade (:mod:`.dream`)."""
