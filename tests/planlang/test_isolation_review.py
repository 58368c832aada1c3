"""Defects a review of the isolation hot path (session 6) found: each test failed on the
branch ``hotpath`` before its fix.

REVIEW 1: a thunk's result crossing back as plain JSON lost the sharing of its lists, where
the host holds the plan's own object in one process (and the tagged codec kept it).
REVIEW 2: the memory budget's count of a frame was not a bound on what it decodes to
(distinct short strings and dict keys were counted at a third to a half of their cost, and
nested dicts decode to more than the 32 bytes a byte of JSON was said to be at most).
REVIEW 3: a child answering the run with infinite steps made ``Sandbox.run`` raise
``OverflowError``, not a ``PlanError`` (3b: an error kind nested too deep, RecursionError).
REVIEW 4 (on main too; fixed in session 7): nested fan-outs from an embedder's threads waited
on the child's 16 callback threads until the time limit. REVIEW 5: requests queued for one
waiting host thread had no bound. REVIEW 6: the budget refused a result the plan's memory
limit allows in one process (one shared string becomes many in JSON); the host now takes at
least BUDGET_FLOOR.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import threading
import time
import tracemalloc
from collections.abc import Callable

import orjson
import pytest

from planlang.errors import PlanError
from planlang.isolation.frames import FrameReader, FrameTooCostly
from planlang.isolation.lanes import LANES
from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

MODES = ("inprocess", "process")
HANG_GUARD = 15.0


@pytest.fixture
def pool(probe_pool: Pool) -> Pool:
    return probe_pool  # the session's (conftest.py)


def test_a_thunks_result_keeps_its_shared_lists_in_the_host_as_in_one_process() -> None:
    """REVIEW 1. The host word sees the plan function's result: one list under two keys is
    one list there, in both modes (the plan's own object in one process)."""

    def fan(f: Callable[[], dict[str, list[int]]]) -> bool:
        got = f()
        return got["a"] is got["b"]

    source = "shared = [1, 2]\nresult = fan(lambda: {'a': shared, 'b': shared})\n"
    for mode in MODES:
        assert Sandbox(host={"fan": fan}, isolation=mode).run(source) is True, mode


def _retained(reader: FrameReader) -> tuple[int, object]:
    """What one read keeps allocated (bytes), and what it gave."""
    tracemalloc.start()
    try:
        got = reader.read(time.monotonic() + HANG_GUARD)
        return tracemalloc.get_traced_memory()[0], got
    finally:
        tracemalloc.stop()


BUDGET = 1 << 20


def _distinct_strings(n: int) -> object:
    return [chr(0x4E00 + i) + "a" for i in range(n)]


def _nested(depth: int) -> object:
    value: object = {}
    for _ in range(depth):
        value = {"": value}
    return value


@pytest.mark.parametrize(
    ("value", "ascii"),
    [
        (_distinct_strings(25_000), False),  # counted, at under half its cost
        ({f"{i:x}": 0 for i in range(20_000)}, False),  # distinct keys: half their cost
        ([_nested(6) for _ in range(980)], False),  # under the size that is not counted
        ("a" * 300_000 + "\U0001f600", False),  # one wide character: four bytes each, not one
        ("a" * 300_000 + "\U0001f600", True),  # the same as ASCII JSON: \\ud83d\\ude00
    ],
    ids=["short strings", "dict keys", "nested dicts", "wide text", "escaped wide text"],
)
def test_a_frame_the_budget_lets_through_decodes_within_it(value: object, ascii: bool) -> None:
    """REVIEW 2. Whatever frame a reader with a budget takes, what it decodes to stays within
    that budget (or the frame is refused as too costly)."""
    message = ["a", 1, True, [value, 0]]
    if ascii:  # as the standard library writes what orjson declines
        body = json.dumps(message, separators=(",", ":")).encode("ascii")
    else:
        body = orjson.dumps(message)
    frame = struct.pack(">Id", len(body), time.monotonic()) + body
    read_end, write_end = os.pipe()
    reader = FrameReader(read_end)
    reader.set_budget(BUDGET)

    def write() -> None:
        os.write(write_end, frame)
        os.close(write_end)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        try:
            kept, got = _retained(reader)
        except FrameTooCostly:
            return
        assert got is not None
        assert kept <= BUDGET, f"{len(body):,} bytes decoded to {kept:,}, past {BUDGET:,}"
    finally:
        writer.join(HANG_GUARD)
        reader.close()


INFINITE_STEPS = """
import gc, os, struct, time
from planlang.isolation.channel import Endpoint
ep = [o for o in gc.get_objects() if type(o) is Endpoint][0]
body = BODY.replace("R", str(ep.default_context)).encode()
os.write(ep._writer, struct.pack(">Id", len(body), time.monotonic()) + body)
time.sleep(30)
result = None
"""


DEEP = "[" * 1020 + "]" * 1020  # orjson reads it (1,024 levels); str() of it recurses too far


@pytest.mark.parametrize(
    "body",
    [
        '["a", R, true, [0, 1e400]]',
        '["p", R, [0, Infinity]]',
        '["a", R, false, ["runtime", ' + DEEP + ', "m", null, null]]',  # REVIEW 3b
    ],
    ids=["infinite steps", "infinite steps, plain", "deep error kind"],
)
def test_a_crafted_run_answer_ends_with_a_plan_error(pool: Pool, body: str) -> None:
    """REVIEW 3. JSON the standard library reads as infinity (orjson declines it) for the
    run's step count: int() of it raised OverflowError out of Sandbox.run. REVIEW 3b (on main
    too): an error whose kind nests 1,020 lists deep: str() of it raised RecursionError."""
    box = Sandbox(limits=Limits(seconds=3), isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": INFINITE_STEPS.replace("BODY", repr(body))}  # type: ignore[attr-defined]
    with pytest.raises(PlanError):
        box.run("result = None\n")


def test_a_fan_out_of_fan_outs_on_the_hosts_own_threads_ends_as_in_one_process() -> None:
    """REVIEW 4 (on main too). An embedder's fan-out word runs each plan function on a thread
    of its own: 16 at once that each fan out again took every thread the child ran callbacks
    on, and the inner callbacks queued behind them until the time limit. In one process the
    plan finishes; now the child starts a thread for each (``callback_threads``). Since the
    lanes (8 host threads call back on a lane each, a child thread each) it takes 16 past
    those: 24 outer functions, and a memory limit whose bound holds their 40 threads."""
    from concurrent.futures import ThreadPoolExecutor

    outer = 16 + LANES
    threads = ThreadPoolExecutor(2 * outer + 8)

    def fan(fns: list[Callable[[], int]]) -> list[int]:
        return [future.result() for future in [threads.submit(fn) for fn in fns]]

    source = f"result = sum(fan([lambda: sum(fan_in([lambda: 1])) for _ in range({outer})]))\n"
    try:
        for mode in MODES:
            # every outer function is running before any fans out again: no race decides it
            barrier = threading.Barrier(outer, timeout=HANG_GUARD)

            def fan_in(
                fns: list[Callable[[], int]], barrier: threading.Barrier = barrier
            ) -> list[int]:
                barrier.wait()
                return fan(fns)

            host = {"fan": fan, "fan_in": fan_in}
            box = Sandbox(host=host, limits=Limits(seconds=3, memory_mb=4096), isolation=mode)
            assert box.run(source) == outer, mode
    finally:
        threads.shutdown(wait=False, cancel_futures=True)


FLOOD_A_WAITING_THREAD = """
import gc, time
from planlang.isolation.channel import Endpoint, MAX_PENDING
from planlang.isolation.child import _ChildSandbox
from planlang.isolation.frames import write_all
ep = [o for o in gc.get_objects() if type(o) is Endpoint][0]
box = [o for o in gc.get_objects() if type(o) is _ChildSandbox][0]
w, slow = box.host['w'].fn.wid, box.host['slow'].fn.wid
write_all(ep._writer, ['q', 9, ep.default_context, 'call', [w, [{'c': 1}], {'d': []}, None]])
def callback():  # the host's next callback on this channel (past its notices of lanes)
    while True:
        frame = ep._reader.read()
        if frame[0] == 'q':
            return frame
ask = callback()  # the host calls the plan function back: its thread waits on ask[1]
other = callback()  # and again from a second thread, which reads for both
for i in range(MAX_PENDING + 200):  # each for that waiting thread, queued in its inbox
    write_all(ep._writer, ['q', 10 + i, ask[1], 'call', [slow, ['x' * 1000], {'d': []}, None]])
time.sleep(30)
result = None
"""


def test_a_flood_of_requests_for_a_waiting_thread_ends_the_run(pool: Pool) -> None:
    """REVIEW 5 (on main too). Requests for a host thread that waits on a callback queue in
    its inbox while it serves them one by one and another thread reads the pipe: a child
    sending thousands was not refused (as it is for the spare pool), each frame up to the
    whole memory budget. Once the run has ended, the requests still queued are dropped, not
    served (the thread served all 4,096 of them, half a second each, and held the host's
    exit for half an hour)."""
    calls: list[int] = []
    release = threading.Event()

    def slow(text: str) -> None:
        calls.append(1)
        release.wait(30)  # the first holds its thread until the run has ended

    def w(f: Callable[[], None]) -> None:
        def quietly() -> None:
            with contextlib.suppress(PlanError):  # the run has ended under it
                f()

        # one more than the lanes: a thread that finds every lane taken calls back over the
        # run's channel, where the plan's own thread waits on its callback too
        others = [threading.Thread(target=quietly) for _ in range(LANES + 1)]
        for other in others:
            other.start()
        f()
        for other in others:
            other.join()

    # the time limit is far off: the flood, not the clock, must end the run, however loaded
    box = Sandbox(host={"w": w, "slow": slow}, limits=Limits(seconds=25),
                  isolation="process")  # fmt: skip
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": FLOOD_A_WAITING_THREAD}  # type: ignore[attr-defined]
    with pytest.raises(PlanError, match="requests"):
        box.run("result = [w, slow]\n")
    release.set()
    time.sleep(1)  # long enough to serve thousands of the queued requests, were they served
    assert len(calls) <= 2


def test_a_result_within_the_memory_limit_is_returned_in_both_modes() -> None:
    """REVIEW 6 (new on hotpath). One short string 500,000 times is 4 MB in the plan, and a
    16 MB memory limit returns it in one process; as JSON it is 500,000 strings in the host,
    and the frame budget refused it as a memory limit. Fixed: the host takes at least
    ``BUDGET_FLOOR`` from one frame, whatever the plan's limit."""
    for mode in MODES:
        box = Sandbox(limits=Limits(seconds=20, memory_mb=16), isolation=mode)
        assert box.run("result = ['ab'] * 500_000\n") == ["ab"] * 500_000, mode
