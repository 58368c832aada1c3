"""The C stack of the threads a run starts.

``threading.stack_size`` is process-wide, so it is set just around starting a thread, under a
lock, and put back. Plan code that C code walks recursively (CPython hashes nested tuples that
way) needs a deeper stack than the platform's default; ``Settings.thread_stack_mb`` says how deep.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["thread_stack"]

_STACK_LOCK = threading.Lock()


@contextlib.contextmanager
def thread_stack(mib: int | None) -> Iterator[None]:
    """Threads started inside get a ``mib`` MiB stack (threading.stack_size is process-wide)."""
    if mib is None:
        yield
        return
    with _STACK_LOCK:
        previous = threading.stack_size(mib * 2**20)
        try:
            yield
        finally:
            threading.stack_size(previous)
