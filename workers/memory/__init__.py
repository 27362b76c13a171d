"""What the memory commands do: remember, recall, forget and flag, journals, counts."""
