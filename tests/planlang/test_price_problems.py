"""One line per distinct price problem, with a count (issue 13, item 7).

It is an error for a runaway plan to print one line per refused worker.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from planlang.price import price
from runtime import Settings

ROOT = Path(__file__).resolve().parents[2]
RUNAWAY = 'while True:\n    agent("hi")\n'


def price_cli(tmp_path, *args):
    (tmp_path / "planlang.toml").write_text("[planlang]\nmax_agents = 200\n")
    (tmp_path / "plan.py").write_text(RUNAWAY)
    return subprocess.run(
        [sys.executable, "-m", "planlang", "price", "plan.py", "--seeds", "2", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"},
    )  # fmt: skip


def test_a_runaway_is_one_line_with_a_count(tmp_path):
    done = price_cli(tmp_path)
    assert done.returncode == 1
    runaway = [line for line in done.stdout.splitlines() if "runaway" in line]
    assert len(runaway) == 2  # the refused workers, and the run ended for running away
    [refused] = [line for line in runaway if "past max_agents=200" in line]
    assert refused.strip().startswith("plan.py:2: runaway:")  # not wrapped at 80 columns
    assert "(200 times)" in refused and refused.endswith("(seeds 0,1)")


def test_the_json_report_carries_the_count(tmp_path):
    report = json.loads(price_cli(tmp_path, "--json").stdout)
    counts = {p["kind"]: p["count"] for p in report["problems"]}
    assert counts == {"runaway": 200, "run": 1}


def test_the_same_failure_in_many_workers_is_one_problem():
    source = "result = parallel([lambda: agent('q', schema={'type': 'integer', 'minimum': 5, "
    source += "'maximum': 1}) for i in range(7)])\n"
    [problem] = price(source, seeds=2, settings=Settings(max_agents=50)).problems
    assert problem.kind == "worker" and problem.count == 7 and problem.seeds == (0, 1)
