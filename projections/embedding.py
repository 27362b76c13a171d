"""Sentence embeddings on the CPU: all-MiniLM-L6-v2 exported to ONNX, run with onnxruntime.

The hot path (a chat's recall, the worker embedding new items) needs only ``onnxruntime``,
``tokenizers`` and ``numpy`` — never torch or sentence-transformers, which take seconds to
import. Those are imported lazily, so importing :mod:`projections` stays fast.

What sentence-transformers does for this model, and so what :class:`OnnxEmbedder` does:
BERT WordPiece tokenisation (lower-cased, ``[CLS] … [SEP]``) truncated at 256 tokens (the
model's ``max_seq_length``), the transformer's last hidden state, mean pooling over the
attention mask, L2 normalisation. The ONNX graph holds only the transformer (exported by
:mod:`workers.models`); pooling and normalisation run here in numpy.

The files live under ``var/models/<base>/`` (see :func:`model_files`); which model is active is
an ``EmbeddingModelChosen`` event in the log, and :func:`load_embedder` refuses files whose
checksum differs from the one that event recorded.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from events import DiaristError, Home
from events.db import fsync_dir

from .files import fsync_file
from .vector_cache import ActiveModel, active_model

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .engine import ProjectionStore

BASE_MODEL = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_SEQ_LENGTH = 256
VARIANTS = ("fp32", "int8")
TOKENIZER_FILE = "tokenizer.json"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class ModelUnavailable(DiaristError):
    """The chosen embedding model's files are missing or are not the recorded ones."""


def model_id(variant: str, base: str = BASE_MODEL) -> str:
    """``all-MiniLM-L6-v2-int8`` for the int8 variant."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown model variant {variant!r} (known: {', '.join(VARIANTS)})")
    return f"{base}-{variant}"


def split_model_id(model: str) -> tuple[str, str]:
    """``all-MiniLM-L6-v2-int8`` → (``all-MiniLM-L6-v2``, ``int8``)."""
    base, _, variant = model.rpartition("-")
    if not base or variant not in VARIANTS:
        raise ModelUnavailable(f"unknown embedding model {model!r}",
                               hint=f"Known variants: {', '.join(VARIANTS)}.")
    return base, variant


def model_files(home: Home, model: str) -> tuple[Path, Path]:
    """(ONNX file, tokenizer file) of a model id under ``var/models/``."""
    base, variant = split_model_id(model)
    folder = home.models_dir / base
    return folder / f"model-{variant}.onnx", folder / TOKENIZER_FILE


# --- checksums ------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def cached_sha256(path: Path) -> str:
    """sha256 of a file, remembered in ``<file>.sha256`` with its size and mtime so that a
    cold process does not hash 23–90 MB to open a model it has verified before."""
    stat = path.stat()
    sidecar = _sidecar(path)
    try:
        known = json.loads(sidecar.read_text(encoding="utf-8"))
        if known["size"] == stat.st_size and known["mtime_ns"] == stat.st_mtime_ns:
            return str(known["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = sha256_file(path)
    record = {"sha256": value, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    tmp = sidecar.with_name(f".{sidecar.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, sidecar)
    except OSError:  # a read-only models folder: just do not remember
        tmp.unlink(missing_ok=True)
    return value


def model_checksum(model_file: Path, tokenizer_file: Path) -> str:
    """The checksum an ``EmbeddingModelChosen`` records: sha256 of the manifest
    ``"<sha256 of the ONNX file>  model\\n<sha256 of tokenizer.json>  tokenizer\\n"`` — both
    files decide the vectors. Each line can be checked with ``sha256sum``."""
    manifest = f"{cached_sha256(model_file)}  model\n{cached_sha256(tokenizer_file)}  tokenizer\n"
    return hashlib.sha256(manifest.encode()).hexdigest()


# --- the prepared copy: what a cold process loads -------------------------------------------


def prepared_files(model_file: Path) -> tuple[Path, Path, Path]:
    """(graph, weights, manifest) of ``model-<variant>.onnx``'s prepared copy."""
    stem = model_file.name.removesuffix(".onnx")
    return (model_file.with_name(f"{stem}.prepared.onnx"),
            model_file.with_name(f"{stem}.prepared.data"),
            model_file.with_name(f"{stem}.prepared.json"))


def _manifest(model_file: Path) -> dict[str, str]:
    """What the prepared copy must match: the source file's sha256 and this onnxruntime (its
    fused operators are its own)."""
    import onnxruntime as ort

    return {"source_sha256": cached_sha256(model_file), "onnxruntime": ort.__version__}


def prepared_model(model_file: Path) -> Path | None:
    """The prepared copy of ``model_file`` to load instead of it, or None when there is none
    or it is not the copy of this file for this onnxruntime (then the file itself loads)."""
    graph, weights, manifest = prepared_files(model_file)
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        expected = {**_manifest(model_file), "graph_sha256": cached_sha256(graph),
                    "weights_sha256": cached_sha256(weights)}
    except (OSError, ValueError):
        return None
    return graph if recorded == expected else None


def prepare_model(model_file: Path) -> bool:
    """Write ``model_file``'s prepared copy unless it is there already (True when written).

    The copy is what onnxruntime would otherwise build at every load: the graph optimised
    (``ORT_ENABLE_EXTENDED``: the operator fusions, none specific to this CPU), saved with its
    weights in a file of their own (``.prepared.data``), which onnxruntime reads without
    parsing them out of the protobuf. Loading it took about half the CPU time of loading
    the exported file (docs/benchmarks.md, "Recall latency"), and it gives the
    same vectors bit for bit (tests/test_embedding.py). Written under temporary names,
    fsynced and renamed, the manifest last; :func:`prepared_model` checks all of it."""
    import onnxruntime as ort

    if prepared_model(model_file) is not None:
        return False
    graph, weights, manifest = prepared_files(model_file)
    with tempfile.TemporaryDirectory(prefix=".prepare-", dir=model_file.parent) as scratch_dir:
        scratch = Path(scratch_dir)
        options = session_options(ort)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(scratch / graph.name)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", weights.name)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        record = {**_manifest(model_file),  # (their checksums remembered beside them)
                  "graph_sha256": cached_sha256(scratch / graph.name),
                  "weights_sha256": cached_sha256(scratch / weights.name)}
        (scratch / manifest.name).write_text(json.dumps(record, sort_keys=True),
                                             encoding="utf-8")
        for path in (weights, graph):
            os.replace(_sidecar(scratch / path.name), _sidecar(path))
        for name in (weights.name, graph.name, manifest.name):  # the manifest last
            fsync_file(scratch / name)
            os.replace(scratch / name, model_file.parent / name)
    fsync_dir(model_file.parent)
    return True


# --- the embedder ---------------------------------------------------------------------------


def session_options(ort: Any) -> Any:
    """One thread per run, no thread pool: a query is one short batch, which a second
    onnxruntime thread did not speed up but spun beside, taking the other core from whatever
    else runs — with two threads a query took longer and more than twice the CPU
    (docs/benchmarks.md, "Recall latency"). Bulk embedding runs several batches
    at once instead (:meth:`OnnxEmbedder.embed`). The vectors are bit for bit the same."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return options


class OnnxEmbedder:
    """Embeds texts with an exported sentence-transformer: L2-normalised float32 vectors.

    ``threads``: batches embedded at once, each on one thread (default: every core).
    ``model_id`` names the vectors in the embeddings cache; :func:`load_embedder` sets it to
    the active model's key. ``session_file``: the file the session loads, when not
    ``model_file`` itself — its prepared copy (:func:`prepare_model`).
    """

    def __init__(self, model_file: str | os.PathLike[str], tokenizer_file: str | os.PathLike[str],
                 threads: int | None = None, *, model_id: str | None = None,
                 batch_size: int = 32, max_length: int = MAX_SEQ_LENGTH,
                 session_file: str | os.PathLike[str] | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model_file = Path(model_file)
        self.session_file = Path(session_file) if session_file else self.model_file
        self.tokenizer_file = Path(tokenizer_file)
        self.model_id = model_id or self.model_file.stem
        self.threads = max(threads or os.cpu_count() or 1, 1)
        self.batch_size = batch_size
        self.max_length = max_length
        self.calls = 0  # texts embedded so far (tests and benchmarks read it)

        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
        self.tokenizer.no_padding()  # we pad per length-sorted batch ourselves
        self.tokenizer.enable_truncation(max_length)

        self.session = ort.InferenceSession(str(self.session_file), session_options(ort),
                                            providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        unknown = set(self.inputs) - set(INPUT_NAMES)
        if unknown:
            raise ModelUnavailable(f"{self.model_file} wants unknown inputs {sorted(unknown)}")
        shape = self.session.get_outputs()[0].shape
        self.dimension = shape[-1] if isinstance(shape[-1], int) else DIMENSION

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in the input's order: shape (n, 384)."""
        import numpy as np

        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")  # similar lengths together: little padding
        batches = [order[start:start + self.batch_size]
                   for start in range(0, len(order), self.batch_size)]

        def run(chosen: np.ndarray) -> None:
            width = int(lengths[chosen].max())
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            types = np.zeros((len(chosen), width), dtype=np.int64)
            for row, index in enumerate(chosen):
                encoding = encodings[index]
                n = len(encoding.ids)
                ids[row, :n] = encoding.ids
                mask[row, :n] = 1
                types[row, :n] = encoding.type_ids
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            hidden = self.session.run(None, {name: feed[name] for name in self.inputs})[0]
            out[chosen] = _mean_pool_normalise(hidden, mask)

        workers = min(self.threads, len(batches))
        if workers <= 1:
            for chosen in batches:
                run(chosen)
        else:  # one session runs several batches at once (onnxruntime allows it)
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(workers, thread_name_prefix="diarist-embed") as pool:
                list(pool.map(run, batches))
        self.calls += len(texts)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """A query's vector, shape (384,)."""
        return self.embed([text])[0]

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.model_id!r}, {self.model_file})"


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import numpy as np

    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden.astype(np.float32) * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


# --- the active model of a home ---------------------------------------------------------------


# Keyed by the recorded checksum (and threads), not by path: homes with the same model files
# (eval builds one home per conversation) share one session, so a process holds one copy.
_EMBEDDERS: dict[tuple[str, int | None], OnnxEmbedder] = {}
_LOADING = threading.Lock()  # a query's thread and the caller's never load one model twice


def load_embedder(home: Home, active: ActiveModel, threads: int | None = None, *,
                  verify: bool = True, cache: bool = True) -> OnnxEmbedder:
    """An embedder for ``active`` from ``var/models/``; raises :class:`ModelUnavailable` when
    the files are missing or their checksum is not the recorded one (``diarist sync``
    re-exports them). Loaded once per process (``cache``); the files of every home are
    checked (a cached hash: cheap)."""
    model_file, tokenizer_file = model_files(home, active.model)
    if not model_file.is_file() or not tokenizer_file.is_file():
        raise ModelUnavailable(
            f"embedding model {active.model} is not in {model_file.parent}",
            hint="Run `diarist sync` to export it again.")
    if verify:
        found = model_checksum(model_file, tokenizer_file)
        if found != active.checksum:
            raise ModelUnavailable(
                f"{model_file} has checksum {found[:16]}…, the log recorded "
                f"{active.checksum[:16]}…",
                hint="Run `diarist sync`: it exports the model again and records it.")
    cache_key = (active.checksum, threads)
    with _LOADING:
        if cache and cache_key in _EMBEDDERS:
            return _EMBEDDERS[cache_key]
        embedder = OnnxEmbedder(model_file, tokenizer_file, threads, model_id=active.key,
                                session_file=prepared_model(model_file) if verify else None)
        if embedder.dimension != active.dimension:
            raise ModelUnavailable(f"{model_file} gives {embedder.dimension}-dimensional "
                                   f"vectors, the log recorded {active.dimension}")
        if cache:
            _EMBEDDERS[cache_key] = embedder
        return embedder


def release_embedders() -> None:
    """Drop the sessions :func:`load_embedder` keeps (one per model file): a process that
    walks through many homes (``diarist eval``) would otherwise keep one loaded per home."""
    _EMBEDDERS.clear()


def active_embedder(home: Home, store_or_db: ProjectionStore | sqlite3.Connection,
                    threads: int | None = None) -> OnnxEmbedder | None:
    """The embedder of the model the vectors projection has active, or None when no model has
    been chosen yet or its files are unusable (then recall is lexical only)."""
    active = active_model(store_or_db)
    if active is None:
        return None
    try:
        return load_embedder(home, active, threads)
    except ModelUnavailable:
        return None

