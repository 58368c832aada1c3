"""The waits a run records for the picture of it: for an agent slot, and at the budget cap.

(A worker's check runs with its slot given back, ``without_slot``: it may wait on agents.)

A worker that took a slot at once (and whose thunk did not queue at the pool for more than a
millisecond) leaves no event for it: its ``worker_started`` says when it began. One that
queued leaves ``worker_running`` with the time it began queueing. A wait at the cap leaves
``paused`` when it begins and ``resumed`` when it ends, admitted or stopped. The budget
itself leaves ``budget`` as the run starts and ``cap_raised`` at every raise of its cap.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .budget import Budget

__all__ = ["BudgetWait", "Watcher", "take_slot", "watch_budget", "without_slot"]

_monotonic_ns = time.monotonic_ns
_QUEUED_NS = 1_000_000  # a worker that queued for less (1 ms) gets no worker_running event


def take_slot(slots: queue.SimpleQueue[None], queued_ns: int) -> bool:
    """Take one of the run's agent slots; True when the worker queued (for it, or at the pool)."""
    try:
        slots.get_nowait()
    except queue.Empty:
        slots.get()
        return True
    return _monotonic_ns() - queued_ns > _QUEUED_NS


def without_slot(
    slots: queue.SimpleQueue[None], check: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    """The plan's check, run with its worker's agent slot given back: a check may fan out or
    take from a stream, and the agents it waits for need slots of their own."""

    def unslotted(value: Any) -> Any:
        slots.put(None)
        try:
            return check(value)
        finally:
            slots.get()

    return unslotted


class BudgetWait:
    """One worker's ``on_wait`` and ``on_resume`` for the budget: the two events of a wait."""

    __slots__ = ("_emit", "_worker", "_began")

    def __init__(self, emit: Callable[..., Any], worker: int) -> None:
        self._emit = emit
        self._worker = worker
        self._began: list[int] = []

    def on_wait(self) -> None:
        self._began.append(_monotonic_ns())
        self._emit("paused", worker=self._worker, reason="budget cap")

    def on_resume(self) -> None:
        now = _monotonic_ns()
        began = self._began.pop() if self._began else now
        self._emit("resumed", worker=self._worker, waited=(now - began) // 1000 / 1e6)


Watcher = Callable[[float | None, float | None], None]


def watch_budget(budget: Budget, emit: Callable[..., Any]) -> Watcher:
    """Record the budget as a run starts and every raise of its cap; unwatch what it returns."""
    spent, reserved, cap = budget.snapshot()
    emit("budget", spent=spent, reserved=reserved, cap=cap)

    def raised(old: float | None, new: float | None) -> None:  # told just before it holds
        spent, reserved, _ = budget.snapshot()
        emit("cap_raised", old_cap=old, cap=new, spent=spent, reserved=reserved)

    budget.watch(raised)
    return raised
