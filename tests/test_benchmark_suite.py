"""The benchmark suite runs end to end (its cheapest part, at a tiny size): the JSON and the
table come out, with figures that are measurements (positive, plausible), not placeholders."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO


@pytest.mark.slow
def test_suite_log_part_at_a_tiny_size(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "suite.py"), "--sizes", "120", "--parts",
         "log", "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "suite.json").read_text())
    block = report["sizes"]["120"]
    log = block["log"]
    assert log["events"] == 120 + 2 * 10          # turns + SessionStarted/Ended of 10 sessions
    assert log["import"]["turns_per_s"] > 0 and 10 < log["import"]["peak_rss_mb"] < 2000
    assert log["sync"]["events_per_s"] > 0 and log["replay"]["wall_s"] > 0
    assert 0 < log["append_ms"]["p50"] <= log["append_ms"]["p99"]
    assert log["worker"]["pickup_ms"]["n"] == 5 and log["worker"]["peak_rss_mb"] > 10
    assert block["var_bytes_per_1000_turns"] > 0
    assert "import, turns/s (process)" in done.stdout and "120 turns" in done.stdout
    if report.get("charts"):
        assert (tmp_path / "growth-latency.png").read_bytes()[:4] == b"\x89PNG"
