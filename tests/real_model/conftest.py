"""The real-model tier: a real Qwen2.5-Coder-0.5B behind llama.cpp's OpenAI-compatible server
(`diarist serve-model`), started once per test session on 127.0.0.1 with a 2,048-token window.

Every test here is marked ``real_model``. Without the runtime and weights installed
(`scripts/setup.sh` installs them) the tests skip — unless ``DIARIST_REQUIRE_REAL_MODEL=1``
(set by ``.ci/run``), where a missing install is a failure, so CI cannot pass by skipping.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, diarist_cmd, free_port

WINDOW = 2048
START_TIMEOUT_S = 180


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.real_model)


def _installed() -> str | None:
    """Why the tier cannot run here, or None."""
    from workers.models.llama_server import LocalModelError, chunk_paths

    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        return "xllamacpp is not installed"
    try:
        chunk_paths()
    except LocalModelError as exc:
        return str(exc)
    return None


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            return json.loads(resp.read()).get("status") == "ok"
    except (OSError, ValueError):
        return False


def _dies_with_parent() -> None:
    """In the server's process before it starts: SIGTERM when the test run dies (a killed
    run skips the fixture's teardown and left the server running, a tenth of a core busy).
    Linux's PR_SET_PDEATHSIG; elsewhere nothing."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def _threads() -> int:
    """All cores when the tests run one at a time; one thread beside another pytest-xdist
    worker (llama.cpp's threads spin at each step's barrier: sharing two cores with a busy
    test they waited on each other, and the tier took four times as long)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT/v1``) of a running `diarist serve-model`."""
    missing = _installed()
    if missing:
        if os.environ.get("DIARIST_REQUIRE_REAL_MODEL") == "1":
            pytest.fail(f"the real-model tier is required but cannot run: {missing} "
                        "(run `bash scripts/setup.sh`)")
        pytest.skip(f"real-model tier: {missing}")
    server_home = tmp_path_factory.mktemp("llm-home")
    port = free_port()
    env = dict(os.environ, DIARIST_HOME=str(server_home), PYTHONPATH=str(REPO))
    log_path = server_home / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*diarist_cmd(), "serve-model", "--port", str(port),
                                 "--ctx-size", str(WINDOW), "--threads", str(_threads())],
                                stdout=log, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=_dies_with_parent)
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _healthy(root):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            tail = log_path.read_text(errors="replace")[-3000:]
            pytest.fail(f"diarist serve-model did not come up (exit {proc.poll()}):\n{tail}")
        time.sleep(0.25)
    try:
        yield f"{root}/v1"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # the joined 491 MB weights: pytest keeps the last three sessions' tmp dirs
        shutil.rmtree(server_home / "models", ignore_errors=True)
