"""The examples in examples/ run as documented."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_embedding_example_prices_approves_and_runs():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "embed_gate.py")],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("price: 3 calls, 0.07 credits")
    assert lines[1] == "decision: approved"
    assert lines[-1] == "spent: 0.07 credits"
