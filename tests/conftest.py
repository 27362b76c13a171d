"""Shared fixtures. Every test gets its own DIARIST_HOME: no test touches the real var/."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import freezegun
import pytest
from click.testing import CliRunner, Result

from cli.main import cli
from events import EventLog, Home
from events.home import UMASK
from projections import ProjectionStore, open_store

# The Ctrl-C tests need SIGINT to raise KeyboardInterrupt, here and in the processes they
# start: a run launched in the background of a non-interactive shell ("nohup … &") ignores
# SIGINT, Python then installs no handler, and children inherit the ignoring. A handler set
# here is reset to the default in every child at exec.
signal.signal(signal.SIGINT, signal.default_int_handler)

# freezegun looks for datetime in every loaded module when a freeze starts: with torch and
# the other libraries of the embedding export loaded, that took 13 s a test. Diarist reads
# the time through events.clock; these libraries' clocks need not move.
freezegun.configure(extend_ignore_list=[
    "torch", "transformers", "sentence_transformers", "onnx", "onnxruntime", "tokenizers",
    "numpy", "scipy", "sklearn", "huey", "sqlite_utils", "matplotlib", "mcp", "starlette",
    "uvicorn", "httpx2", "openai", "hypothesis", "nltk", "pydantic", "anyio"])

# What the CLI sets for itself: files the tests' fixtures create are as private as the
# CLI's, so no command run in-process finds a "loose" home to tighten (and says so).
os.umask(UMASK)

REPO = Path(__file__).resolve().parent.parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (the README's ``-n auto``; ``--dist loadgroup`` in pyproject's
    addopts) one worker runs all of a file's tests, so a module's prepared homes are built
    once, and the real-model tier (``tests/real_model/``) is one group: one model server.
    First among the hooks: xdist's own reads the marks into the test ids it schedules by.
    The groups with long tests (the real-model tier, then files with ``slow`` or ``soak``
    tests) are handed out first, so the run does not end on one worker running them alone
    while the other has nothing left."""
    tests = REPO / "tests"
    group_of: dict[str, str] = {}  # test id -> its group
    weight: dict[str, int] = {}    # group -> 2 real-model tier, 1 slow or soak tests, else 0
    for item in items:
        group = group_of[item.nodeid] = Path(str(item.fspath)).relative_to(tests).parts[0]
        item.add_marker(pytest.mark.xdist_group(group))
        marks = {mark.name for mark in item.iter_markers()}
        heavy = 2 if group == "real_model" else 1 if marks & {"slow", "soak"} else 0
        weight[group] = max(weight.get(group, 0), heavy)
    items.sort(key=lambda item: -weight[group_of[item.nodeid]])


Stores = tuple[EventLog, ProjectionStore]  # the ``stores`` fixture
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    root = tmp_path / "home"
    monkeypatch.setenv("DIARIST_HOME", str(root))
    monkeypatch.delenv("DIARIST_REDIS_URL", raising=False)
    return Home(root).ensure()


@pytest.fixture
def log(home: Home) -> Iterator[EventLog]:
    with EventLog(home.events_db) as event_log:
        yield event_log


def locomo_dev() -> Path:
    """``../shared/bench/locomo``; the calling test is skipped when it is not beside the
    checkout (a bare clone)."""
    if not LOCOMO.is_dir():
        pytest.skip("../shared/bench/locomo is not beside the checkout")
    return LOCOMO


def locomo_observations() -> list[str]:
    """LoCoMo's own observations (written by its annotators), skipping as :func:`locomo_dev`."""
    return [json.loads(line)["fact"] for path in sorted(locomo_dev().glob("*.observations.jsonl"))
            for line in path.read_text().splitlines()]


@pytest.fixture
def locomo26() -> Path:
    return locomo_dev() / "conv-26.transcript.jsonl"


@pytest.fixture
def store(home: Home, log: EventLog) -> Iterator[ProjectionStore]:
    """The home's projection store over ``log``."""
    with open_store(home, log) as projection_store:
        yield projection_store


@pytest.fixture
def stores(home: Home) -> Iterator[Stores]:
    """The home's log and projection store, open together."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        yield log, store


def rules(tmp_path: Path, *lines: dict) -> Path:
    """A scripted-backend rules file (JSON lines {"match", "reply"})."""
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def write_transcript(path: Path, turns: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


def make_turns(n: int, session: str = "s1", prefix: str = "t") -> list[dict]:
    return [
        {"session": session, "at": f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
         "role": "user" if i % 2 == 0 else "assistant", "name": "Ann" if i % 2 == 0 else "Bot",
         "text": f"message number {i} about topic {i % 7}", "ref": f"{prefix}:{session}:{i}"}
        for i in range(n)
    ]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen, timeout: float = 10) -> None:
    """Ctrl-C a child process as a user would; kill it if it does not exit in time."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(*args: str, ok: bool = True) -> Result:
    """``diarist ARGS`` in this process (click's runner); with ``ok``, it must exit 0."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def run_cli(home: Home, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``diarist ARGS`` as a real process on ``home``."""
    return subprocess.run([*diarist_cmd(), *args], env=subprocess_env(home), capture_output=True,
                          text=True, timeout=timeout)


def diarist_cmd() -> list[str]:
    """Run the CLI as a real process (the installed entry point's code, this interpreter)."""
    return [sys.executable, "-c", "from cli.main import main; main()"]


def no_night(home: Home) -> None:
    """A worker started on ``home`` does not run the night: between 02:00 and 08:00 local
    time a freshly started worker mines, dreams and consolidates at once (by design), which
    a test comparing projections against a reference must not depend on."""
    with home.config_file.open("a", encoding="utf-8") as config:
        config.write("mining:\n  nightly: false\n")


def subprocess_env(home: Home) -> dict[str, str]:
    env = dict(os.environ)
    env["DIARIST_HOME"] = str(home.root)
    env["PYTHONPATH"] = str(REPO)
    return env


# --- embeddings (tests/test_embedding.py, tests/test_vectors.py) -----------------------------


@pytest.fixture(autouse=True)
def _no_embed_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """`diarist sync` embeds by default, which on a fresh home exports the model (torch, several
    seconds) and appends an `EmbeddingModelChosen`; tests that want that opt in by deleting
    the variable (subprocesses inherit it through `subprocess_env`)."""
    monkeypatch.setenv("DIARIST_NO_EMBED", "1")


@pytest.fixture(scope="session")
def exported_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 exported once per test run (fp32, int8, tokenizer.json): the folder
    that `var/models/all-MiniLM-L6-v2` of a home would be. Under pytest-xdist the first
    worker to need it exports it into the run's shared temporary folder and the others wait
    for it (an export costs torch ~15 s of a core)."""
    import fcntl

    from projections.embedding import BASE_MODEL, model_checksum, prepare_model
    from workers.models.embedding import export_model

    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's folder is in the run's own: pytest-N/popen-gwK
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    target = shared / "exported-model" / BASE_MODEL
    with open(shared / "exported-model.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (target.parent / "complete").exists():
            export_model(target)
            for variant in ("fp32", "int8"):  # the checksum sidecars, copied with the files
                model_checksum(target / f"model-{variant}.onnx", target / "tokenizer.json")
            prepare_model(target / "model-fp32.onnx")  # as ensure_model does
            (target.parent / "complete").touch()
    return target


@pytest.fixture
def model_home(home: Home, exported_model: Path) -> Home:
    """``home`` with the exported files copied into ``var/models/`` (copies, not links: tests
    may damage them), so `ensure_model` finds them and exports nothing."""
    import shutil

    shutil.copytree(exported_model, home.models_dir / exported_model.name)
    return home


@pytest.fixture
def embedding(model_home: Home, monkeypatch: pytest.MonkeyPatch) -> Home:
    """``model_home`` with embedding on (conftest turns it off by default)."""
    monkeypatch.delenv("DIARIST_NO_EMBED", raising=False)
    return model_home


def fp32_embedder(exported: Path):  # type: ignore[no-untyped-def]
    """The fp32 embedder of an exported model's folder (``exported_model``)."""
    from projections.embedding import OnnxEmbedder

    return OnnxEmbedder(exported / "model-fp32.onnx", exported / "tokenizer.json")
