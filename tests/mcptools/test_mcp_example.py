"""examples/mcp_plan.py prices offline with its own project file, and touches no note."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mcp_project import ROOT, env

pytestmark = pytest.mark.slow


def test_the_mcp_example_prices_offline_and_calls_no_tool(tmp_path) -> None:
    notes = tmp_path / "notes.json"
    proc = subprocess.run(
        [sys.executable, "-m", "planlang", "price", "examples/mcp_plan.py",
         "--config", "examples/mcp.toml", "--seeds", "2", "--json"],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=240,
        env={**env(), "NOTES_FILE": str(notes)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"]
    assert {name: t["calls"]["median"] for name, t in report["tools"].items()} == {
        "notes.add_note": 1, "notes.search": 1,
    }  # fmt: skip
    assert report["tool_hints"]["notes.delete_note"]["destructive"] is True
    assert not notes.exists()  # the server ran (to list its tools) but no tool was called
