"""Which streams a stream's thunks take from, so a cycle is refused instead of waiting for ever.

A thread running one of stream ``s``'s thunks (on a pool thread, or helping while it waits)
has ``s`` on its stack here. When that thunk calls ``next(t)``, ``s`` takes from ``t``. Were
``t`` to take from ``s`` in turn (or ``s`` itself be ``t``), each would wait for the other's
thunks, which wait for it: ``note_take`` refuses the ``next()`` that closes such a cycle with
``FanOutDeadlock``, whichever of the two comes first, so the verdict does not hang on timing.

Every wait a stream makes is either for its turn (another thread is advancing it) or for its
own running thunks; a cycle of such waits always runs through a cycle of takes, which is why
refusing those (and the owner helping with waiting thunks) leaves no wait that cannot end.
"""

from __future__ import annotations

import threading
from typing import Protocol

from .errors import FanOutDeadlock

__all__ = ["Taker", "items_running", "note_take"]


class Taker(Protocol):
    takes_from: set[Taker]


_local = threading.local()
_lock = threading.Lock()  # the edges of every stream: one short lock, taken once per next()

_OWN = (
    "A stream's own thunks take from it: this next() runs inside one of its thunks (or a "
    "function they call), so it would wait for itself."
)
_CYCLE = (
    "Streams whose thunks take from each other: this next() closes a cycle of streams, each "
    "waiting for the next one's thunks, which could never end."
)


def items_running() -> list[Taker]:
    """This thread's stack of streams whose thunks it is running (innermost last)."""
    items: list[Taker] | None = getattr(_local, "items", None)
    if items is None:
        items = _local.items = []
    return items


def note_take(stream: Taker) -> None:
    """Record that the thunk running on this thread takes from ``stream``; refuse a cycle."""
    items = getattr(_local, "items", None)
    if not items:
        return  # the plan's own code, or a parallel thunk: nothing waits on it as a stream
    if stream in items:
        raise FanOutDeadlock(_OWN)
    source = items[-1]
    with _lock:
        if stream in source.takes_from:
            return
        if _reaches(stream, source):
            raise FanOutDeadlock(_CYCLE)
        source.takes_from.add(stream)


def _reaches(start: Taker, goal: Taker) -> bool:
    seen: set[int] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        if node is goal:
            return True
        if id(node) not in seen:
            seen.add(id(node))
            todo.extend(node.takes_from)
    return False
