"""A fresh host interpreter for the red-team tests whose attack could hold their own process:
run apart, killed whole at a hang guard, telling what it measured as its last line of JSON."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def python_json(code: str, timeout: float, mode: str = "process") -> Any:
    """Run ``code`` in a fresh interpreter of this checkout, under ``PLANLANG_ISOLATION=mode``,
    in a session of its own (killed whole at ``timeout``, its fork servers too); its last
    stdout line, read as JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PLANLANG_ISOLATION": mode}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                             start_new_session=True)  # fmt: skip
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise AssertionError(f"the host did not finish within {timeout:.0f} s") from None
    lines = out.strip().splitlines()
    assert lines, f"no output (exit {child.returncode}): {err[-2000:]}"
    return json.loads(lines[-1])
