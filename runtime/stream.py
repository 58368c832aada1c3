"""The streaming fan-out: results as workers finish, not when the slowest one does.

``run.stream(thunks)`` yields ``(index, result)`` in completion order. ``add(thunk)`` puts more
work into the same stream while iterating (its index continues after the initial thunks), and
``then=f`` chains a second stage: each first-stage result ``r`` goes straight on to ``f(r)`` on
the same worker, and only second-stage results are yielded (a failed first stage yields None).
Leaving the loop early cancels the thunks that have not started yet.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fanout import FanOut, Thunk


class Stream:
    def __init__(
        self, fan_out: FanOut, thunks: list[Thunk], then: Callable[[Any], Any] | None
    ) -> None:
        self._fan_out = fan_out
        self._then = then
        self._initial = thunks
        self._next_index = len(thunks)
        self._done: queue.SimpleQueue[tuple[int, bool, Future[Any]]] = queue.SimpleQueue()
        self._pending: set[Future[Any]] = set()
        self._started = False
        self._inline_mode = False
        self._inline: list[tuple[int, Thunk]] = []
        self._lock = threading.Lock()

    def add(self, thunk: Thunk) -> int:
        """Add work to the stream (before or while iterating); returns its result's index."""
        with self._lock:
            index = self._next_index
            self._next_index += 1
            if not self._started:
                self._initial.append(thunk)
                return index
            if self._inline_mode:
                self._inline.append((index, thunk))
                return index
        self._schedule(index, self._chain(thunk), final=True)
        return index

    def _chain(self, thunk: Thunk) -> Thunk:
        """The thunk followed by ``then`` on the same worker, so each item flows through both
        stages without queueing again behind the remaining first-stage work."""
        then = self._then
        if then is None:
            return thunk

        def both() -> Any:
            first = thunk()
            return None if first is None else then(first)

        return both

    def _schedule(self, index: int, thunk: Thunk, *, final: bool) -> None:
        future = self._fan_out.submit(index, thunk)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(lambda f: self._done.put((index, final, f)))

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        with self._lock:
            if self._started:
                raise ValueError("A stream can be iterated only once.")
            self._started = True
            self._inline_mode = self._fan_out.in_worker()
            if self._inline_mode:
                self._inline = list(enumerate(self._initial))
        return self._inline_iter() if self._inline_mode else self._pool_iter()

    def _inline_iter(self) -> Iterator[tuple[int, Any]]:
        # Inside a worker: run in order on this thread, so nesting cannot deadlock the pool.
        then = self._then
        while self._inline:
            index, thunk = self._inline.pop(0)
            result = self._fan_out.guarded(index, thunk)
            if then is not None and result is not None:
                result = self._fan_out.guarded(index, _bind(then, result))
            yield index, result

    def _pool_iter(self) -> Iterator[tuple[int, Any]]:
        for index, thunk in enumerate(self._initial):
            self._schedule(index, self._chain(thunk), final=True)
        try:
            while True:
                with self._lock:
                    if not self._pending:
                        break
                index, final, future = self._done.get()
                with self._lock:
                    self._pending.discard(future)
                yield index, self._fan_out.outcome(future)
        finally:
            with self._lock:
                leftover = list(self._pending)
            for future in leftover:
                future.cancel()


def _bind(then: Callable[[Any], Any], result: Any) -> Callable[[], Any]:
    """A thunk running the second stage on one first-stage result."""
    return lambda: then(result)
