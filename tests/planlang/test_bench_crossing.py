"""bench_crossing's sides run as callgrind runs them (a few calls, no callgrind): a change to
what a session takes of its child broke the host's side, and only the benchmark ran it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_crossing.py"


@pytest.mark.parametrize("side", ["cpython", "inprocess", "child", "host", "ahead-child",
                                  "ahead-host"])  # fmt: skip
def test_each_side_of_the_crossing_benchmark_runs(side: str) -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--child", side, "3"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
