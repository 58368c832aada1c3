"""What a plan process forks ends with it: the fork server is its subreaper, and kills it.

Only seccomp refuses a plan process a fork (landlock stops exec, not fork). Where it failed,
a fork that slept outlived the run (the host kills only the plan process itself), within its
own limits, and kept the uid (``identity.UID_BASE`` plus the plan process's pid) that a later
plan process with that pid takes (REDTEAM9 in ``tests/planlang/test_isolation_redteam9.py``).
As the fork server is the subreaper of its forks' descendants, such a process becomes the
server's own child once its plan process ends; the server then kills every child that is not
a live plan process.
"""

from __future__ import annotations

import ctypes
import os
import signal

from planlang.isolation.syscalls import _prctl

__all__ = ["adopt", "end"]

_PR_SET_CHILD_SUBREAPER = 36
_CHILDREN: list[bytes] = []  # this server's /proc file that lists its children


def adopt() -> None:
    """In the fork server, once: become the subreaper of whatever its forks fork."""
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1))
    except OSError:
        return  # then such a process lives on, within its own limits (docs/SECURITY.md)
    _CHILDREN[:] = [b"/proc/self/task/%d/children" % os.getpid()]


def end(forked: set[int]) -> None:
    """Kill every child of this server that is not a live plan process (``forked``): an
    orphan of one that ended, reaped at the next SIGCHLD. One read of the server's children,
    with os.open and bytes (not open(): fewer of the server's pages written, each then copied
    by its next fork)."""
    try:
        fd = os.open(_CHILDREN[0], os.O_RDONLY | os.O_CLOEXEC)
        try:
            children = os.read(fd, 1 << 16).split()
        finally:
            os.close(fd)
    except (OSError, IndexError):
        return
    for pid in map(int, children):
        if pid not in forked:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
