"""What frames queued for a waiting thread may take, together, on one channel.

Each frame the host reads is held to its budget alone (``FrameReader.set_budget``); frames the
reader hands to a thread that is busy (a host word's thread waiting on a callback) wait in
that thread's inbox, unread, and add up: a plan's process could queue notices for it without
end. So what is queued is counted as it would take decoded, and held to the same budget.
"""

from __future__ import annotations

import threading
from typing import Any

from planlang.isolation.frames import _EXPANSION, FrameTooCostly, decoded_cost, dumps

__all__ = ["Queued"]

SMALL = 4096  # bytes of JSON: a frame this small is counted at the most a byte can become


class Queued:
    """Frames queued on one channel, by what they may take decoded."""

    __slots__ = ("total", "costs", "what", "_lock")

    def __init__(self, what: str = "queued for a busy host thread") -> None:
        self.what = what  # how they are held, for the error
        self.total = 0
        self.costs: dict[int, int] = {}  # id of a queued frame -> its cost
        self._lock = threading.Lock()

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
