"""A project folder whose plans call the test server's tools, and ``planlang`` run on it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

ROOT = Path(__file__).parents[2]
SERVER = Path(__file__).with_name("mcp_tool_server.py")
# `planlang run` wants an endpoint even for plans that ask no model; nothing listens here.
ENDPOINT = {"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_API_KEY": "test-key-not-secret"}


def make_project(folder: Path, gate: str = "", prices: str = "append_line = 0.5") -> Path:
    """planlang.toml with the test server as ``t`` and ``inputs["file"]`` in ``folder``."""
    (folder / "planlang.toml").write_text(
        f"""[plan]
inputs = {{ file = {json.dumps(str(folder / "out.txt"))} }}

[gate]
{gate}

[state]
gate_key = "gate.key"   # this project's own key, whoever runs planlang here


[mcp.servers.t]
command = [{json.dumps(sys.executable)}, {json.dumps(str(SERVER))}]
prices = {{ {prices} }}
""",
        encoding="utf-8",
    )
    return folder / "out.txt"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **ENDPOINT}


def planlang(folder: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``python -m planlang ARGS`` in ``folder``, with this worktree's code."""
    return subprocess.run([sys.executable, "-m", "planlang", *args], cwd=folder, env=env(),
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def start(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "planlang", *args], cwd=folder, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def end_hanging_server(path: Path) -> None:
    """The test server that hangs writes its pid beside the file; end it."""
    pid_file = Path(str(path) + ".pid")
    if pid_file.exists():
        with suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        pid_file.unlink()


def said(done: subprocess.CompletedProcess[str]) -> str:
    """What a command printed, with the terminal's line wrapping undone."""
    return " ".join((done.stdout + done.stderr).split())
