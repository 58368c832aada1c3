"""Limits of one plan run, and the meter that enforces them.

The meter is shared by every thread the plan's code runs on (the runtime calls plan lambdas from
its workers), so it counts with plain integers under the GIL: a lost update can only make a count
slightly low, never let a plan run unbounded, because the checks latch. Once any limit fires the
meter stays tripped and every later check raises again, so host code that swallows the first
``PlanLimitError`` cannot keep the plan alive.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from threading import get_ident

from planlang.errors import PlanLimitError

__all__ = ["Limits", "Meter"]


@dataclass(frozen=True)
class Limits:
    """What one plan run may use. Every limit ends the plan with ``PlanLimitError``.

    - ``steps``: loop iterations, plan function calls and host calls, counted together.
    - ``seconds``: wall time of the whole run, checked at every step checkpoint and host call.
    - ``depth``: nesting of plan function calls (recursion).
    - ``size``: the largest str, list, tuple or range a single operation may produce.
    - ``int_bits``: the largest integer (in bits) ``*``, ``**`` and ``<<`` may produce, or the
      plan's text may write (``sandbox.literals``).
    - ``memory_mb``: growth of the process's resident memory while the plan runs.
    """

    steps: int = 5_000_000
    seconds: float = 60.0
    depth: int = 100
    size: int = 1_000_000
    int_bits: int = 100_000
    memory_mb: int = 2048

    def __post_init__(self) -> None:
        for name in ("steps", "depth", "size", "int_bits", "memory_mb"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"Limits.{name}={value!r} must be a positive integer.")
        if not isinstance(self.seconds, int | float) or not 0 < self.seconds < float("inf"):
            # a wall clock that never runs out cannot be a hard limit (process isolation
            # kills at the deadline, and sets the CPU limit from it)
            raise ValueError(f"Limits.seconds={self.seconds!r} must be a positive, finite number.")


# How many steps may pass between two looks at the clock (and, at most every MEMORY_EVERY
# seconds, at the memory).
CHECK_EVERY = 256
# Seconds between two reads of resident memory (a read is a system call, 1.6-1.9 µs here; at
# every checkpoint it was 5 % of a compute-heavy plan's time). What a plan allocates meanwhile
# is what CPython allocates in that time, a few MiB; an allocation charged as large reads at
# the next checkpoint whatever the time.
MEMORY_EVERY = 0.0005
LARGE_SIZE = 1 << 16  # items: a result this large has the next checkpoint read the memory
UNCHARGED_SIZE = 1024  # results up to this size are free (allow_size charges larger ones)

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


# This process's /proc/self/statm, open (-1: not yet). /proc/self is resolved when opened, so
# a fork forgets it (and closes its copy: the parent's memory is none of a child's business).
_statm = [-1]


def _forget_statm() -> None:
    fd, _statm[0] = _statm[0], -1
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_statm)


def _resident_bytes() -> int:
    """Current resident set size (one pread, about 1.5 µs here; a checkpoint makes one);
    the peak where /proc is missing."""
    try:
        fd = _statm[0]
        if fd < 0:
            fd = _statm[0] = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        return int(os.pread(fd, 64, 0).split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class Meter:
    """Counts what a plan uses and raises ``PlanLimitError`` when a limit is passed."""

    __slots__ = (
        "limits",
        "steps",
        "next_check",
        "deadline",
        "memory_base",
        "memory_next",
        "memory_cap",
        "tripped",
        "_depth",
        "enter",
        "started",
    )

    def __init__(self, limits: Limits):
        self.limits = limits
        self.steps = 0
        self.next_check = CHECK_EVERY
        self.started = time.monotonic()
        self.deadline = self.started + limits.seconds
        self.memory_base = _resident_bytes()
        self.memory_next = self.started + MEMORY_EVERY  # when a checkpoint reads it again
        self.memory_cap = limits.memory_mb * 1024 * 1024
        self.tripped: PlanLimitError | None = None
        # per thread (its ident): how deep plan functions are nested now, in a cell of one
        # item (none yet: 0). A dict, not a threading.local: a local's attribute costs four
        # times a dict's item. Calls nest and unwind on their own thread, so a thread that
        # ends leaves its depth at 0 for one that takes its ident.
        self._depth: dict[int, list[int]] = {}
        self.enter = self._entering()

    # -- steps ---------------------------------------------------------------------------

    def charge(self, n: int = 1) -> None:
        """Count ``n`` steps; look at the clock every CHECK_EVERY steps (and at the memory,
        when MEMORY_EVERY seconds have passed since it was last read)."""
        self.steps += n
        if self.steps >= self.next_check:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Check every limit now. Called on a schedule and around each host call."""
        if self.tripped is not None:
            raise self.tripped
        self.next_check = self.steps + CHECK_EVERY
        if self.steps > self.limits.steps:
            self.trip("steps", f"The plan passed its limit of {self.limits.steps:,} steps.")
        now = time.monotonic()
        if now > self.deadline:
            self.trip("seconds", f"The plan passed its time limit of {self.limits.seconds:g} s.")
        if now < self.memory_next:
            return
        self.memory_next = now + MEMORY_EVERY
        grown = _resident_bytes() - self.memory_base
        if grown > self.memory_cap:
            self.trip(
                "memory",
                f"The plan grew memory by {grown // 2**20} MiB, past its limit of "
                f"{self.limits.memory_mb} MiB.",
            )

    def trip(self, kind: str, message: str) -> None:
        """Latch the limit and raise it; every later check raises the same error."""
        error = PlanLimitError(kind, message)
        self.close(error)
        raise error

    def close(self, error: PlanLimitError) -> None:
        """Latch ``error``: the very next step, call or loop raises it (no step passes)."""
        if self.tripped is None:
            self.tripped = error
        self.next_check = -1

    def remaining(self) -> float:
        """Seconds left before the time limit; host words that wait should wait no longer."""
        return max(0.0, self.deadline - time.monotonic())

    # -- depth ---------------------------------------------------------------------------

    def _entering(self) -> Callable[[], list[int]]:
        """``enter()``, the plan's ``_enter_``: a plan function starts. One step, and one level
        deeper on this thread; it returns this thread's depth cell, which the function's
        ``finally`` gives back itself (``_depth_[0] -= 1``: no call on the way out, and the
        level is given back on the thread that took it). A function of its own, the meter in
        its closure: a bound method's attribute reads, twice a call, were most of its cost."""
        cells, most, meter = self._depth, self.limits.depth, self

        def enter() -> list[int]:
            thread = get_ident()
            cell = cells.get(thread)
            if cell is None:
                cell = cells[thread] = [0]
            depth = cell[0] + 1
            if depth > most:
                meter.trip("depth", f"The plan nested function calls deeper than {most}.")
            cell[0] = depth
            steps = meter.steps + 1
            meter.steps = steps
            if steps >= meter.next_check:
                meter.checkpoint()
            return cell

        return enter

    def leave(self) -> None:
        """A plan function returns (or raises): for callers that did not keep the cell."""
        self._depth[get_ident()][0] -= 1

    # -- sizes ---------------------------------------------------------------------------

    def allow_size(self, n: int, what: str) -> None:
        """Refuse an operation whose result would hold more than Limits.size items."""
        if n > self.limits.size:
            self.trip("size", f"{what} would make {n:,} items, past the limit of "
                      f"{self.limits.size:,}.")  # fmt: skip
        # Large results are charged as work too, so many of them add up to the step limit.
        if n > UNCHARGED_SIZE:
            if n >= LARGE_SIZE:
                self.memory_next = 0.0
            self.charge(n >> 10)

    def allow_bits(self, bits: int, what: str) -> None:
        """Refuse an integer operation whose result would pass Limits.int_bits."""
        if bits > self.limits.int_bits:
            self.trip("size", f"{what} would make an integer of about {bits:,} bits, past the "
                      f"limit of {self.limits.int_bits:,}.")  # fmt: skip
