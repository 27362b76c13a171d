"""Keeping the projections in step with the log: ``sync``, ``replay`` (and ``--verify``),
``status``."""
