"""A virtual clock for rehearsals: how long would this plan take against real models?

The stand-in answers at once, so a rehearsal's real wall time says nothing. Instead every
stand-in call ticks a per-thread virtual clock by the expected latency of one call; a fan-out
(``parallel``, ``stream``) measures each thunk's virtual duration and adds the makespan of
scheduling them on ``concurrency`` slots, longest first. The plan thread's clock at the end is
the estimate: sequential calls add up, parallel ones overlap as the real pool would let them.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["VirtualClock"]


class VirtualClock:
    def __init__(self, latency: float, concurrency: int):
        self.latency = latency
        self.concurrency = concurrency
        self._by_thread: dict[int, float] = {}  # thread id -> its virtual time

    @property
    def elapsed(self) -> float:
        """This thread's virtual time."""
        return self._by_thread.get(threading.get_ident(), 0.0)

    def _set(self, seconds: float) -> None:
        self._by_thread[threading.get_ident()] = seconds

    def _add(self, seconds: float) -> None:
        self._set(self.elapsed + seconds)

    def total(self) -> float:
        """The plan's virtual time: the longest clock. Workers give theirs back after each
        thunk, so what is left is the clock of the thread that ran the plan's own code."""
        return max(self._by_thread.values(), default=0.0)

    def tick(self) -> None:
        """One model call on this thread."""
        self._add(self.latency)

    def _timed(self, thunk: Callable[[], Any], durations: list[float], i: int) -> Callable[[], Any]:
        def timed() -> Any:
            saved = self.elapsed
            self._set(0.0)
            try:
                return thunk()
            finally:
                durations[i] = self.elapsed
                self._set(saved)

        return timed

    def makespan(self, durations: list[float], slots: int) -> float:
        """Greedy list scheduling in submission order, as a thread pool runs them."""
        free = [0.0] * max(1, min(slots, len(durations) or 1))
        for d in durations:
            heapq.heappush(free, heapq.heappop(free) + d)
        return max(free) if durations else 0.0

    def parallel(
        self, fan_out: Callable[[list[Callable[[], Any]]], Any], thunks: Iterable[Any],
        nested: bool,
    ) -> Any:  # fmt: skip
        thunks = list(thunks)
        durations = [0.0] * len(thunks)
        timed = [self._timed(t, durations, i) if callable(t) else t for i, t in enumerate(thunks)]
        result = fan_out(timed)
        self._add(self.makespan(durations, 1 if nested else self.concurrency))
        return result

    def stream(
        self, fan_out: Callable[[list[Callable[[], Any]]], Iterator[Any]], thunks: Iterable[Any],
        nested: bool,
    ) -> Iterator[Any]:  # fmt: skip
        thunks = list(thunks)
        durations = [0.0] * len(thunks)
        timed = [self._timed(t, durations, i) if callable(t) else t for i, t in enumerate(thunks)]
        items = fan_out(timed)

        def follow() -> Iterator[Any]:
            yield from items
            self._add(self.makespan(durations, 1 if nested else self.concurrency))

        return follow()
