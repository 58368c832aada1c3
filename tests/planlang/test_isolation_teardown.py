"""A finished run's teardown: what is left to the discard thread still happens, in order.

A run that ends as usual closes its channel at once and hands its lanes' pipes (most runs use
none of its 16 ends) to the discard thread with its child, off the run's path."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from planlang import Limits, Sandbox
from planlang.errors import PlanLimitError
from planlang.isolation import pool as pool_module
from planlang.isolation.pool import Pool

HANG_GUARD = 15.0


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _eventually(condition: Any) -> bool:
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class _Remains:
    """Stands for a finished child: records when it is discarded."""

    def __init__(self, seen: list[str], done: threading.Event):
        self.seen, self.done = seen, done

    def discard(self) -> None:
        self.seen.append("discard")
        self.done.set()


def test_what_comes_first_is_done_before_the_child_is_discarded() -> None:
    seen: list[str] = []
    done = threading.Event()
    pool_module.discard_later(_Remains(seen, done), lambda: seen.append("first"))  # type: ignore[arg-type]
    assert done.wait(HANG_GUARD)
    assert seen == ["first", "discard"]


def test_a_child_is_discarded_even_if_what_comes_first_fails() -> None:
    seen: list[str] = []
    done = threading.Event()

    def fails() -> None:
        seen.append("first")
        raise OSError("a pipe already closed")

    pool_module.discard_later(_Remains(seen, done), fails)  # type: ignore[arg-type]
    assert done.wait(HANG_GUARD)
    assert seen == ["first", "discard"]
    # the discard thread lives on for the next child
    again = threading.Event()
    pool_module.discard_later(_Remains(seen, again))  # type: ignore[arg-type]
    assert again.wait(HANG_GUARD)


def test_what_comes_next_is_done_between_the_first_and_the_discard() -> None:
    """A finished run hands its closing and its pool's refill to the discard thread (one
    thread woken as the run returns): the refill comes after the closing, before the
    child's remains go (those may take seconds)."""
    seen: list[str] = []
    done = threading.Event()
    pool_module.discard_later(_Remains(seen, done), lambda: seen.append("first"),  # type: ignore[arg-type]
                              then=lambda: seen.append("then"))  # fmt: skip
    assert done.wait(HANG_GUARD)
    assert seen == ["first", "then", "discard"]


class _Stuck(_Remains):
    """A child whose remains take long to go (a process that wrote files and is slow to die)."""

    def __init__(self, seen: list[str], done: threading.Event, go_on: threading.Event):
        super().__init__(seen, done)
        self.go_on = go_on

    def discard(self) -> None:
        self.go_on.wait(HANG_GUARD)
        super().discard()


def test_what_comes_next_is_done_at_once_while_the_discard_thread_is_busy() -> None:
    """A refill waits behind no other child's discard: with the discard thread busy, the
    caller does it before it returns."""
    seen: list[str] = []
    stuck, go_on, done = threading.Event(), threading.Event(), threading.Event()
    try:
        pool_module.discard_later(_Stuck(seen, stuck, go_on))  # type: ignore[arg-type]
        pool_module.discard_later(_Remains(seen, done), then=lambda: seen.append("then"))  # type: ignore[arg-type]
        assert seen == ["then"]  # done here, before the stuck discard ends
    finally:
        go_on.set()
    assert stuck.wait(HANG_GUARD) and done.wait(HANG_GUARD)
    assert seen == ["then", "discard", "discard"]


def test_a_finished_run_closes_its_lanes_and_pipes_and_its_plan_functions_say_finished(
) -> None:  # fmt: skip
    kept: list[Any] = []
    made = Pool(1)
    try:
        box = Sandbox(host={"keep": kept.append}, limits=Limits(seconds=10), isolation="process")
        box._pool = made  # type: ignore[attr-defined]
        box.run("result = 1\n")  # what a first run opens for good (the meter's statm)
        made.warm()
        assert _eventually(lambda: made.last is not None and made.last.discarded)
        before = _open_descriptors()  # the ready child's pipes among them
        assert box.run("keep(lambda: 1)\nresult = 2\n") == 2
        child = made.last
        assert child is not None
        with pytest.raises(PlanLimitError) as ended:
            kept[0]()  # a plan function the host held past the run
        assert ended.value.kind == "finished"
        session = kept[0].session
        assert _eventually(lambda: session.lanes.closed), "the lanes were never closed"
        assert _eventually(lambda: child.zygote.exit_code(child.pid) is not None)
        made.warm()  # its replacement is ready: as many pipes as before the run
        assert _eventually(lambda: _open_descriptors() <= before), "a pipe was left open"
    finally:
        made.close()
