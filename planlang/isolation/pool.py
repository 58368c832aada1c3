"""Warm plan processes: forked and confined ahead, each used for one plan run, then gone.

The pool keeps ``size`` children ready (forked from its fork server, ``zygote.py``, each
confined in its own scratch directory, with an empty environment), hands one to each run, and
forks a replacement at once. A child is never reused: no state of one plan can reach the next.
A child that died while it waited (killed from outside) is dropped and replaced, and so is the
fork server if it dies.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from planlang.errors import PlanLimitError
from planlang.isolation.frames import MAX_FRAME, FrameReader, write_all
from planlang.isolation.lanes import LANE_EXIT
from planlang.isolation.sweep import remove_tree, scratch_prefix, sweep
from planlang.isolation.warming import TAKEN
from planlang.isolation.zygote import Zygote

__all__ = ["Child", "Pool", "default_pool", "discard_later"]

_SIGNAL_KINDS = {
    signal.SIGSEGV: "crash", signal.SIGBUS: "crash", signal.SIGABRT: "crash",
    signal.SIGILL: "crash", signal.SIGFPE: "crash", signal.SIGSYS: "crash",
    signal.SIGXCPU: "seconds", signal.SIGKILL: "killed",
}  # fmt: skip


_IDLE = getattr(os, "SCHED_IDLE", -1)


class Child:
    """One confined plan process, forked by the pool's fork server, ready for one run once
    ``wait_ready`` returns (children started together confine themselves in parallel)."""

    def __init__(self, zygote: Zygote):
        self.zygote = zygote
        self.scratch = tempfile.mkdtemp(prefix=scratch_prefix())  # its owner named: ``sweep``
        self.discarded = False
        self.taken = False  # its pipes belong to a run's channel, which closes them
        self.layers: list[list[Any]] = []
        try:
            self.pid, self.pidfd, read_fd, self.writer, self.lanes = zygote.fork(self.scratch)
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise
        self.reader = FrameReader(read_fd, MAX_FRAME)

    def wait_ready(self) -> Child:
        """Wait for the process to say it is confined and ready (RuntimeError if it is not).
        Asleep, not polling: getting ready takes milliseconds of the child's CPU, and a
        poll would take 200 µs of a CPU it may share (the reader's polling for the run's
        answer is left as it was: it learns nothing from this wait)."""
        try:
            ready = self.reader.read(spin=False)
        except (OSError, ValueError) as error:
            ready = None
            why = str(error)
        else:
            why = "it ended"
        if not ready or ready[0] != "ready":
            self.discard()
            raise RuntimeError(f"A plan process did not start ({why}; see `planlang doctor`).")
        self.layers = ready[1]
        return self

    def wake(self, code: str | None = None) -> None:
        """Tell the process a run has taken it, before the run is made: it wakes meanwhile
        (if it has died, the run's channel finds out). ``code``: the run's code as the run
        would carry it, so the process loads it while the host makes the rest of the run.
        First it gets its usual priority back: it may be warming itself at idle priority
        (``warming``), where a busy machine would leave it no CPU to notice the run; and
        ``TAKEN``, which stops the warm-up step under way."""
        self._usual_priority()
        if self.pidfd is not None:  # a warm-up step under way stops (never by pid: reused)
            try:
                signal.pidfd_send_signal(self.pidfd, TAKEN)
            except OSError:
                pass
        try:
            write_all(self.writer, ["go"] if code is None else ["go", code])
        except OSError:
            pass

    def _usual_priority(self) -> None:
        """SCHED_OTHER again, if the process is still SCHED_IDLE (asked first: the fork server
        may have reaped a process that just died, and its pid be another's now; so only a
        process at idle priority is ever moved, and only to the usual one)."""
        try:
            if os.sched_getscheduler(self.pid) == _IDLE:
                os.sched_setscheduler(self.pid, os.SCHED_OTHER, os.sched_param(0))
        except OSError:  # gone, or not ours to move: it comes back by itself when it can
            pass

    def take(self) -> tuple[FrameReader, int]:
        """Its pipes, for the run's channel (which closes them, and the ``lanes``' pipes,
        from now on)."""
        self.taken = True
        return self.reader, self.writer

    def alive(self) -> bool:
        return not self.discarded and self.zygote.exit_code(self.pid) is None

    def stop(self) -> None:
        """Kill the process if it still runs (at once: the slow part of a discard, removing
        what it wrote, can wait for ``discard_later``)."""
        if not self.discarded and self.zygote.exit_code(self.pid) is None:
            self._kill()

    def discard(self) -> None:
        """Kill the process (if it still runs) and remove its scratch directory. Never
        raises: a plan's process decides what its scratch holds."""
        if self.discarded:
            return
        self.stop()
        self.discarded = True
        if self.pidfd is not None:
            os.close(self.pidfd)
        if not self.taken:
            self.reader.close()
            os.close(self.writer)
            for reader, writer in self.lanes:
                os.close(reader)
                os.close(writer)
        try:
            os.rmdir(self.scratch)  # empty, unless the process wrote there: then the tree
        except FileNotFoundError:
            pass
        except OSError:
            self.zygote.exit_code(self.pid, timeout=5)  # nothing writes there once it is gone
            remove_tree(self.scratch)

    def _kill(self) -> None:
        """SIGKILL, through the pidfd where there is one: the fork server may have reaped the
        process, and the kernel given its number to another, before its exit is reported."""
        try:
            if self.pidfd is None:
                os.kill(self.pid, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def death(self, wait: float = 5.0) -> PlanLimitError:
        """Why the process ended, as the plan's limit error, once the channel closed. The
        fork server reports an exit within milliseconds; a process that closed its channel
        and lives on is stopped after ``wait`` seconds (the run's deadline and grace)."""
        code = self.zygote.exit_code(self.pid, timeout=wait)
        stopped = code is None
        if stopped:
            self.stop()
            code = self.zygote.exit_code(self.pid, timeout=5)
        if code is None:
            return PlanLimitError("crash", "The plan's process stopped answering.")
        if stopped and code == -signal.SIGKILL:
            return PlanLimitError("crash", "The plan's process closed its channel and did "
                                  "not exit; it was stopped.")  # fmt: skip
        if code < 0:
            sig = signal.Signals(-code)
            kind = _SIGNAL_KINDS.get(sig, "crash")
            why = {
                "seconds": "it used up its CPU time limit",
                "killed": "it was killed (from outside, or by the kernel for memory)",
            }.get(kind, "it crashed")
            return PlanLimitError(kind, f"The plan's process ended with {sig.name}: {why}.")
        if code == LANE_EXIT:
            return PlanLimitError("memory", "The plan's process had no memory left to start "
                                  "a thread for a callback (its memory limit).")  # fmt: skip
        return PlanLimitError("crash", f"The plan's process exited with status {code}.")


class Pool:
    """``size`` warm children; ``acquire`` hands one out and starts its replacement."""

    def __init__(self, size: int = 2, *, probes: bool = False, without: tuple[str, ...] = ()):
        """``probes`` and ``without`` are for tests only (planlang.isolation.testing)."""
        if size < 1:
            raise ValueError("A pool needs at least one child.")
        self.size = size
        self.probes = probes
        self.without = without
        self.last: Child | None = None  # the child handed out last
        self._zygote: Zygote | None = None
        self._filler: threading.Thread | None = None
        self._wanted: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._zygote_lock = threading.Lock()
        self._ready: deque[Child] = deque()
        self._starting = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.closed = False
        self.started = 0
        sweep()  # what hosts that died without exit handlers left in the temporary directory

    def acquire(self, code: str | None = None) -> Child:
        """A ready child (waiting for one if none is ready yet), told it is taken (``wake``,
        with ``code``). While other children stay ready, its replacement waits for
        ``refill`` (called when the run ends): forking it now would take the machine from the
        run it is for. With none ready, it waits for the first of those getting ready: one
        more fork would only get ready beside them, on the same CPUs, after them."""
        while True:
            with self._lock:
                child = self._ready.popleft() if self._ready else None
                spare = len(self._ready)
            if child is None or not spare:
                self._refill()
            if child is None:
                child = self._first_started() or self._start()
            if child.alive():
                child.wake(code)
                self.last = child
                return child
            child.discard()  # died while waiting: drop it, take the next

    def _first_started(self) -> Child | None:
        """The first child the filler makes ready, or None if it is making none."""
        with self._lock:
            while not self._ready and self._starting and not self.closed:
                if not self._changed.wait(timeout=30):
                    return None  # the filler is stuck: fork one here, as without it
            return self._ready.popleft() if self._ready else None

    def layers(self) -> list[list[Any]]:
        """The confinement a child of this pool has (waits for one to be ready)."""
        with self._lock:
            if self._ready:
                return list(self._ready[0].layers)
        child = self._start()
        with self._lock:
            self._ready.append(child)
        return list(child.layers)

    def _zygote_now(self) -> Zygote:
        with self._zygote_lock:
            if self._zygote is None or not self._zygote.alive():
                if self._zygote is not None:
                    self._zygote.close()
                self._zygote = Zygote(probes=self.probes, without=self.without)
            return self._zygote

    def _start(self) -> Child:
        return self._fork().wait_ready()

    def _fork(self) -> Child:
        child = Child(self._zygote_now())
        with self._lock:
            self.started += 1
        return child

    def refill(self) -> None:
        """Start the children the pool lacks (a run that took one has ended)."""
        self._refill()

    def _refill(self) -> None:
        with self._lock:
            missing = self.size - len(self._ready) - self._starting
            if self.closed or missing <= 0:
                return
            self._starting += missing
            if self._filler is None:  # one thread forks for the pool, woken per run
                self._filler = threading.Thread(target=self._fill, name="planlang-pool",
                                                daemon=True)  # fmt: skip
                self._filler.start()
        for _ in range(missing):
            self._wanted.put(None)

    def _fill(self) -> None:
        """Fork every child wanted so far, then take each as it becomes ready: they confine
        and warm themselves at once, each on whichever CPU is free."""
        while not self.closed:
            self._wanted.get()
            wanted = 1
            while True:
                try:
                    self._wanted.get_nowait()
                except queue.Empty:
                    break
                wanted += 1
            if self.closed:
                return
            forked: list[Child | None] = []
            for _ in range(wanted):
                try:
                    forked.append(self._fork())
                except (OSError, RuntimeError):
                    forked.append(None)
            for child in forked:
                self._ready_one(child)

    def _ready_one(self, child: Child | None) -> None:
        try:
            ready = child.wait_ready() if child is not None else None
        except (OSError, RuntimeError):
            ready = None
        with self._lock:
            self._starting -= 1
            if ready is not None:
                if self.closed:
                    ready.discard()
                else:
                    self._ready.append(ready)
            self._changed.notify_all()

    def warm(self) -> None:
        """Start children until ``size`` are ready (returns when they are)."""
        self._refill()
        with self._lock:
            while self._starting and not self.closed:
                self._changed.wait(timeout=30)

    def close(self) -> None:
        self._wanted.put(None)  # wakes the filler, which sees the pool closed
        with self._lock:
            self.closed = True
            children = list(self._ready)
            self._ready.clear()
        for child in children:
            child.discard()
        with self._zygote_lock:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None


_default: Pool | None = None
_default_lock = threading.Lock()


def default_pool() -> Pool:
    """The process-wide pool (two children: this machine's cores)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Pool(2)
            atexit.register(_default.close)
        return _default


_Discard = tuple[Child, "Callable[[], Any] | None", "Callable[[], Any] | None"]
_to_discard: queue.SimpleQueue[_Discard] = queue.SimpleQueue()
_discarder: list[threading.Thread] = []
_discarder_lock = threading.Lock()
_pending = [0]  # discards queued or under way (under the lock)


def discard_later(child: Child, first: Callable[[], Any] | None = None,
                  then: Callable[[], Any] | None = None) -> None:  # fmt: skip
    """Kill and clean up a finished child on one background thread, off the run's path;
    ``first``: what to do before (the run's closing of its unused lanes' pipes, say);
    ``then``: what to do next, before the child's remains go (the pool's ``refill``: a run
    that has ended wakes one thread of the host's, not two, while it returns). Done here
    at once if other discards wait (one may wait seconds for a process that wrote files)."""
    with _discarder_lock:
        if not _discarder:
            thread = threading.Thread(target=_discard_loop, name="planlang-discard", daemon=True)
            _discarder.append(thread)
            thread.start()
        busy = _pending[0] > 0
        _pending[0] += 1
    if then is not None and busy:
        then()
        then = None
    _to_discard.put((child, first, then))


def _discard_loop() -> None:
    while True:
        child, first, then = _to_discard.get()
        for step in (first, then):
            try:
                if step is not None:
                    step()
            except BaseException:  # noqa: BLE001, S110 - the child is discarded all the same
                pass
        try:
            child.discard()
        except BaseException:  # noqa: BLE001, S110 - one child's remains never stop the others'
            pass
        with _discarder_lock:
            _pending[0] -= 1
        del child, first, then, step  # not held while it waits: ``first`` holds the run it closed
