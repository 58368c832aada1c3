"""The streaming fan-out: results as workers finish, not when the slowest one does.

``run.stream(thunks)`` yields ``(index, result)`` in completion order. ``add(thunk)`` puts more
work into the same stream while iterating (its index continues after the initial thunks), and
``then=f`` chains a second stage: each first-stage result ``r`` goes straight on to ``f(r)`` on
the same worker, and only second-stage results are yielded (a failed first stage yields None).
Leaving the loop early cancels the thunks that have not started yet.

A stream's items wait in the stream itself, and the pool runs them through at most ``width``
runners, each taking the next waiting item until none is left (a pool task per item made
600,000 items cost the host 18 s of submits and futures, past any plan's clock).
Whoever advances a stream (the plan, or a pool worker in a ``parallel`` thunk calling
``next(s)``) runs its waiting items itself instead of blocking: a pool worker always, the plan's
thread when every pool thread is blocked on streams. So a pool full of consumers cannot starve
the items they wait for. Several threads may take from one stream at once: they take turns,
and each result goes to one of them. A ``next()`` that could only wait for itself (a stream's
thunks taking from it, directly or through other streams) raises ``FanOutDeadlock`` at once
(``runtime.stream_deps``), so every wait ends.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import FanOutDeadlock, RunError
from .stream_deps import items_running, note_take

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
        self._waiting: collections.deque[tuple[int, Thunk, int]] = collections.deque()
        self._outstanding = 0  # items scheduled and not yet yielded
        self._runners = 0  # pool tasks taking waiting items (at most the pool's width)
        self._done: queue.SimpleQueue[tuple[int, Any, BaseException | None]] = queue.SimpleQueue()
        self._started = False
        self._scheduled = False
        self._closed = False
        self._inline_mode = False
        self._inline: list[tuple[int, Thunk]] = []
        self._lock = threading.Lock()
        self._turn = threading.Condition(self._lock)  # consumers take turns advancing it
        self._owner: int | None = None  # the thread advancing it now
        self._ended: BaseException | None = None  # what ended it (raised again to later takers)
        self.takes_from: set[Any] = set()  # streams its thunks took from (stream_deps)

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
        self._schedule_all([(index, thunk, time.monotonic_ns())])

    def _schedule_all(self, items: list[tuple[int, Thunk, int]]) -> None:
        """Queue items, and start runners for them while the pool has room for more."""
        with self._lock:
            self._waiting.extend(items)
            self._outstanding += len(items)
            start = max(0, min(len(self._waiting), self._fan_out.width - self._runners))
            self._runners += start
        for started in range(start):
            try:
                self._fan_out.start(self._runner)
            except BaseException:  # the run was cancelled: its consumer raises that
                with self._lock:
                    self._runners -= start - started
                raise

    def _runner(self) -> None:
        """A pool task: the next waiting item, until none is left (or the stream closed).
        It stops counting itself under the lock that found nothing waiting, so an item added
        meanwhile starts a runner of its own."""
        while True:
            with self._lock:
                if self._closed or not self._waiting:
                    self._runners -= 1
                    return
                item = self._waiting.popleft()
            self._run(*item)

    def _run_next(self) -> bool:
        """Run one waiting item on this thread (a consumer helping); False when none was."""
        with self._lock:
            if self._closed or not self._waiting:
                return False  # a runner already took it, or the loop was left
            item = self._waiting.popleft()
        self._run(*item)
        return True

    def _run(self, index: int, thunk: Thunk, queued_ns: int) -> None:
        """One item as a worker; its result (or what it raised) goes to the consumers."""
        result: Any = None
        error: BaseException | None = None
        items = items_running()
        items.append(self)
        try:
            result = self._fan_out.guarded(index, thunk, queued_ns)
        except BaseException as exc:  # a RunError ends the run: the consumer re-raises it
            error = exc
            if isinstance(exc, RunError):  # and the items not started never start: 600,000
                self._cancel_waiting()  # each ran to raise it again (red team 21)
        finally:
            items.pop()
        self._done.put((index, result, error))

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        with self._lock:
            if self._started:
                raise ValueError("A stream can be iterated only once.")
            self._started = True
            self._inline_mode = self._fan_out.in_worker()
            if self._inline_mode:
                self._inline = list(enumerate(self._initial))
        return _Taking(self)

    # -- one next() ----------------------------------------------------------------------

    def take(self) -> tuple[int, Any]:
        """The next ``(index, result)``: wait for this thread's turn, then for a result."""
        note_take(self)  # FanOutDeadlock when this next() could only wait for itself
        me = threading.get_ident()
        with self._turn:
            while self._owner is not None:
                if self._owner == me:  # the plan's own re-entry, outside any thunk
                    raise FanOutDeadlock("A stream was advanced again inside its own next().")
                if self._fan_out.closed():
                    raise self._fan_out.cancelled()
                with self._fan_out.blocked():
                    self._turn.wait(_POLL)
            if self._ended is not None:
                raise self._ended
            self._owner = me
        try:
            return self._inline_step() if self._inline_mode else self._pool_step()
        except BaseException as exc:
            self.close(exc)
            raise
        finally:
            with self._turn:
                self._owner = None
                self._turn.notify()

    def _cancel_waiting(self) -> None:
        with self._lock:
            self._outstanding -= len(self._waiting)
            self._waiting.clear()

    def close(self, why: BaseException | None = None) -> None:
        """Cancel the items not yet started; later takers get ``why`` again (or stop)."""
        with self._lock:
            self._closed = True
            self._waiting.clear()
            self._inline.clear()
            if self._ended is None:
                self._ended = why if why is not None else StopIteration()

    def _inline_step(self) -> tuple[int, Any]:
        # Inside a worker: run in order on this thread, so nesting cannot deadlock the pool.
        with self._lock:
            if not self._inline:
                raise StopIteration
            index, thunk = self._inline.pop(0)
        then = self._then
        items = items_running()
        items.append(self)
        try:
            result = self._fan_out.guarded(index, thunk)
            if then is not None and result is not None:
                result = self._fan_out.guarded(index, _bind(then, result))
        finally:
            items.pop()
        return index, result

    def _pool_step(self) -> tuple[int, Any]:
        if not self._scheduled:
            self._scheduled = True
            queued_ns = time.monotonic_ns()
            chain = self._chain
            self._schedule_all([(i, chain(t), queued_ns) for i, t in enumerate(self._initial)])
        with self._lock:
            if not self._outstanding:
                raise StopIteration
        index, result, error = self._next_done()
        with self._lock:
            self._outstanding -= 1
        if error is not None:
            raise error
        return index, result

    def _next_done(self) -> tuple[int, Any, BaseException | None]:
        """The next finished item; the consumer runs waiting items itself meanwhile (a pool
        worker always; the plan's thread when every pool thread is blocked on a stream)."""
        fan_out = self._fan_out
        worker = fan_out.in_worker()
        while True:
            try:
                return self._done.get_nowait()
            except queue.Empty:
                pass
            if fan_out.closed():
                raise fan_out.cancelled()
            with self._lock:
                waiting = bool(self._waiting)
            if waiting and (worker or fan_out.pool_stuck()):
                self._run_next()
                continue
            try:
                with fan_out.blocked():
                    return self._done.get(timeout=_POLL)
            except queue.Empty:
                continue


class _Taking:
    """The iterator of a stream: ``next()`` may come from several threads at once (they take
    turns); leaving it (the loop broken, the iterator dropped) cancels unstarted items."""

    __slots__ = ("_stream", "__weakref__")

    def __init__(self, stream: Stream) -> None:
        self._stream = stream

    def __iter__(self) -> _Taking:
        return self

    def __next__(self) -> tuple[int, Any]:
        return self._stream.take()

    def __del__(self) -> None:
        self._stream.close()


def _bind(then: Callable[[Any], Any], result: Any) -> Callable[[], Any]:
    """A thunk running the second stage on one first-stage result."""
    return lambda: then(result)
