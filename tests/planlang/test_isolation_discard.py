"""A plan process is killed through a pidfd, never by its number.

The fork server reaps a plan process as soon as it exits and reports the exit afterwards, so
for a moment the host may think a process runs whose pid is free again. A kill by number in
that moment would reach whatever process the kernel gave the number to next. A pidfd names
the process itself: once it is gone, a signal sent through it reaches nobody.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from planlang.isolation.pool import Child, Pool

HANG_GUARD = 15.0


def _reaped(child: Child) -> None:
    """Kill the child from outside and wait until its fork server has reaped it."""
    os.kill(child.pid, signal.SIGKILL)
    deadline = time.monotonic() + HANG_GUARD
    while child.zygote.exit_code(child.pid) is None:
        assert time.monotonic() < deadline, "the fork server never reported the exit"
        time.sleep(0.01)


def test_a_discard_never_signals_a_process_that_took_a_dead_childs_pid() -> None:
    """The child is gone and reaped; its number now names another process (a stranger the
    test starts stands for it) and the exit's report is still on its way (``exit_code``
    says it runs). Discarding the child leaves the stranger alive."""
    pool = Pool(1)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        child = pool.acquire()
        _reaped(child)
        child.pid = stranger.pid  # what pid reuse would make of it
        child.zygote.exit_code = lambda pid, timeout=0.0: None  # type: ignore[method-assign]
        child.discard()
        time.sleep(0.2)  # a SIGKILL sent would have landed by now
        assert stranger.poll() is None, "the discard killed another process"
    finally:
        stranger.kill()
        stranger.wait()
        pool.close()


def test_a_discard_kills_a_running_child_and_closes_its_pidfd() -> None:
    pool = Pool(1)
    try:
        child = pool.acquire()
        pidfd = child.pidfd
        assert pidfd is not None, "the fork server sent no pidfd (kernel below 5.3?)"
        child.discard()
        deadline = time.monotonic() + HANG_GUARD
        while child.zygote.exit_code(child.pid) is None:
            assert time.monotonic() < deadline, "the discarded child still runs"
            time.sleep(0.01)
        assert child.zygote.exit_code(child.pid) == -signal.SIGKILL
        try:
            os.fstat(pidfd)
        except OSError:
            pass
        else:
            raise AssertionError("the child's pidfd is still open")
    finally:
        pool.close()
