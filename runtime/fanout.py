"""The fan-out of a run: thunks on a bounded thread pool, each failure kept with its worker.

``parallel`` and ``stream`` both hand thunks to this pool (``parallel`` through a few tasks
that take its thunks in turn, ``runtime.spread``; a stream an item each). A thunk's ordinary
exception stays with it (its result is ``None`` and the run is told), while a ``RunError`` ends
the run. A thunk that fans out again from inside a worker runs its thunks inline instead, so
nesting can never deadlock the pool. Cancellation is the run's business: the pool only asks it
whether it is closed, and for a fresh ``RunCancelled`` to raise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from .errors import RunCancelled, RunError
from .spread import Spread
from .stacks import thread_stack

__all__ = ["FanOut", "Thunk"]

Thunk = Callable[[], Any]
_POOL_PREFIX = "planlang-worker"


class FanOut:
    """A run's worker pool (``concurrency`` threads, each with a ``stack_mb`` stack if set)."""

    def __init__(
        self,
        concurrency: int,
        stack_mb: int | None,
        *,
        closed: Callable[[], bool],
        cancelled: Callable[[], RunCancelled],
        failed: Callable[[int, Exception], None],
    ) -> None:
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix=_POOL_PREFIX)
        self.width = concurrency
        self._local = threading.local()
        self._stack_mb = stack_mb
        self._closed = closed
        self._cancelled = cancelled
        self._failed = failed
        self.closed, self.cancelled = closed, cancelled  # for a stream's consumer
        self._blocked = 0  # pool threads waiting on a stream (its turn, or its items)
        self._blocked_lock = threading.Lock()

    def in_worker(self) -> bool:
        """Is the calling thread running a thunk of this pool (or one run inline)?"""
        return bool(getattr(self._local, "worker", False))

    @contextmanager
    def blocked(self) -> Iterator[None]:
        """Around a stream's wait: counts a pool thread as blocked, for ``pool_stuck``."""
        if not threading.current_thread().name.startswith(_POOL_PREFIX):
            yield
            return
        with self._blocked_lock:
            self._blocked += 1
        try:
            yield
        finally:
            with self._blocked_lock:
                self._blocked -= 1

    def pool_stuck(self) -> bool:
        """Is every pool thread waiting on a stream? Then no pool thread will run a queued
        item soon, and a consumer outside the pool runs it itself."""
        threads = len(self._pool._threads)  # the pool's live threads (CPython's executor)
        return self._blocked >= max(threads, 1)

    def guarded(self, index: int, thunk: Thunk, queued_ns: int | None = None) -> Any:
        """Run a thunk as a worker: a plain exception stays with it (result None).

        ``queued_ns`` is when the thunk was handed to the pool: the first worker it starts
        takes it (``take_queued_ns``), so a run can record how long that worker queued.
        """
        if self._closed():
            raise self._cancelled()
        local = self._local
        outer = getattr(local, "worker", False)
        local.worker = True
        local.queued_ns = queued_ns
        try:
            return thunk()
        except RunError:
            raise
        except Exception as exc:
            if self._closed():  # the run's end cut it off (an ended plan's callback): cancelled
                raise self._cancelled() from None
            self._failed(index, exc)
            return None
        finally:
            local.worker = outer
            local.queued_ns = None

    def take_queued_ns(self) -> int | None:
        """When this thread's thunk was queued, once: later workers of the thunk get None."""
        local = self._local
        queued = getattr(local, "queued_ns", None)
        if queued is not None:
            local.queued_ns = None
        return queued

    def submit(self, index: int, thunk: Thunk) -> Future[Any]:
        """Schedule one thunk on the pool."""
        return self.start(self.guarded, index, thunk, time.monotonic_ns())

    def start(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` on a pool thread (a thunk's ``guarded``, or a ``parallel``'s task
        that takes its thunks in turn); RunCancelled once the run is closed."""
        if self._closed():
            raise self._cancelled()
        try:
            pool = self._pool
            # the platform's stack, or every thread started already (they last as long as the
            # pool): no stack to set around this submit
            if self._stack_mb is None or len(pool._threads) >= pool._max_workers:
                return pool.submit(fn, *args)
            with thread_stack(self._stack_mb):  # the pool starts its threads on submit
                return pool.submit(fn, *args)
        except RuntimeError:  # cancel() shut the pool down between the check and the submit
            if self._closed():
                raise self._cancelled() from None
            raise

    def parallel(self, thunks: Iterable[Thunk]) -> list[Any]:
        """Run thunks in parallel and wait for all; results in the order given."""
        thunks = list(thunks)
        if self.in_worker():
            return [self.guarded(i, thunk) for i, thunk in enumerate(thunks)]
        return Spread(self, thunks).results()

    def shutdown(self, *, wait: bool) -> None:
        """Stop taking thunks; cancel those not yet started (running ones finish)."""
        self._pool.shutdown(wait=wait, cancel_futures=True)
