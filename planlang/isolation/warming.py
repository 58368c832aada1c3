"""What a plan's process does once it is ready and until a run takes it: it warms itself.

A fork shares the fork server's memory until it writes a page, and each page it then writes
is copied (about 5 µs here). Running a plan writes thousands: reference counts, the
allocator's free lists, the pages its objects land on, the interpreter's caches. Each page a
process copied once is its own from then on, so a process that ran plans of the usual kind
(loops, comprehensions, dicts counted and sorted, text built) runs the next one without most
of those copies: the compute-glue benchmark's run copied about 200 pages in a fresh fork, 70
in a warmed one (its CPU 6.3 ms against 3.9 ms).

So a ready process runs warm-up plans (the fork server's, never a plan of anyone's; the
small first one it ran before ready, so that one a busy machine leaves no idle CPU still
runs a plan as warm as before), at
the kernel's idle priority (``SCHED_IDLE``: it takes only a CPU nothing else wants, so it
never slows a run, a fork or the host), each a step of a millisecond or two, and stops when
the host takes it: the host gives it its usual priority back (``pool.Child.wake``: on a
busy machine an idle-priority process could wait long for a CPU) and sends it ``TAKEN``,
which stops the step's plan at its next step (a warm-up keeps nothing a run needs).
The CPU it spends on them is idle CPU, not that of the host and the fork server, where the
pool's forks get ready.
"""

from __future__ import annotations

import _signal
import contextlib
import os
import resource
import select
import signal
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from planlang.errors import PlanLimitError

if TYPE_CHECKING:
    from planlang.sandbox.limits import Meter

__all__ = ["TAKEN", "WARM_PLANS", "allow_way_back", "idle_priority_allowed", "ignore_taken",
           "forget_frames", "metered", "warm_while_waiting"]  # fmt: skip

# Plans of the usual kind, each run once by a ready process (and, to specialise the sandbox's
# own code, a few times by the fork server). Their allocations go through the free lists a
# plan's would: a plan's own then land on pages this process has copied already.
WARM_PLANS = (
    "names = [f'n{(i * 37) % 113}' for i in range(1200)]\n"
    "tally = {}\n"
    "for name in names:\n"
    "    tally[name] = tally.get(name, 0) + 1\n"
    "order = sorted(tally.items(), key=lambda item: (-item[1], item[0]))\n"
    "sizes = {}\n"
    "for name, n in order:\n"
    "    sizes[len(name)] = sizes.get(len(name), 0) + n\n"
    "result = {'first': order[0][0], 'sizes': sizes}\n",
    "def digest(text):\n"
    "    value = 0\n"
    "    for ch in text:\n"
    "        value = (value * 33 + ord(ch)) % 99991\n"
    "    return value\n"
    "rows = [{'key': f'k{i}', 'at': i, 'digest': digest(f'k{i}')} for i in range(150)]\n"
    "picked = sorted(rows, key=lambda row: (row['digest'] % 11, row['key']))[:8]\n"
    "shown = '; '.join(row['key'] + ':' + str(row['digest']) for row in picked)\n"
    "result = {'picked': [row['key'] for row in picked], 'shown': len(shown)}\n",
    "square = [[i + j for j in range(9)] for i in range(9)]\n"
    "diagonal = sum(square[i][i] for i in range(9))\n"
    "kept = [n * 3 for n in range(900) if n % 4 == 1]\n"
    "count = 0\n"
    "while count < 300:\n"
    "    count = count + 1\n"
    "bits = []\n"
    "for n in range(120):\n"
    "    bits.append(f'{n:05d}')\n"
    "joined = '/'.join(bits)\n"
    "result = {'diagonal': diagonal, 'kept': len(kept), 'joined': joined[-5:], 'count': count}\n",
)


# The signal a host sends a process it takes (``pool.Child.wake``): a warm-up step under way
# stops at its plan's next step, so a run waits for no step. Ignored at any other time (from
# before ready: ``ignore_taken``), so one that comes late changes nothing.
TAKEN = signal.SIGUSR1

# The handler raises nothing where it lands (an exception raised at any bytecode could leave
# the sandbox's state half restored, in the process the run then uses): it latches the meter
# of the warm-up plan under way, which stops that plan at its next step through the sandbox's
# own limit path, and notes that no step is to start.
_state: dict[str, Any] = {"taken": False, "meter": None}


def metered(meter: Meter) -> Meter:
    """The meter of the warm-up plan starting now (``child.warm_run``): stopped if taken."""
    _state["meter"] = meter
    if _state["taken"]:
        meter.close(_taken_error())
    return meter


def forget_frames(error: BaseException) -> None:
    """Drop the frames ``error`` (and the latched error of the step's meter) hold: a stopped
    warm-up step's sandbox is then freed at once, not by a collection on the run's path."""
    meter = _state["meter"]
    for held in (error, meter.tripped if meter is not None else None):
        while held is not None:
            held.__traceback__ = None
            held = held.__context__ or held.__cause__


def _taken_error() -> PlanLimitError:
    return PlanLimitError("seconds", "A run took this process: its warm-up stops.")


def _taken(_signum: int, _frame: object) -> None:
    _state["taken"] = True
    meter = _state["meter"]
    if meter is not None:
        meter.close(_taken_error())


def ignore_taken() -> None:
    """Before ready: the host's ``TAKEN`` changes nothing, until warming waits for it."""
    _signal.signal(TAKEN, _signal.SIG_IGN)


def allow_way_back() -> None:
    """In the fork server, once: ``RLIMIT_NICE`` just high enough for a fork to leave
    ``SCHED_IDLE`` for its own nice value again (the kernel asks that of an unprivileged
    process), and no higher: a process may renice itself no lower than it was started."""
    allowed = 20 - os.getpriority(os.PRIO_PROCESS, 0)
    with contextlib.suppress(OSError, ValueError):  # not root, say: it warms at its priority
        resource.setrlimit(resource.RLIMIT_NICE, (allowed, allowed))


def idle_priority_allowed() -> bool:
    """Whether this process may leave ``SCHED_IDLE`` again once it has entered it."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NICE)
    needed = 20 - os.getpriority(os.PRIO_PROCESS, 0)
    return hasattr(os, "SCHED_IDLE") and (soft == resource.RLIM_INFINITY or soft >= needed)


def warm_while_waiting(fd: int, steps: Iterable[Callable[[], object]]) -> bool:
    """Run ``steps`` until the pipe ``fd`` has something to read, at idle priority where
    this process may come back from it (else at its own); then back to the usual priority:
    a run never runs idle. True if any step ran."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if poller.poll(0):
        return False
    idle = idle_priority_allowed()
    if idle:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            idle = False
    ran = False
    _state["taken"], _state["meter"] = False, None
    try:
        _signal.signal(TAKEN, _taken)  # the host's word that it took this process
        for step in steps:
            if _state["taken"] or poller.poll(0):
                break
            ran = True
            step()
    except Exception:  # noqa: BLE001, S110 - its plan stopped when taken, or it failed
        pass
    finally:
        _signal.signal(TAKEN, _signal.SIG_IGN)
        _state["taken"], _state["meter"] = False, None
        if idle:
            with contextlib.suppress(OSError):  # allowed by RLIMIT_NICE (checked above)
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return ran
