"""bench_callbacks' sides run as callgrind runs them (a few callbacks, no callgrind): each
side checks that its callbacks crossed as the protocol says (a tail each, where this copy
has tails), so a change to the lanes' frames that the benchmark's frames no longer match
fails here, not only in the benchmark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_callbacks.py"


@pytest.mark.parametrize("side", ["cpython", "inprocess", "child", "host", "ahead-child",
                                  "ahead-host"])  # fmt: skip
def test_each_side_of_the_callback_benchmark_runs(side: str) -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--child", side, "3"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
