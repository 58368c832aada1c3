"""What frames queued for a waiting thread may take, together, on one channel.

Each frame the host reads is held to its budget alone (``FrameReader.set_budget``); frames the
reader hands to a thread that is busy (a host word's thread waiting on a callback) wait in
that thread's inbox, unread, and add up: a plan's process could queue notices for it without
end. So what is queued is counted as it would take decoded, and held to the same budget.

The answers a host word gathers from callbacks (a fan-out word's, ``parallel``'s) are decoded
copies here, where in one process they would all be one object: each large one is kept
(``keep``) and counted while anything of the host's still refers to it, its reference count
says. Those only this holds are released by a sweep, which looks at every kept answer: before a
frame would pass the budget; as requests are served, once there were a quarter as many
requests as answers kept since the last sweep, or a MiB of answers was kept since (a sweep at
every request made a fan-out of n large answers n² work: 2,000 callbacks that each call a
host word, 100 ms of 325; a sweep only as kept answers doubled let a few large dead ones stay
for the rest of the run: 8 of 1.3 MB, REVIEW12); and at the run's end.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from planlang.isolation.frames import _EXPANSION, FrameTooCostly, decoded_cost, dumps

__all__ = ["Queued"]

SMALL = 4096  # bytes of JSON: a frame this small is counted at the most a byte can become
SWEEP_BYTES = 2**20  # answers kept since the last sweep that make the next request sweep


def _alone() -> int:
    """What ``sys.getrefcount`` says of a value only a dict of ours holds (versions differ)."""
    kept = {0: object()}
    return sys.getrefcount(kept[0])


_ALONE = _alone()


class Queued:
    """Frames queued on one channel, by what they may take decoded."""

    __slots__ = ("total", "costs", "what", "kept", "_lock", "_served", "_added")

    def __init__(self, what: str = "queued for a busy host thread") -> None:
        self.what = what  # how they are held, for the error
        self.total = 0
        self.costs: dict[int, int] = {}  # id of a queued frame -> its cost
        self.kept: dict[int, Any] = {}  # id -> a callback's answer, counted while referred to
        self._lock = threading.Lock()
        self._served = 0  # requests served since the last sweep
        self._added = 0  # bytes of answers kept since the last sweep

    def add(self, message: Any, budget: int | None) -> None:
        """Count ``message``, queued now; FrameTooCostly if all queued would pass ``budget``
        (None: no bound, nothing counted)."""
        if budget is None:
            return
        data = dumps(message)
        self.count(message, _EXPANSION * len(data) if len(data) < SMALL else decoded_cost(data),
                   budget)  # fmt: skip

    def count(self, message: Any, cost: int, budget: int) -> None:
        """Count ``message`` at ``cost`` (bytes it may take decoded), as ``add`` does."""
        with self._lock:
            self._count(message, cost, budget)

    def _count(self, message: Any, cost: int, budget: int) -> None:
        if self.total + cost > budget and self.kept:
            self._sweep()
        if self.total + cost > budget:
            raise FrameTooCostly(
                f"Messages from the plan's process {self.what} would "
                f"take about {(self.total + cost) / 2**20:,.0f} MiB here, past the "
                f"{budget / 2**20:,.0f} MiB the host takes from it at once."
            )
        self.total += cost
        self.costs[id(message)] = cost

    def take(self, message: Any) -> None:
        """``message`` is out of its queue (nothing if it was never counted)."""
        with self._lock:
            self.total -= self.costs.pop(id(message), 0)
            kept = self.kept
            if kept:
                self._served += 1
                if 4 * self._served >= len(kept) or self._added >= SWEEP_BYTES:
                    self._sweep()  # amortized: 4 answers looked at a request, or a sweep a MiB

    def keep(self, value: Any, cost: int, budget: int | None) -> None:
        """Count ``value``, a callback's answer, at ``cost`` while the host refers to it
        (once: a host word's own str may be its answer again and again)."""
        if budget is not None:
            with self._lock:
                if id(value) in self.kept:
                    return
                self._count(value, cost, budget)
                self.kept[id(value)] = value
                self._added += cost

    def rekey(self, raw: Any, value: Any) -> None:
        """``raw``, kept, was decoded to ``value``: the count goes on as ``value``'s."""
        with self._lock:
            if self.kept.pop(id(raw), None) is not None:
                cost = self.costs.pop(id(raw), 0)
                self.costs[id(value)] = cost
                self.kept[id(value)] = value

    def clear(self) -> None:
        """The run is over: nothing is kept."""
        with self._lock:
            for key in self.kept:
                self.total -= self.costs.pop(key, 0)
            self.kept.clear()

    def _sweep(self) -> None:
        """Release the answers nothing but ``kept`` refers to (the lock held)."""
        kept, alone, refcount = self.kept, _ALONE, sys.getrefcount
        for key in [key for key in kept if refcount(kept[key]) <= alone]:
            del kept[key]
            self.total -= self.costs.pop(key, 0)
        self._served = self._added = 0
