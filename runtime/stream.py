"""The streaming fan-out: results as workers finish, not when the slowest one does.

``run.stream(thunks)`` yields ``(index, result)`` in completion order. ``add(thunk)`` puts more
work into the same stream while iterating (its index continues after the initial thunks), and
``then=f`` chains a second stage: each first-stage result ``r`` goes straight on to ``f(r)`` on
the same worker, and only second-stage results are yielded (a failed first stage yields None).
Leaving the loop early cancels the thunks that have not started yet.

A stream's items wait in the stream itself, and the pool runs them through one runner per item.
A pool worker that waits on a stream (a ``parallel`` thunk calling ``next(s)``) runs the
stream's waiting items itself instead of blocking, so a pool full of consumers cannot starve
the items they wait for. A worker waits only on items that run on other workers, and those
cannot wait on this stream in turn (its iterator is busy on this thread: Python refuses with
"generator already executing"), so every wait ends.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fanout import FanOut, Thunk

__all__ = ["Stream"]

_POLL = 0.05  # how often a waiting consumer looks whether the run was cancelled


class Stream:
    def __init__(
        self, fan_out: FanOut, thunks: list[Thunk], then: Callable[[Any], Any] | None
    ) -> None:
        self._fan_out = fan_out
        self._then = then
        self._initial = thunks
        self._next_index = len(thunks)
        self._waiting: collections.deque[tuple[int, Thunk]] = collections.deque()
        self._outstanding = 0  # items scheduled and not yet yielded
        self._done: queue.SimpleQueue[tuple[int, Any, BaseException | None]] = queue.SimpleQueue()
        self._started = False
        self._closed = False
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
        self._schedule(index, self._chain(thunk))
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

    def _schedule(self, index: int, thunk: Thunk) -> None:
        with self._lock:
            self._waiting.append((index, thunk))
            self._outstanding += 1
        self._fan_out.submit(index, self._run_next)

    def _run_next(self) -> None:
        """Run one waiting item on this thread (a pool runner, or a consumer helping)."""
        with self._lock:
            if self._closed or not self._waiting:
                return  # a helping consumer already ran it, or the loop was left
            index, thunk = self._waiting.popleft()
        result: Any = None
        error: BaseException | None = None
        try:
            result = self._fan_out.guarded(index, thunk)
        except BaseException as exc:  # a RunError ends the run: the consumer re-raises it
            error = exc
        self._done.put((index, result, error))

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
            self._schedule(index, self._chain(thunk))
        try:
            while True:
                with self._lock:
                    if not self._outstanding:
                        break
                index, result, error = self._next_done()
                with self._lock:
                    self._outstanding -= 1
                if error is not None:
                    raise error
                yield index, result
        finally:
            with self._lock:
                self._closed = True
                self._waiting.clear()

    def _next_done(self) -> tuple[int, Any, BaseException | None]:
        """The next finished item; a pool worker runs waiting items itself meanwhile."""
        helping = self._fan_out.in_worker()
        while True:
            try:
                return self._done.get_nowait()
            except queue.Empty:
                pass
            if self._fan_out.closed():
                raise self._fan_out.cancelled()
            if helping:
                with self._lock:
                    waiting = bool(self._waiting)
                if waiting:
                    self._run_next()
                    continue
            try:
                return self._done.get(timeout=_POLL)
            except queue.Empty:
                continue


def _bind(then: Callable[[Any], Any], result: Any) -> Callable[[], Any]:
    """A thunk running the second stage on one first-stage result."""
    return lambda: then(result)
