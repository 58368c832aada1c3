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


def test_the_hello_plan_prices_cleanly_with_its_project_file():
    proc = subprocess.run(
        [sys.executable, "-m", "planlang", "price", "examples/hello_plan.py",
         "--config", "examples/hello.toml", "--seeds", "2", "--json"],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import json

    report = json.loads(proc.stdout)
    assert report["ok"] and report["phases"]["read"]["calls"]["median"] == 3
    assert report["phases"]["summarise"]["calls"]["median"] == 1


def test_the_main_job_prices_the_example_audit_plan_cleanly():
    proc = subprocess.run(
        [sys.executable, "-m", "planlang", "price", "examples/audit_plan.py", "--seeds", "2"],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No problems met in rehearsal." in proc.stdout
