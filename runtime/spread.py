"""One ``parallel``'s thunks on the run's pool: a few tasks, each taking the next thunk in turn.

A future and a work item for every thunk (1,000 of a rehearsal's workers: a Future with its
Condition, a queue entry and a pool wake-up each) cost the host more than the bookkeeping of
the thunk itself, and a thousand futures alive through the fan-out keep the garbage collector
walking them. So a fan-out starts at most ``width`` tasks on the pool, and each runs thunks in
the order given, taking the next until none is left: the same thunks at once (no more than the
pool's threads), in the same order, as the pool ran their futures.

What the fan-out gives is as before: the results in order; a thunk's plain exception stays
with it (``FanOut.guarded``: None); the first error in order is raised once every thunk before
it is done, and the thunks not started by then never start; a run cancelled meanwhile ends the
thunks not started with ``RunCancelled``. The waiting thread is woken once, when that is known.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fanout import FanOut, Thunk

__all__ = ["Spread"]


class Spread:
    """The state of one fan-out: which thunk is next, which are done, what they gave."""

    __slots__ = ("_fan_out", "_thunks", "_results", "_errors", "_ended", "_next", "_prefix",
                 "_first_error", "_tasks", "_stopped", "_lock", "_woken", "_queued_ns")  # fmt: skip

    def __init__(self, fan_out: FanOut, thunks: list[Thunk]) -> None:
        self._fan_out = fan_out
        self._thunks = thunks
        self._results: list[Any] = [None] * len(thunks)
        self._errors: dict[int, BaseException] = {}
        self._ended = bytearray(len(thunks))  # 1: its thunk is done (or will never run)
        self._next = 0  # the next thunk a task takes
        self._prefix = 0  # every thunk before it has ended
        self._first_error: int | None = None  # the first thunk in order that raised
        self._tasks = 0  # tasks started and not yet over
        self._stopped = False  # no thunk starts any more
        self._lock = threading.Lock()
        self._woken = threading.Event()
        self._queued_ns = time.monotonic_ns()  # every thunk was handed to the pool now

    def results(self) -> list[Any]:
        """Run the thunks; their results in order, or the first error in order."""
        count = len(self._thunks)
        if not count:
            return []
        try:
            for _ in range(min(count, self._fan_out.width)):
                with self._lock:
                    self._tasks += 1
                try:
                    task = self._fan_out.start(self._work)
                except BaseException:
                    self._task_over(None)
                    raise
                task.add_done_callback(self._task_over)  # at once for one already over
            self._woken.wait()
            with self._lock:
                first = self._first_error
                if first is not None and first < self._prefix:
                    error = self._errors[first]
                else:
                    return self._results
            raise error
        finally:
            with self._lock:
                self._stopped = True  # what has not started never starts

    def _work(self) -> None:
        """A pool task: the next thunk in order, until none is left."""
        guarded, thunks, results = self._fan_out.guarded, self._thunks, self._results
        while True:
            with self._lock:
                index = self._next
                if self._stopped or index >= len(thunks):
                    return
                self._next = index + 1
            error: BaseException | None = None
            try:
                results[index] = guarded(index, thunks[index], self._queued_ns)
            except BaseException as exc:  # a RunError (or an interrupt): the fan-out's to raise
                error = exc
            self._end(index, index + 1, error)

    def _task_over(self, task: Future[Any] | None) -> None:
        """A task ended (or was cancelled before it started: the run was cancelled). When
        none is left, the thunks none of them took never run: each ends with RunCancelled,
        as a thunk's cancelled future did."""
        with self._lock:
            self._tasks -= 1
            if self._tasks or self._next >= len(self._thunks):
                return
            start = self._next
            self._next = len(self._thunks)
        self._end(start, len(self._thunks), self._fan_out.cancelled())

    def _end(self, start: int, stop: int, error: BaseException | None) -> None:
        """Thunks ``start`` to ``stop`` ended (with ``error``, if any); wake the waiting thread
        once every thunk has ended, or once the first that raised has every one before it
        ended."""
        with self._lock:
            ended = self._ended
            for index in range(start, stop):
                ended[index] = 1
            if error is not None:
                self._errors[start] = error
                if self._first_error is None or start < self._first_error:
                    self._first_error = start
            prefix, count = self._prefix, len(ended)
            while prefix < count and ended[prefix]:
                prefix += 1
            self._prefix = prefix
            first = self._first_error
            wake = prefix == count or (first is not None and first < prefix)
        if wake:
            self._woken.set()
