"""A plan's string hashes are the same in every run under process isolation.

Set order of texts follows their hashes: with a random seed per fork server, ``for f in
set(files)`` asked the ledger in another order on every rerun (and ``enumerate`` over it asked
other questions), and a replay gave another result.
"""

from __future__ import annotations

import os

import pytest
from host_process import python_json

PLAN = "result = [hash('abc'), list({'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'})]"
CODE = f"""
import json
from planlang import Sandbox
print(json.dumps(Sandbox(isolation="process").run({PLAN!r})))
"""


@pytest.mark.parametrize("host_seeds", [("1", "2"), ("random", "random")])
def test_hosts_of_any_seed_give_a_plan_the_same_hashes_and_set_order(
    monkeypatch, host_seeds
) -> None:
    results = []
    for seed in host_seeds:
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        results.append(python_json(CODE, 120))
    assert results[0] == results[1]
    # and it is the hash of seed 0, which an embedder can reproduce (python -c with it set)
    assert results[0][0] == _hash_under_seed_0("abc")


def _hash_under_seed_0(text: str) -> int:
    import subprocess
    import sys

    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, "-c", f"print(hash({text!r}))"], env=env,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return int(out)
