"""Mining: ended sessions → typed memories (``MemoriesMined``) and journal lines, by a model
or by the heuristic extractor, resumable and never twice (:mod:`.mine`)."""
