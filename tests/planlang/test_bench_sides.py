"""The instruction-count benchmarks' sides run as callgrind runs them (a few calls, no
callgrind): a change to what a session takes of its child, or to the lanes' frames, broke a
side that only the benchmark ran (bench_crossing: sequential host calls; bench_callbacks:
callbacks through a fan-out word)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SIDES = ["cpython", "inprocess", "child", "host", "ahead-child", "ahead-host"]


@pytest.mark.parametrize("bench", ["bench_crossing.py", "bench_callbacks.py"])
@pytest.mark.parametrize("side", SIDES)
def test_each_side_of_each_instruction_benchmark_runs(bench: str, side: str) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / bench), "--child", side, "3"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
