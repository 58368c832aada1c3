"""Writes to a plan's pipe that a closed reading end cannot turn into a signal that kills.

A plan's process that closes its end of a pipe makes the host's next write to it raise
SIGPIPE. Python ignores SIGPIPE from its start, so the write fails with EPIPE (an OSError, which
ends the run); but a host that set SIGPIPE back to its default (a command-line tool that wants
``| head`` to end it quietly, an interpreter embedded in a C program) would die of it, with all
its runs. For such a host the writing thread blocks SIGPIPE around the write and takes a
SIGPIPE the write raised before unblocking it: the write's EPIPE stays an OSError.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from planlang.isolation.frames import write_all

__all__ = ["pipe_writer", "write_quietly"]

_PIPE = {signal.SIGPIPE}


def write_quietly(fd: int, message: Any) -> None:
    """``frames.write_all``, with SIGPIPE blocked in this thread meanwhile."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _PIPE)
    try:
        write_all(fd, message)
    finally:
        if signal.SIGPIPE not in before:
            if signal.SIGPIPE in signal.sigpending():  # this write's, directed at this thread
                signal.sigtimedwait(_PIPE, 0)
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


def pipe_writer() -> Callable[[int, Any], None]:
    """How the host writes to a plan's pipes now: as it is where SIGPIPE is ignored (Python's
    default: no system call more a frame), quietly where it is not."""
    return write_all if signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN else write_quietly
