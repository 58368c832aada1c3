"""Session 9's review of the late-answer check (REDTEAM9): each test failed on main (ddd520a).

- in a plan's process, a plan that ended well inside its time limit was refused with
  ``seconds`` when its answer reached the host after the deadline: the time to encode, send
  and read its result counted against the plan, which in one process it does not (a result
  of 100,000 small dicts took 1.4 s more to arrive than the plan took to make it, here);
- with seccomp failed, a process tree that forks and exits at once outlived its plan.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from typing import Any

import pytest

from planlang.isolation import parent
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HOOK_OFF = "from planlang.isolation import confine\nconfine._state['strict'] = False\n"


def test_a_plan_that_ended_in_time_keeps_its_result_when_its_answer_is_read_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host reads the answer only after the deadline (within its grace), as a large
    result's encoding or a loaded machine makes it; the plan itself ended at once."""
    box = Sandbox(limits=Limits(seconds=1), isolation="process")
    assert box.run("result = 0\n") == 0  # a warm pool
    real_run = parent._Session.run

    def run(self: Any, checked: Any, code_sent: bool = False) -> Any:
        request = self.endpoint.request

        def read_late(*args: Any, **keywords: Any) -> Any:
            answer = request(*args, **keywords)
            while time.monotonic() <= self.meter.deadline:
                time.sleep(0.05)
            return answer

        self.endpoint.request = read_late
        return real_run(self, checked, code_sent)

    monkeypatch.setattr(parent._Session, "run", run)
    assert box.run("result = 1\n") == 1


def _named(name: str) -> list[int]:
    """The live processes (not zombies) whose command name is ``name``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    comm, rest = stat.read().split("(", 1)[1].rsplit(")", 1)
            except (OSError, IndexError, ValueError):
                continue
            if comm == name and rest.split()[0] != "Z":
                found.append(int(entry))
    return found


def _described(pids: list[int], pool: Pool) -> str:
    """Each process left, with its state and parent, beside the fork server's pid: why a
    kill did not reach it, should this fail again (it failed once in a loaded full run)."""
    said = []
    for pid in pids[:10]:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                state, ppid = stat.read().rsplit(")", 1)[1].split()[:2]
        except OSError:
            state, ppid = "gone", "?"
        said.append(f"{pid} {state} parent {ppid}")
    server = pool._zygote.process.pid if pool._zygote is not None else None
    return f"{len(pids)} left ({'; '.join(said)}); the fork server {server}"


def test_a_process_tree_that_forks_and_exits_at_once_ends_with_its_plan() -> None:
    """Where seccomp failed (left out, landlock too), a plan's process forks a tree in which
    each process forks three and exits at once: each is the fork server's child before any
    signal says its parent ended, so a kill at each exit never caught up (about 30 of them
    ran on, busy, 3 s after the run, RLIMIT_NPROC their only bound; RLIMIT_CPU is each
    one's own). Now the server kills and reaps until none is left."""
    name = f"rv9{secrets.token_hex(4)}"
    pool = Pool(1, probes=True, without=("landlock", "seccomp"))
    try:
        probe = HOOK_OFF + (
            "import ctypes, os\nlibc = ctypes.CDLL(None)\nbegun, began = os.pipe()\n"
            "if os.fork() == 0:\n"
            f"    os.setsid()\n    libc.prctl(15, b'{name}', 0, 0, 0)\n    os.write(began, b'!')\n"
            "    while True:\n        for _ in range(3):\n            if libc.fork() == 0:\n"
            "                break\n        else:\n            os._exit(0)\n"
            "result = os.read(begun, 1)\n"
        )
        run_probe(pool, probe)  # it returns once the tree has begun
        deadline = time.monotonic() + 10  # a hang guard: on main they never end
        while _named(name) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _named(name)
        assert left == [], f"the plan's forks outlived its run: {_described(left, pool)}"
    finally:
        pool.close()
        for _ in range(100):  # on main they fork on: stopped first, each, then killed
            left = _named(name)
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                    os.kill(pid, signal.SIGKILL)
