"""Reading any evaluation input: a folder in the layout, LoCoMo's locomo10.json or a
LongMemEval JSON file, recognised from its content (see :mod:`.dataset`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import locomo, longmemeval
from .dataset import Dataset, DatasetError, load_layout
from .json_stream import iter_objects


def _first_element(path: Path) -> Any:
    """The first element of a top-level JSON array, or None when the file is not one (the
    full parse below then says what is wrong)."""
    try:
        for _, item in iter_objects(path):
            return item
    except DatasetError:
        return None
    return None


def load_dataset(path: Path) -> Dataset:
    """Any supported input (see the module doc); a clear :class:`DatasetError` otherwise."""
    path = Path(path)
    if path.is_dir():
        return load_layout(path)
    if not path.exists():
        raise DatasetError(f"{path}: no such file or folder")
    if longmemeval.looks_like_element(_first_element(path)):
        return longmemeval.load_file(path, path.stem)   # read one question at a time
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if locomo.looks_like(data):
        return locomo.load(data, path.stem)
    raise DatasetError(f"{path}: neither LoCoMo's locomo10.json (a list of samples with "
                       "'conversation' and 'qa') nor LongMemEval's JSON (a list of questions "
                       "with 'haystack_sessions')")
