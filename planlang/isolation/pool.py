"""Warm plan processes: started and confined ahead, each used for one plan run, then gone.

Starting an interpreter and importing the sandbox takes a fraction of a second; a plan should
not wait for it. The pool keeps ``size`` children started, imported and confined (each in its
own scratch directory, with an empty environment), hands one to each run, and starts a
replacement at once. A child is never reused: no state of one plan can reach the next. A
child that died while it waited (killed from outside) is dropped and replaced.
"""

from __future__ import annotations

import atexit
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from typing import Any

from planlang.errors import PlanLimitError
from planlang.isolation.codec import read_frame

__all__ = ["Child", "Pool", "default_pool"]

_BOOT = (
    "import sys, json; config = json.loads(sys.argv[1]); sys.path[:0] = config['path']; "
    "from planlang.isolation.child import main; main(config)"
)
# Not a secret, and it keeps glibc from reserving an arena per thread inside RLIMIT_AS.
_CHILD_ENV = {"MALLOC_ARENA_MAX": "2"}
_SIGNAL_KINDS = {
    signal.SIGSEGV: "crash", signal.SIGBUS: "crash", signal.SIGABRT: "crash",
    signal.SIGILL: "crash", signal.SIGFPE: "crash", signal.SIGSYS: "crash",
    signal.SIGXCPU: "seconds", signal.SIGKILL: "killed",
}  # fmt: skip


class Child:
    """One started, confined plan process, ready for one run."""

    def __init__(self, *, probes: bool = False, without: tuple[str, ...] = ()):
        self.scratch = tempfile.mkdtemp(prefix="planlang-plan-")
        config = {"path": [p for p in sys.path if p], "probes": probes,
                  "without": list(without) if probes else []}  # fmt: skip
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-I", "-c", _BOOT, json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.scratch,
            env=dict(_CHILD_ENV),
            close_fds=True,
            start_new_session=True,  # Ctrl-C in a terminal is the host's to handle
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.writer = self.process.stdin
        self.reader = self.process.stdout
        self.discarded = False
        self.layers: list[list[Any]] = []
        self.pid = self.process.pid
        ready = read_frame(self.reader)
        if not ready or ready[0] != "ready":
            self.discard()
            raise RuntimeError("A plan process did not start (see `planlang doctor`).")
        self.layers = ready[1]

    def alive(self) -> bool:
        return self.process.poll() is None

    def discard(self) -> None:
        """Kill the process (if it still runs) and remove its scratch directory."""
        if self.discarded:
            return
        self.discarded = True
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.writer, self.reader):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self.scratch, ignore_errors=True)

    def death(self) -> PlanLimitError:
        """Why the process ended, as the plan's limit error."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return PlanLimitError("crash", "The plan's process stopped answering.")
        if code < 0:
            sig = signal.Signals(-code)
            kind = _SIGNAL_KINDS.get(sig, "crash")
            why = {
                "seconds": "it used up its CPU time limit",
                "killed": "it was killed (from outside, or by the kernel for memory)",
            }.get(kind, "it crashed")
            return PlanLimitError(kind, f"The plan's process ended with {sig.name}: {why}.")
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
        self._ready: deque[Child] = deque()
        self._starting = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.closed = False
        self.started = 0

    def acquire(self) -> Child:
        """A ready child (waiting for one if none is ready yet)."""
        while True:
            with self._lock:
                child = self._ready.popleft() if self._ready else None
            self._refill()
            if child is None:
                child = self._start()
            if child.alive():
                self.last = child
                return child
            child.discard()  # died while waiting: drop it, take the next

    def layers(self) -> list[list[Any]]:
        """The confinement a child of this pool has (waits for one to be ready)."""
        with self._lock:
            if self._ready:
                return list(self._ready[0].layers)
        child = self._start()
        with self._lock:
            self._ready.append(child)
        return list(child.layers)

    def _start(self) -> Child:
        child = Child(probes=self.probes, without=self.without)
        with self._lock:
            self.started += 1
        return child

    def _refill(self) -> None:
        with self._lock:
            missing = self.size - len(self._ready) - self._starting
            if self.closed or missing <= 0:
                return
            self._starting += missing
        for _ in range(missing):
            threading.Thread(target=self._start_one, name="planlang-pool", daemon=True).start()

    def _start_one(self) -> None:
        try:
            child = self._start()
        except (OSError, RuntimeError):
            child = None
        with self._lock:
            self._starting -= 1
            if child is not None:
                if self.closed:
                    child.discard()
                else:
                    self._ready.append(child)
            self._changed.notify_all()

    def warm(self) -> None:
        """Start children until ``size`` are ready (returns when they are)."""
        self._refill()
        with self._lock:
            while self._starting and not self.closed:
                self._changed.wait(timeout=30)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            children = list(self._ready)
            self._ready.clear()
        for child in children:
            child.discard()


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
