"""The plan process's threads for plan functions the host calls back from threads of its own.

In one process, a host word that runs plan functions on threads of its own (an embedder's
fan-out) runs each one on that thread. The plan's process does the same: each such callback
gets a thread of its own for as long as it runs or waits on the host, so a callback that calls
a host word which fans out again never waits behind the callbacks that wait on it (a pool of
16 did, until the time limit: review finding 4). A thread is started when a request arrives and
every thread started so far is taken; threads are kept for the rest of the run (a process
serves one run). No callback runs on the stack of a thread that waits on the host: there its
caller's answer would wait until the unrelated callback returned, which may itself wait on
that answer (a deadlock one process does not have). So a request within the bound never waits
behind a thread that waits (it has a new thread, or one that is only sending its last answer).

A request counts from its arrival until its plan function has returned (before its answer is
sent), so a host thread that calls again as soon as it has its answer never finds its own last
request still counted: the count is the number of the host's threads in a callback, as in one
process, whatever the machine's load.

Each thread has a 64 MiB stack (a tuple nested deep and hashed on it must not crash the
process), reserved inside the address-space limit, so how many may run at once is bounded by
the plan's memory limit: as many stacks as ``Limits.memory_mb`` holds, at least 16, at most
1,024 (``bound_for``). A request past the bound waits for a thread to come free, as in a pool:
a run whose host calls back more at once (a runtime with a higher ``concurrency``) finishes,
with that many callbacks running at once; only nested fan-outs that need more threads at once
than the bound, every one of them waiting on the host, wait until the time limit (where one
process finishes). A thread the address space cannot hold, with none started, ends the run
with ``PlanLimitError("memory")``.

Not a ``ThreadPoolExecutor``: that one counts a thread free only once its answer is sent (a
host thread calling again at once may find it still taken).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from planlang.errors import PlanLimitError
from planlang.sandbox.limits import Limits

__all__ = ["CALLBACK_STACK", "FEWEST", "MOST", "CallbackThreads", "bound_for"]

CALLBACK_STACK = 64 * 2**20  # each callback thread's stack (set before ready: child._warm)
FEWEST = 16  # callback threads whatever the memory limit (as many as a fixed pool had)
MOST = 1024  # and however large it is

Serve = Callable[[str, Any], tuple[Any, Any]]
Job = tuple[Callable[..., Any], tuple[Any, ...]]


def bound_for(limits: Limits) -> int:
    """How many plan functions the host may have called back at once in a run with these
    limits: their stacks reserve as much address space as the memory limit, at least 16."""
    return min(MOST, max(FEWEST, limits.memory_mb * 2**20 // CALLBACK_STACK))


class _Fresh(threading.local):
    """Per thread: a request was handed to it and its serve has not begun (class default:
    False on any thread)."""

    fresh = False


class CallbackThreads:
    """Runs requests no waiting thread claims, each on a thread of its own (up to ``bound``).

    ``refuse(error)`` is called, on the thread that read the request, when one cannot be run:
    it must end the run (the child answers the run with the error and exits); the request is
    dropped. An ``Endpoint`` takes this as its ``spare`` pool, and ``serving(serve)`` as its
    serve, which is how a request's plan function returning is counted."""

    def __init__(self, bound: int = FEWEST, memory_mb: int | None = None) -> None:
        self.bound = bound
        self.memory_mb = memory_mb
        self.refuse: Callable[[PlanLimitError], None] | None = None
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0  # started, never more than ``bound``
        self._taken = 0  # requests arrived whose plan function has not returned
        self._closed = False
        self._local = _Fresh()

    def limit_to(self, limits: Limits) -> None:
        """The bound of a run with these limits (set before the run starts)."""
        self.bound, self.memory_mb = bound_for(limits), limits.memory_mb

    @property
    def started(self) -> int:
        """Threads started so far."""
        return self._threads

    @property
    def taken(self) -> int:
        """Requests counted now: arrived, and their plan function not yet returned."""
        return self._taken

    # -- what an Endpoint calls ------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> None:
        """Run ``fn(*args)`` (an Endpoint's ``_handle_spare`` of one request) on a thread."""
        with self._lock:
            if self._closed:
                return
            self._taken += 1
            start = self._taken > self._threads and self._threads < self.bound
            if start:
                self._threads += 1
        self._jobs.put((fn, args))  # past the bound, it waits for a thread to come free
        if start:
            try:
                thread = threading.Thread(target=self._work, name="planlang-callback", daemon=True)
                thread.start()
            except (RuntimeError, MemoryError):  # "can't start new thread": no room for it
                with self._lock:
                    self._threads -= 1
                    none = self._threads == 0
                if none:  # no thread will ever take it
                    self._refused(self._no_room())

    def serving(self, serve: Serve) -> Serve:
        """``serve``, counting a request as done once its plan function has returned."""
        local = self._local

        def serve_counted(op: str, payload: Any) -> tuple[Any, Any]:
            if not local.fresh:  # a request for a thread waiting on the host (nested)
                return serve(op, payload)
            local.fresh = False
            try:
                return serve(op, payload)
            finally:
                self._done()

        return serve_counted

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The run is over: requests still queued are dropped, idle threads end."""
        with self._lock:
            self._closed = True
            threads = self._threads
        while True:
            try:
                self._jobs.get_nowait()
            except queue.Empty:
                break
        for _ in range(threads):
            self._jobs.put(None)

    # -- inside ----------------------------------------------------------------------------

    def _work(self) -> None:
        local, jobs = self._local, self._jobs
        while True:
            job = jobs.get()
            if job is None:
                return
            fn, args = job
            local.fresh = True
            try:
                fn(*args)
            except BaseException:  # noqa: BLE001, S110 - as an executor's future would keep it:
                pass  # the Endpoint answers every failure itself; the thread stays for the next
            finally:
                if local.fresh:  # nothing was served (a notice): done all the same
                    local.fresh = False
                    self._done()

    def _done(self) -> None:
        with self._lock:
            self._taken -= 1

    def _refused(self, error: PlanLimitError) -> None:
        if self.refuse is not None:
            self.refuse(error)

    def _no_room(self) -> PlanLimitError:
        return PlanLimitError(
            "memory",
            f"The plan's process had no room in its address space for another thread to call "
            f"a plan function back on ({self._threads:,} running; each reserves "
            f"{CALLBACK_STACK >> 20} MiB).",
        )
