"""A ready plan process warms itself at idle priority; a run never runs at it (``warming``).

And a pool with no child ready waits for the one getting ready rather than forking another.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from planlang import Sandbox
from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="no SCHED_IDLE here")


def test_a_plan_runs_at_the_usual_priority() -> None:
    pool = Pool(1, probes=True)
    try:
        assert run_probe(pool, "import os\nresult = os.sched_getscheduler(0)\n") == os.SCHED_OTHER
    finally:
        pool.close()


def test_a_child_taken_while_it_warms_has_the_usual_priority_at_once() -> None:
    """Taken at idle priority (as while it warms), it is moved back by the host before the
    run is even sent: on a busy machine it could not get a CPU to move itself."""
    pool = Pool(1)
    try:
        pool.warm()
        waiting = pool._ready[0]
        os.sched_setscheduler(waiting.pid, os.SCHED_IDLE, os.sched_param(0))
        child = pool.acquire()
        assert child is waiting
        assert os.sched_getscheduler(child.pid) == os.SCHED_OTHER
        child.discard()
    finally:
        pool.close()


def test_the_hosts_taken_signal_never_ends_a_ready_child() -> None:
    """``TAKEN`` (SIGUSR1, whose default would end the process) comes with every run, also
    to a child that has finished warming, or not begun: it is ignored then."""
    from planlang.isolation.warming import TAKEN

    pool = Pool(1)
    try:
        pool.warm()
        waiting = pool._ready[0]
        assert waiting.pidfd is not None
        time.sleep(0.3)  # as a rule it has warmed by now (if not, it is warming: both count)
        for _ in range(3):
            signal.pidfd_send_signal(waiting.pidfd, TAKEN)
        box = Sandbox(isolation="process")
        box._pool = pool  # type: ignore[attr-defined]
        assert box.run("result = [1, 2]\n") == [1, 2]
    finally:
        pool.close()


def test_a_process_that_took_a_dead_childs_pid_keeps_its_priority() -> None:
    """Only a process at idle priority is moved: a stranger given the pid keeps its own."""
    pool = Pool(1)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.sched_setscheduler(stranger.pid, os.SCHED_BATCH, os.sched_param(0))
        child = pool.acquire()
        real = child.pid
        child.pid = stranger.pid  # what pid reuse would make of it
        child._usual_priority()
        assert os.sched_getscheduler(stranger.pid) == os.SCHED_BATCH
        child.pid = real
        child.discard()
    finally:
        stranger.kill()
        stranger.wait()
        pool.close()


def test_with_none_ready_a_run_waits_for_the_child_getting_ready() -> None:
    """The second run finds the first one's replacement getting ready and takes it: no third
    process is forked beside it."""
    pool = Pool(1)
    try:
        pool.warm()
        first = pool.acquire()  # its replacement starts now
        second = pool.acquire()
        assert pool.started == 2
        assert second is not first and second.alive()
        first.discard()
        second.discard()
    finally:
        pool.close()


def test_taken_stops_a_warm_up_plan_at_its_next_step_and_raises_nowhere_else() -> None:
    """The host's ``TAKEN`` latches the meter of the warm-up plan under way, which ends at
    its next step through the sandbox's own limit path (no exception is raised where the
    signal lands); no later step starts, and the signal is ignored again after."""
    from planlang.check import check
    from planlang.errors import PlanLimitError
    from planlang.isolation import warming
    from planlang.sandbox import deep_stack as stack

    read_fd, write_fd = os.pipe()
    stopped: list[str] = []
    later: list[int] = []

    def step() -> None:
        box = Sandbox(host={"ping": lambda: os.kill(os.getpid(), warming.TAKEN)},
                      isolation="inprocess")  # fmt: skip
        make = box._new_meter
        box._new_meter = lambda: warming.metered(make())  # type: ignore[method-assign]
        checked = check("ping()\nn = 0\nwhile n < 10 ** 9:\n    n = n + 1\n", "warm-up.py")
        stack._decisions[checked.code] = False  # on this thread, as a warm-up plan runs
        try:
            box.run(checked)
        except PlanLimitError as error:
            stopped.append(str(error))
            raise

    before = signal.getsignal(warming.TAKEN)
    try:
        assert warming.warm_while_waiting(read_fd, [step, lambda: later.append(1)])
        assert signal.getsignal(warming.TAKEN) == signal.SIG_IGN
    finally:
        signal.signal(warming.TAKEN, before)
        os.close(read_fd)
        os.close(write_fd)
    assert len(stopped) == 1 and "took this process" in stopped[0]
    assert later == []
    assert Sandbox(isolation="inprocess").run("result = sum([1, 2])\n") == 3
