"""The host and a plan's process share the CPUs well: nobody keeps a CPU the other waits for.

The kernel often wakes the reader of a pipe on the writer's CPU (the wake-up says the writer
is about to sleep). So a reader that polls while the other side waits for its CPU, or a plan's
process whose exit runs at the usual priority while the host waits for that CPU, costs a run
milliseconds (a one-line plan on a warm pool, unpinned: 3.3-3.5 ms before, 1.2 ms after).
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from planlang.isolation import child
from planlang.isolation.frames import FrameReader, write_all

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux scheduling")


def test_a_polling_reader_gives_its_cpu_to_whoever_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The frame is written only once the reader yielded: a reader that polled without
    yielding would poll its whole spin and time out."""
    read_end, write_end = os.pipe()
    yields = []

    def the_other_side_runs() -> None:
        if not yields:
            write_all(write_end, ["a", 1, True, "answer"])
        yields.append(1)

    monkeypatch.setattr(os, "sched_yield", the_other_side_runs)
    reader = FrameReader(read_end)
    reader._spin = 5.0  # polls long (a loaded machine may run the loop but once a while)
    try:
        assert reader.read(until=time.monotonic() + 6) == ["a", 1, True, "answer"]
        assert yields  # and it was found while polling, not after a sleep
        assert reader._came == "polled"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_reader_that_does_not_poll_never_yields(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    monkeypatch.setattr(os, "sched_yield", lambda: pytest.fail("yielded without polling"))
    reader = FrameReader(read_end)
    try:
        write_all(write_end, ["n", None, "done", None])
        assert reader.read(spin=False) == ["n", None, "done", None]
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="no SCHED_IDLE")
def test_a_plan_process_that_answered_exits_at_idle_priority() -> None:
    """``child._answer`` steps aside before its exit: the exit tears down the process's memory
    (a millisecond or more), which must not hold a CPU the host was woken on."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked process
        try:
            child.step_aside()
            os.write(write_end, str(os.sched_getscheduler(0)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        policy = os.read(read_end, 16)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    assert int(policy) == os.SCHED_IDLE
    assert os.sched_getscheduler(0) != os.SCHED_IDLE  # only the process that answered
