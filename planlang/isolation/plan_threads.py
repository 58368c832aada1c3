"""The host's threads that serve plans' host calls: no run ever waits for one.

Each isolated run serves its plan's host calls on a thread of these (``parent``), so a host word
that blocks holds that thread, never the caller of ``run``, which keeps the wall clock. Host code
cannot be interrupted: a word that blocks past its plan's deadline keeps its thread after the
run has ended. A bounded pool queued later runs behind such threads (after 256 of them, every
isolated plan that called a host word ended at its time limit), so a run takes an idle thread
if there is one and starts a thread if not. Idle threads are kept, up to ``KEEP``; the threads
are daemons, so a host word that never returns does not hold the host's exit either.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["KEEP", "PlanThreads"]

KEEP = 64  # idle threads kept for the next runs; a thread freed past them ends

_Job = tuple["Future[Any]", Callable[[], Any]]


class PlanThreads:
    """``submit(fn)`` runs ``fn`` on an idle thread, or on a new one: never queued."""

    def __init__(self, name: str, keep: int = KEEP) -> None:
        self._name = name
        self._keep = keep
        self._idle: list[queue.SimpleQueue[_Job]] = []  # an idle thread's inbox each
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        started = inbox is None
        if inbox is None:
            inbox = queue.SimpleQueue()
        inbox.put((future, fn))  # never a thread's args: its Thread would hold them for good
        if started:
            threading.Thread(target=self._work, args=(inbox,), daemon=True,
                             name=f"{self._name}-{next(self._numbers)}").start()  # fmt: skip
        return future

    def _work(self, inbox: queue.SimpleQueue[_Job]) -> None:
        while True:
            _run(*inbox.get())  # an idle thread holds nothing of the last run
            with self._lock:
                if len(self._idle) >= self._keep:
                    return
                self._idle.append(inbox)


def _run(future: Future[Any], fn: Callable[[], Any]) -> None:
    if future.set_running_or_notify_cancel():
        try:
            result = fn()
        except BaseException as error:  # noqa: BLE001 - the caller's, as an executor's
            future.set_exception(error)
        else:
            future.set_result(result)
