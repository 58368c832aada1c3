"""Lanes (planlang.isolation.lanes): host threads that call plan functions back each talk to
one thread of the plan's process over a pipe pair of their own. What must hold: the same
results, order and threads as in one process, whether a callback takes a lane, goes on on one
(nested), or finds every lane taken; and a plan process that abuses a lane ends the run as it
would on the run's channel, the host alive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from lane_probes import calls_back_on_a_thread, lane_probe

from planlang.errors import PlanError, PlanLimitError
from planlang.isolation.lanes import LANES
from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HANG_GUARD = 30.0
MODES = ("inprocess", "process")


def run_both(source: str, host: dict[str, Any], seconds: float = 20) -> list[Any]:
    results = []
    for mode in MODES:
        box = Sandbox(host=host, limits=Limits(seconds=seconds), isolation=mode)
        results.append(box.run(source))
    return results


def fan_out_on(width: int) -> tuple[Callable[[list[Callable[[], Any]]], list[Any]], Any]:
    pool = ThreadPoolExecutor(width, thread_name_prefix="test-fan")

    def fan_out(thunks: list[Callable[[], Any]]) -> list[Any]:
        return list(pool.map(lambda thunk: thunk(), thunks))

    return fan_out, pool


@pytest.mark.parametrize("width", [1, LANES, 3 * LANES])
def test_callbacks_from_host_threads_give_what_one_process_gives(width: int) -> None:
    """Fewer host threads than lanes, as many, and more (those find every lane taken and
    call back over the run's channel): the same replies, in order."""
    fan_out, pool = fan_out_on(width)

    def agent(role: str, n: int) -> dict[str, Any]:
        return {"role": role, "n": n, "tags": [role, str(n)], "deep": {"k": [n, {"m": n}]}}

    source = (
        "replies = fan_out([lambda n=n: agent('coder', n) for n in range(120)])\n"
        "result = [r['n'] + r['deep']['k'][1]['m'] for r in replies], replies[7]\n"
    )
    try:
        inprocess, isolated = run_both(source, {"fan_out": fan_out, "agent": agent})
    finally:
        pool.shutdown()
    assert isolated == inprocess
    assert isolated[0] == [2 * n for n in range(120)]


def test_a_host_call_inside_a_callback_runs_on_the_thread_that_called_back() -> None:
    """As in one process: the host word a thunk calls runs on the host thread that called
    the thunk, and a plan function that host word calls back in turn runs there too."""
    fan_out, pool = fan_out_on(4)
    seen: list[tuple[int, int]] = []

    def caller() -> int:
        return threading.get_ident()

    def apply(f: Callable[[int], int], x: int) -> int:
        seen.append((threading.get_ident(), f(x)))
        return x

    source = (
        "def outer(n):\n"
        "    me = caller()\n"
        "    apply(lambda x: caller(), n)\n"
        "    return me\n"
        "result = fan_out([lambda n=n: outer(n) for n in range(40)])\n"
    )
    try:
        for mode in MODES:
            seen.clear()
            box = Sandbox(host={"fan_out": fan_out, "caller": caller, "apply": apply},
                          limits=Limits(seconds=20), isolation=mode)  # fmt: skip
            callers = box.run(source)
            # apply's thread, and the thread its callback's host call ran on, are one
            assert all(thread == inner for thread, inner in seen), mode
            assert set(callers) == {thread for thread, _ in seen}, mode
            assert threading.get_ident() not in callers, mode
    finally:
        pool.shutdown()


def test_what_a_callback_prints_keeps_its_order_with_its_host_calls() -> None:
    fan_out, pool = fan_out_on(3)
    lines: list[str] = []

    def note(text: str) -> None:
        lines.append(f"host {text}")

    source = (
        "def step(n):\n"
        "    print(f'before {n}')\n"
        "    note(str(n))\n"
        "    print(f'after {n}')\n"
        "    return n\n"
        "result = fan_out([lambda n=n: step(n) for n in range(30)])\n"
    )
    try:
        for mode in MODES:
            lines.clear()
            box = Sandbox(host={"fan_out": fan_out, "note": note}, limits=Limits(seconds=20),
                          isolation=mode, log=lambda line: lines.append(line))  # fmt: skip
            assert box.run(source) == list(range(30))
            for n in range(30):
                order = [lines.index(f"before {n}"), lines.index(f"host {n}"),
                         lines.index(f"after {n}")]  # fmt: skip
                assert order == sorted(order), (mode, n, lines)
    finally:
        pool.shutdown()


def test_an_error_in_a_callback_on_a_lane_is_the_plans_error_as_in_one_process() -> None:
    fan_out, pool = fan_out_on(LANES)
    source = "result = fan_out([lambda n=n: 10 // (n - 5) for n in range(10)])\n"
    try:
        kinds = []
        for mode in MODES:
            box = Sandbox(host={"fan_out": fan_out}, limits=Limits(seconds=20), isolation=mode)
            with pytest.raises(PlanError) as raised:
                box.run(source)
            kinds.append((type(raised.value), getattr(raised.value, "error_type", None)))
        assert kinds[0] == kinds[1]
    finally:
        pool.shutdown()


# -- a plan process that abuses a lane (the probe runs raw Python in place of the plan) ------


@pytest.fixture
def pool(probe_pool: Pool) -> Pool:
    return probe_pool  # the session's (conftest.py)


@pytest.mark.parametrize(
    "frames",
    [
        "[b'\\x00\\x00\\x00\\x05' + b'\\x00' * 8 + b'nope!']",  # not JSON
        "[['a', 1, 2]]",  # not a message
        "[['z', 1, 2, 3]]",  # an unknown kind
        "[['q', 1, 999, 'call', [1, [], {'d': []}, None]]]",  # for a thread not on the lane
    ],
)
@pytest.mark.parametrize("wait", [True, False])
def test_a_lane_that_breaks_the_protocol_ends_the_run(pool: Pool, frames: str, wait: bool
                                                      ) -> None:  # fmt: skip
    """Whether the host word waits for its callback or the host reads the run's channel
    meanwhile, the run ends at once, as a crash that names the protocol."""
    results: list[Any] = []
    box = lane_probe(pool, frames, seconds=20, w=calls_back_on_a_thread(results, wait=wait))
    started = time.monotonic()
    with pytest.raises(PlanLimitError) as ended:
        box.run("result = w\n")
    assert ended.value.kind == "crash", ended.value
    assert "protocol" in ended.value.message
    assert time.monotonic() - started < 15  # the time limit is 20 s: it did not end the run
    assert Sandbox(host={}, limits=Limits(), isolation="process").run("result = 2\n") == 2


def test_a_lane_flooded_with_requests_serves_them_one_by_one_and_none_after_the_end(
    pool: Pool,
) -> None:
    """On a lane, the host thread reads its own frames: a flood waits in the pipe (bounded
    by the kernel), each request served in turn; once the run has ended, none is served."""
    calls: list[int] = []
    release = threading.Event()

    def slow(text: str) -> None:
        calls.append(1)
        release.wait(HANG_GUARD)

    flood = "[['q', 10 + i, ask[1], 'call', [SLOW, ['x' * 1000], {'d': []}, None]] " \
            "for i in range(5000)]"  # fmt: skip
    results: list[Any] = []
    box = lane_probe(pool, flood.replace("SLOW", "box.host['slow'].fn.wid"), seconds=2,
                     w=calls_back_on_a_thread(results), slow=slow)  # fmt: skip
    with pytest.raises(PlanLimitError) as ended:
        box.run("result = [w, slow]\n")
    assert ended.value.kind == "seconds"
    release.set()
    time.sleep(1)  # long enough to serve thousands of the queued requests, were they served
    assert len(calls) <= 2


NO_MEMORY_FOR_A_LANE = """
import gc, resource, threading
from planlang.isolation.peer import Peer
from planlang.isolation.child import CALLBACK_STACK
peer = [o for o in gc.get_objects() if type(o) is Peer and o.endpoint is not None][0]
box = [o for o in gc.get_objects() if type(o).__name__ == '_ChildSandbox'][0]
wid = box.host['w'].fn.wid
peer.functions[1] = lambda: None
go = threading.Event()
def call_w():
    go.wait()
    peer.ask('call', [wid, [{'c': 1}], {'d': []}, None])  # reads the host's notice of a lane
threading.stack_size(256 * 1024)
threading.Thread(target=call_w, daemon=True).start()
threading.stack_size(CALLBACK_STACK)
from planlang.isolation import confine
confine._state['strict'] = False  # the audit hook lets the probe read what it uses
size = confine.used()[1]
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, (int(size) + 16 * 2**20, hard))
confine._state['strict'] = True
go.set()
import time
time.sleep(30)
result = None
"""


def test_a_plan_process_without_memory_for_a_lanes_thread_ends_as_a_memory_limit(
    pool: Pool,
) -> None:
    results: list[Any] = []
    box = Sandbox(host={"w": calls_back_on_a_thread(results)}, limits=Limits(seconds=20),
                  isolation="process")  # fmt: skip
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": NO_MEMORY_FOR_A_LANE}  # type: ignore[attr-defined]
    started = time.monotonic()
    with pytest.raises(PlanLimitError) as ended:
        box.run("result = w\n")
    assert ended.value.kind == "memory", ended.value
    assert time.monotonic() - started < 15


def test_a_run_that_breaks_the_protocol_ends_at_once_while_a_host_word_blocks(pool: Pool) -> None:
    """The plan's own host call blocks in the host (its word waits on something that never
    comes) while the plan's process breaks the protocol on a lane: the run ends at once as a
    crash, not at its time limit (the run's thread waited for that host word to return)."""
    release = threading.Event()
    results: list[Any] = []

    def w(f: Callable[[], Any]) -> None:
        calls_back_on_a_thread(results, wait=False)(f)
        release.wait(HANG_GUARD)  # blocks the plan's own call far past the time limit

    box = lane_probe(pool, "[['a', 1, 2]]", seconds=20, w=w)
    started = time.monotonic()
    try:
        with pytest.raises(PlanLimitError) as ended:
            box.run("result = w\n")
    finally:
        release.set()
    assert ended.value.kind == "crash", ended.value
    assert time.monotonic() - started < 15  # the time limit is 20 s: it did not end the run
