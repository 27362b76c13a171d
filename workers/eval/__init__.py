"""Evaluation: does memory make the model answer better, and at what cost (`diarist eval`).

Datasets (:mod:`.dataset`, :mod:`.locomo`, :mod:`.longmemeval`, the changed-facts generator
:mod:`.changed_facts`), metrics (:mod:`.metrics`, :mod:`.stats`), the runner and its report.
"""
