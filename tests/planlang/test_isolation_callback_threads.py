"""Plan functions the host calls back from threads of its own, under process isolation.

In one process each runs on the host's thread that calls it; in the plan's process each gets a
thread of its own (``planlang.isolation.callback_threads``), up to a bound the memory limit
sets; past it, a callback waits for a thread to come free. It is an error if nested fan-outs
within the bound wait where one process finishes, if a run past the bound fails rather than
finishing (its callbacks take turns), or if a thread the address space cannot hold crashes or
hangs the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

import pytest

from planlang.errors import PlanLimitError
from planlang.isolation.callback_threads import (
    CALLBACK_STACK,
    FEWEST,
    MOST,
    CallbackThreads,
    bound_for,
)
from planlang.isolation.lanes import LANES
from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

MODES = ("inprocess", "process")
HANG_GUARD = 30.0  # seconds: only ever a deadline for something that would otherwise hang

# -- nested fan-outs within the bound --------------------------------------------------------

# Each level fans out ``width`` plan functions, each the next level down: in all, width**depth
# leaves, each 1.
NESTED = """
def level(d):
    if d == 0:
        return 1
    return sum(fan(d, [lambda: level(d - 1) for _ in range(WIDTH)]))

result = level(DEPTH)
"""


def _fan_host(width: int, depth: int) -> tuple[dict[str, Callable[..., Any]], ThreadPoolExecutor]:
    """An embedder's fan-out word that runs each function on a thread of its own. Below the
    top, each level's calls first wait until every call of that level is made, so all the
    plan functions above them are in flight at once: no race decides the outcome. As a
    careful embedder's does, it stops the waits once a function fails (a host word that
    waits on what a failed function would have done holds the run until its time limit)."""
    in_flight = sum(width**k for k in range(1, depth + 1))
    threads = ThreadPoolExecutor(in_flight + 8)
    barriers = {d: threading.Barrier(width ** (depth - d), timeout=HANG_GUARD)
                for d in range(1, depth)}  # fmt: skip

    def fan(d: int, fns: list[Callable[[], int]]) -> list[int]:
        if d in barriers:
            barriers[d].wait()
        futures = [threads.submit(fn) for fn in fns]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        if any(future.exception() is not None for future in done):
            for barrier in barriers.values():
                barrier.abort()
        return [future.result() for future in futures]

    return {"fan": fan}, threads


@pytest.mark.parametrize(
    ("width", "depth", "memory_mb"),
    [(3, 4, 8192), (2, 5, 4096)],
    ids=["four levels of three", "five levels of two"],
)
def test_nested_fan_outs_on_the_hosts_threads_end_as_in_one_process(
    width: int, depth: int, memory_mb: int
) -> None:
    """Every plan function above the leaves in flight at once (39 and 30 of them, past the
    24 threads the plan's process had for them: 8 lanes and a pool of 16), each waiting on the
    host while the ones below it run, and the leaves (81 and 32) as they come: the result of
    one process, in both modes, as long as all of them fit in the bound the memory limit sets
    (128 and 64, besides the lanes)."""
    in_flight = sum(width**k for k in range(1, depth + 1))
    limits = Limits(seconds=20, memory_mb=memory_mb)
    assert in_flight <= bound_for(limits)  # the lanes' 8 threads besides
    source = NESTED.replace("WIDTH", str(width)).replace("DEPTH", str(depth))
    for mode in MODES:
        host, threads = _fan_host(width, depth)
        try:
            assert Sandbox(host=host, limits=limits, isolation=mode).run(source) == width**depth
        finally:
            threads.shutdown(wait=False, cancel_futures=True)


# -- at and past the bound --------------------------------------------------------------------

SMALL = Limits(seconds=10, memory_mb=64)  # a bound of 16, and the 8 lanes: 24 at once
FLAT = "result = sum(fan([lambda: meet() for _ in range(N)]))\n"


def _flat_host(
    n: int,
) -> tuple[dict[str, Callable[..., Any]], threading.Barrier, ThreadPoolExecutor]:
    """``fan`` runs each function on a thread of its own and, as a careful embedder's does,
    stops the others once one fails; ``meet`` returns once all ``n`` plan functions have
    called it: they must all be in flight at once. It would wait longer than the plan's time
    limit, so a run that waited for it would end with ``seconds``."""
    threads = ThreadPoolExecutor(n + 4)
    barrier = threading.Barrier(n, timeout=HANG_GUARD)

    def fan(fns: list[Callable[[], int]]) -> list[int]:
        futures = [threads.submit(fn) for fn in fns]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        if any(future.exception() is not None for future in done):
            barrier.abort()
        return [future.result() for future in futures]

    def meet() -> int:
        barrier.wait()
        return 1

    return {"fan": fan, "meet": meet}, barrier, threads


@pytest.mark.parametrize(
    ("limits", "n"),
    [(SMALL, 16 + LANES), (Limits(seconds=10, memory_mb=4096), 64 + LANES)],
    ids=["24 at a bound of 16", "72 at a bound of 64"],
)
def test_as_many_callbacks_as_the_bound_all_wait_on_the_host_at_once(
    limits: Limits, n: int
) -> None:
    """The bound is what the process can hold: that many threads start within its
    address-space limit (their stacks reserved in it) besides the 8 lanes' (the first 8 host
    threads each take a lane, and hold it), each waiting on the host."""
    assert bound_for(limits) + LANES == n
    for mode in MODES:
        host, barrier, threads = _flat_host(n)
        try:
            box = Sandbox(host=host, limits=limits, isolation=mode)
            assert box.run(FLAT.replace("N", str(n))) == n, mode
        finally:
            barrier.abort()
            threads.shutdown(wait=False, cancel_futures=True)


def test_callbacks_past_the_bound_take_turns_and_the_run_finishes() -> None:
    """60 plan functions called back at once where 24 fit (8 lanes and a bound of 16), each
    waiting a little on the host: one process runs all 60 at once; the plan's process runs 24
    at once and the others wait for a thread, and the run gives what one process gives (a
    runtime with a ``concurrency`` past the bound is this case). At no time do more callbacks
    run at once than fit."""
    n, fit = 60, 16 + LANES
    threads = ThreadPoolExecutor(n)
    running, most, lock = [0], [0], threading.Lock()

    def fan(fns: list[Callable[[], int]]) -> list[int]:
        return [future.result() for future in [threads.submit(fn) for fn in fns]]

    def work(k: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return k

    plan = f"result = sum(fan([lambda k=k: work(k) for k in range({n})]))\n"
    try:
        for mode in MODES:
            most[0] = 0
            limits = Limits(seconds=HANG_GUARD, memory_mb=64)
            box = Sandbox(host={"fan": fan, "work": work}, limits=limits, isolation=mode)
            assert box.run(plan) == sum(range(n)), mode
            if mode == "process":
                assert most[0] <= fit, most[0]
    finally:
        threads.shutdown(wait=False, cancel_futures=True)


def test_callbacks_past_the_bound_that_all_wait_on_each_other_end_at_the_time_limit() -> None:
    """25 plan functions that must all be in flight at once (each waits until all 25 have
    called the host) where 24 fit: one process finishes; the plan's process runs 24, the 25th
    waits for a thread, and the run ends at its time limit, the host alive and the next plan
    running (a fan-out of fan-outs wider than the bound is this case: the limit that remains)."""
    n = 16 + LANES + 1
    plan = FLAT.replace("N", str(n))
    host, barrier, threads = _flat_host(n)
    try:
        assert Sandbox(host=host, limits=SMALL, isolation="inprocess").run(plan) == n
    finally:
        threads.shutdown(wait=False, cancel_futures=True)
    host, barrier, threads = _flat_host(n)
    limits = Limits(seconds=2, memory_mb=64)
    try:
        with pytest.raises(PlanLimitError) as raised:
            Sandbox(host=host, limits=limits, isolation="process").run(plan)
    finally:
        barrier.abort()
        threads.shutdown(wait=False, cancel_futures=True)
    assert raised.value.kind == "seconds", raised.value
    assert Sandbox(isolation="process").run("result = 'alive'\n") == "alive"


# -- a thread the address space cannot hold ---------------------------------------------------

FILL_THE_ADDRESS_SPACE = """
import ctypes, gc
from planlang.isolation import confine
from planlang.isolation.child import _ChildSandbox
confine._state['strict'] = False  # ctypes: the audit hook would refuse it
box = [o for o in gc.get_objects() if type(o) is _ChildSandbox][0]
# libc's mmap, not the mmap module: a plan's process, running as its own uid, can import
# no module its fork server did not (the interpreter's files are root's alone here)
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
for size in (2**30, 2**26, 2**24):  # what is left is less than one callback thread's stack
    while libc.mmap(None, size, 3, 0x22, -1, 0) not in (None, 2**64 - 1):
        pass  # PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS; MAP_FAILED ends it
result = box.host['call'].fn(lambda: 1)
"""


def test_a_callback_thread_the_address_space_cannot_hold_ends_the_run(probe_pool: Pool) -> None:
    """Raw code in the plan's process (a test-only probe) fills its address space, then the
    host calls a function back: no thread can start for it (a lane's, here), and the run ends
    with ``memory`` (not a crash, not a hang). The host lives on."""

    def call(f: Callable[[], int]) -> int:  # on a thread of the host's own: a spare request
        with ThreadPoolExecutor(1) as thread:
            return thread.submit(f).result()

    box = Sandbox(host={"call": call}, limits=Limits(seconds=10, memory_mb=64),
                  isolation="process")  # fmt: skip
    box._pool = probe_pool  # type: ignore[attr-defined]
    box._probe = {"probe": FILL_THE_ADDRESS_SPACE}  # type: ignore[attr-defined]
    with pytest.raises(PlanLimitError) as raised:
        box.run("result = call\n")
    assert raised.value.kind == "memory", raised.value
    assert Sandbox(isolation="process").run("result = 'alive'\n") == "alive"


# -- the pool itself --------------------------------------------------------------------------


def test_the_bound_is_as_many_stacks_as_the_memory_limit_holds() -> None:
    assert CALLBACK_STACK == 64 * 2**20
    assert bound_for(Limits(memory_mb=16)) == FEWEST == 16
    assert bound_for(Limits()) == 2048 // 64
    assert bound_for(Limits(memory_mb=4096)) == 64
    assert bound_for(Limits(memory_mb=2**30)) == MOST == 1024


class _Served:
    """A stand-in for an Endpoint's serve and handler: each job's serve waits on its own
    ``go`` event; after serving, the job waits on ``answered`` (its answer being sent)."""

    def __init__(self, threads: CallbackThreads) -> None:
        self.serve = threads.serving(self._serve)
        self.go: dict[int, threading.Event] = {}
        self.serving: dict[int, threading.Event] = {}
        self.sending: dict[int, threading.Event] = {}
        self.answered: dict[int, threading.Event] = {}
        self.done: dict[int, threading.Event] = {}
        self.nested: dict[int, bool] = {}

    def _serve(self, op: str, n: Any) -> tuple[Any, Any]:
        if op == "nested":
            return True, None
        self.serving[n].set()
        if self.nested.get(n):
            self.serve("nested", n)  # a request for this thread while it waits on the host
        assert self.go[n].wait(HANG_GUARD)
        return True, n

    def job(self, n: int) -> None:
        self.serve("call", n)
        self.sending[n].set()
        assert self.answered[n].wait(HANG_GUARD)
        self.done[n].set()

    def submit(self, threads: CallbackThreads, n: int, *, nested: bool = False) -> None:
        for table in (self.go, self.serving, self.sending, self.answered, self.done):
            table[n] = threading.Event()
        self.nested[n] = nested
        threads.submit(self.job, n)

    def finish(self, n: int) -> None:
        self.go[n].set()
        self.answered[n].set()
        assert self.done[n].wait(HANG_GUARD)


def _pool(bound: int) -> tuple[CallbackThreads, list[PlanLimitError]]:
    threads = CallbackThreads(bound)
    refused: list[PlanLimitError] = []
    threads.refuse = refused.append
    return threads, refused


def test_each_request_in_flight_gets_a_thread_of_its_own_up_to_the_bound() -> None:
    """Three requests that each wait (on the host, say): three threads, all serving at once;
    a fourth past a bound of three waits for one of them to come free, and then runs on it.
    The first serves a request for itself meanwhile (a nested one): it counts once, not twice
    or none."""
    threads, refused = _pool(3)
    served = _Served(threads)
    try:
        for n in range(3):
            served.submit(threads, n, nested=n == 0)
        for n in range(3):
            assert served.serving[n].wait(HANG_GUARD)
        assert threads.started == 3 and not refused
        served.submit(threads, 3)
        assert not refused
        assert not served.serving[3].is_set()  # no thread for it yet: three are taken
        assert threads.started == 3
        served.finish(1)
        assert served.serving[3].wait(HANG_GUARD)  # the thread that came free takes it
        assert threads.started == 3 and not refused
    finally:
        for n in (0, 2, 3):
            served.finish(n)
        threads.shutdown()


def test_a_request_counts_until_its_plan_function_returns_not_until_its_answer_is_sent() -> None:
    """A host thread calls again as soon as it has its answer; its last request's thread may
    still be sending that answer. With a bound of one, the second request is not refused: it
    waits for that thread, which is only finishing. Counted until the answer was sent, as a
    ThreadPoolExecutor would, it would be refused whenever the machine is slow."""
    threads, refused = _pool(1)
    served = _Served(threads)
    try:
        served.submit(threads, 0)
        served.go[0].set()
        assert served.sending[0].wait(HANG_GUARD)  # served, and "sending its answer" now
        served.submit(threads, 1)
        assert not refused
        assert not served.serving[1].is_set()  # one thread, still finishing the first
        served.answered[0].set()
        assert served.serving[1].wait(HANG_GUARD)
        assert threads.started == 1 and not refused
    finally:
        served.finish(0)
        served.finish(1)
        threads.shutdown()


def test_a_thread_that_cannot_start_ends_the_run_with_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads, refused = _pool(4)

    def cannot_start(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", cannot_start)
    threads.submit(lambda: None)
    assert [error.kind for error in refused] == ["memory"]
    assert threads.started == 0


def test_a_request_that_serves_nothing_still_frees_its_place() -> None:
    """A notice handed to the pool calls no serve: it counts as done once handled, so a
    bound of one still takes the next request."""
    threads, refused = _pool(1)
    handled = threading.Event()
    threads.submit(handled.set)
    assert handled.wait(HANG_GUARD)
    deadline = time.monotonic() + HANG_GUARD  # the thread counts it done just after
    while threads.taken and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threads.taken == 0
    served = _Served(threads)
    try:
        served.submit(threads, 0)
        assert served.serving[0].wait(HANG_GUARD)
        assert not refused and threads.started == 1
    finally:
        served.finish(0)
        threads.shutdown()
