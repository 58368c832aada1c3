"""Instructions a Python process runs, counted by callgrind: a measure that does not move with
the machine's load (wall time on this shared VM does, by 2x). Used by the benchmarks that
count instructions (``bench_inference.py``, ``bench_crossing.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def instructions(script: str, args: list[str], out: Path) -> int:
    """Instructions of ``python script *args`` under callgrind (``PYTHONHASHSEED=0``), its
    counts kept in ``out``."""
    python = os.path.realpath(sys.executable)  # not a shim: callgrind follows no children
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, script, *args],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    for line in out.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"no summary in {out}")
