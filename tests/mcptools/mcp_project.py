"""A project folder whose plans call the test server's tools, and ``planlang`` run on it.

``planlang`` runs the real command line in a process of its own; ``planlang_here`` calls the
same entry point (``planlang.cli.main``) in this process, for tests whose subject is what a
command does with the servers, not the process it runs in: a run spends most of its time
importing the MCP SDK (about 1.5 s), once here instead of once a command.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout, suppress
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


class _AtCommandEnd:
    """Stands in for ``atexit`` in ``planlang.mcp.tools``: the servers a command started stay
    up until the process ends (``McpTools`` closes them at exit); here the command's end."""

    def __init__(self) -> None:
        self.closes: list[Callable[[], object]] = []

    def register(self, close: Callable[[], object]) -> None:
        self.closes.append(close)


def planlang_here(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``planlang ARGS`` in ``folder`` as :func:`planlang` runs it (the same working folder,
    environment and exit code), but called in this process; its output is captured, and the
    MCP servers it started are closed when it returns, as its exit would close them."""
    import planlang.mcp.tools as tools
    from planlang.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_atexit = dict(os.environ), os.getcwd(), tools.atexit
    at_end = _AtCommandEnd()
    os.environ.update(ENDPOINT)
    os.chdir(folder)
    tools.atexit = at_end  # type: ignore[assignment]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(args))
    finally:
        tools.atexit = saved_atexit
        for close in reversed(at_end.closes):
            close()
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["planlang", *args], code, out.getvalue(), err.getvalue())


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
