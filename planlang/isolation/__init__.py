"""Isolated plans: each run in its own confined process (docs/SECURITY.md, layers 3 and 4).

``Sandbox(isolation="process")`` (the default) runs the checked plan in a child process forked
from a warm server, with hard resource limits and the operating system's confinement, while
host words keep running in the host. ``layers()`` says which layers this machine gives a child.

    mode     which isolation a run gets (``resolve_mode``), and ``calling_line``
    codec    plain data as JSON trees; bounded decoding in the host
    frames   frames on a pipe (length, time sent, orjson body), read in chunks
    channel  requests both ways over one pipe pair, many in flight, each on its thread
    wire     errors as plain data
    child    the plan's process: one run in the in-process sandbox
    zygote   the fork server every child is forked from
    warming  what a ready child does while it waits: warm-up plans, at idle priority
    heap_warming  the heap pages a run would copy, written while it waits
    orphans  the fork server ends whatever a child forked, as the child ends
    pool     warm children, one run each
    parent   the host side: host words served, callbacks, the wall-clock kill
    confine  namespaces, landlock, the audit hook, resource limits
    seccomp  the system-call filter
    syscalls the few system calls made through libc, and ``Layer``
    doctor   ``planlang doctor``
    testing  tests only: raw Python in a confined child
"""

from __future__ import annotations

from typing import Any

from planlang.isolation.mode import MODES, calling_line, resolve_mode

__all__ = ["MODES", "calling_line", "default_mode", "layers", "resolve_mode"]


def default_mode() -> str:
    return resolve_mode(None)


def layers() -> list[dict[str, Any]]:
    """Each confinement layer a plan's process gets here: name, active, detail."""
    from planlang.isolation.pool import default_pool

    return [
        {"name": name, "active": bool(active), "detail": str(detail)}
        for name, active, detail in default_pool().layers()
    ]
