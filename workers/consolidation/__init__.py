"""Consolidation: the journals since the last one and MEMORY.md → a new MEMORY.md."""
