"""Which isolation a run gets, and the plan line a host call came from: a leaf, so the
sandbox and the run's host words can ask without importing the isolation machinery."""

from __future__ import annotations

import os
import threading

__all__ = ["ENV", "MODES", "calling_line", "resolve_mode"]

MODES = ("process", "inprocess")
ENV = "PLANLANG_ISOLATION"


def resolve_mode(mode: str | None) -> str:
    """The isolation a run gets: the one asked for, else ``PLANLANG_ISOLATION``, else
    process (model-written code is treated as written by an adversary)."""
    chosen = mode if mode is not None else os.environ.get(ENV) or "process"
    if chosen not in MODES:
        raise ValueError(f"isolation={chosen!r} must be one of {', '.join(MODES)}.")
    return chosen


class _Calling(threading.local):
    """Per thread: the plan line of the host call being served (None: none). A class default,
    so reading it where it was never set raises nothing (an AttributeError costs 2 µs)."""

    line: int | None = None


_calling = _Calling()


def calling_line() -> int | None:
    """In a host word called from a plan's process: the plan line that called it (the plan's
    frames are in that process, so a host word cannot find them on its own stack)."""
    return _calling.line
