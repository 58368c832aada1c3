"""Isolated plans: each run in its own confined process (docs/SECURITY.md, "Layers").

``Sandbox(isolation="process")`` (the default) runs the checked plan in a warm child process
from a pool, with hard resource limits and the operating system's confinement, while host
words keep running in the host. ``layers()`` says which layers this machine gives a child.
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["MODES", "calling_line", "default_mode", "layers", "resolve_mode"]

MODES = ("process", "inprocess")
ENV = "PLANLANG_ISOLATION"


def resolve_mode(mode: str | None) -> str:
    """The isolation a run gets: the one asked for, else ``PLANLANG_ISOLATION``, else
    process (model-written code is treated as written by an adversary)."""
    chosen = mode if mode is not None else os.environ.get(ENV) or "process"
    if chosen not in MODES:
        raise ValueError(f"isolation={chosen!r} must be one of {', '.join(MODES)}.")
    return chosen


_calling = threading.local()


def calling_line() -> int | None:
    """In a host word called from a plan's process: the plan line that called it (the plan's
    frames are in that process, so a host word cannot find them on its own stack)."""
    return getattr(_calling, "line", None)


def default_mode() -> str:
    return resolve_mode(None)


def layers() -> list[dict[str, Any]]:
    """Each confinement layer a plan's process gets here: name, active, detail."""
    from planlang.isolation.pool import default_pool

    return [
        {"name": name, "active": bool(active), "detail": str(detail)}
        for name, active, detail in default_pool().layers()
    ]
