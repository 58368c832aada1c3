"""Red team 11: the host of isolated plans, attacked through the embedding API and from a plan
process the language layer no longer holds (``probe_prelude``). Each case failed on main
(d2c4927) before its fix; deadlines here are hang guards only, never the thing measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from probe_prelude import CHANNEL, probed

from planlang.errors import PlanError, PlanLimitError
from planlang.isolation.pool import Child, Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HANG_GUARD = 120.0  # seconds: only a hang takes this long
ROOT = str(Path(__file__).resolve().parents[2])


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


# -- answers a host word gathers, each below the size the held budget counted ----------------

MEDIUM = "big = 'x' * 60000\n"  # 60 KB as JSON: below the 64 KiB a held answer had to pass


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("thunk", ["lambda: big", "lambda: same(big)", "lambda: [big, 1]"])
def test_many_medium_answers_a_host_word_gathers_are_held_to_the_runs_budget(
    thunk: str, threaded: bool
) -> None:
    """12,000 answers of 60 KB: one object in one process, 12,000 copies in the host. Only
    answers past 64 KiB were counted, so on main the host grew by about 690 MB on a plan of
    256 MB and the run returned. Now it ends on its memory limit, the host within it."""
    peak = [0]
    start = _resident()

    def each(f: Any, n: int) -> int:
        out = []
        for _ in range(n):
            out.append(f())
            peak[0] = max(peak[0], _resident() - start)
        return len(out)

    def each_on_threads(f: Any, n: int) -> int:  # the callbacks go on lanes
        with ThreadPoolExecutor(4) as threads:
            return each(lambda: threads.submit(f).result(), n)

    box = Sandbox(host={"each": each_on_threads if threaded else each, "same": lambda v: v},
                  limits=Limits(seconds=120, memory_mb=256), isolation="process")  # fmt: skip
    with pytest.raises(PlanLimitError) as ended:
        box.run(MEDIUM + f"result = each({thunk}, 12000)\n")
    assert ended.value.kind == "memory"
    assert peak[0] < 500 * 2**20, f"the host grew by {peak[0] >> 20} MB"
    assert box.run("result = 1 + 1\n") == 2  # the host and its pool carry on


def test_medium_answers_the_host_drops_are_not_held() -> None:
    """The same 12,000 answers, each let go of at once: as in one process."""

    def each(f: Any, n: int) -> int:
        return sum(len(f()) for _ in range(n))

    box = Sandbox(host={"each": each}, limits=Limits(seconds=120, memory_mb=256),
                  isolation="process")  # fmt: skip
    assert box.run(MEDIUM + "result = each(lambda: big, 12000)\n") == 12000 * 60000


def test_medium_requests_nested_on_many_threads_are_held_to_the_runs_budget() -> None:
    """A word that calls back a plan function that calls the word again, with the same list
    of 20,000 empty lists (60 KB as JSON, about 1.3 MB decoded), on 8 threads of a fan-out
    word: each level's arguments are a copy alive while its word runs. Only requests past
    64 KiB were counted, so on main the host grew by about 1 GB on a plan of 256 MB (until
    the plan's 60 s ran out). Now the run ends on its memory limit, the host within it."""
    peak = [0]
    start = _resident()

    def w(data: Any, f: Any) -> Any:
        peak[0] = max(peak[0], _resident() - start)
        return f()

    def fan(thunks: Any) -> Any:
        with ThreadPoolExecutor(8) as threads:
            return list(threads.map(lambda thunk: thunk(), thunks))

    source = (
        "big = [[] for _ in range(20000)]\n"
        "def f():\n    return w(big, f)\n"
        "result = fan([lambda: w(big, f) for _ in range(8)])\n"
    )
    box = Sandbox(host={"w": w, "fan": fan}, limits=Limits(seconds=60, memory_mb=256),
                  isolation="process")  # fmt: skip
    with pytest.raises(PlanLimitError) as ended:
        box.run(source)
    assert ended.value.kind == "memory", ended.value
    assert peak[0] < 500 * 2**20, f"the host grew by {peak[0] >> 20} MB"
    assert box.run("result = 1 + 1\n") == 2


# -- the rehearsal host, shared by every price of the process --------------------------------


@pytest.fixture
def rehearsal_host() -> Any:
    """The process's rehearsal host, warm (so a price hands it seeds at once)."""
    from planlang import rehearsal_hosts

    (found,) = rehearsal_hosts.start_hosts()
    assert found.ready.wait(HANG_GUARD) and not found.gone
    return found


def test_a_price_does_not_wait_for_another_prices_rehearsal_in_the_host(
    rehearsal_host: Any,
) -> None:
    """The host rehearses one seed at a time, for every price of the process: a seed of
    another price's (a plan of up to its time limit, and 2x that plus 30 s before it is taken
    for stuck; then the next seed of that price's) holds it. On main a price's seed queued
    behind it, so one price's plan set the time of every other price made meanwhile: here
    it waits for good, as the other price's rehearsal holds the host. Now a busy host's seed
    is rehearsed here, at once."""
    from planlang.price import price

    source = "r = agent('say hi')\nresult = len(r)\n"
    served = rehearsal_host.served
    rehearsal_host._lock.acquire()  # another price's seed, being rehearsed there now
    try:
        done: list[Any] = []
        thread = threading.Thread(target=lambda: done.append(
            price(source, seeds=4, limits=Limits(seconds=30), isolation="process")),
            daemon=True)  # fmt: skip
        thread.start()
        thread.join(HANG_GUARD)
        assert done, "the price waited for another price's rehearsal"
    finally:
        rehearsal_host._lock.release()
    assert done[0].seeds == (0, 1, 2, 3) and not done[0].problems
    assert rehearsal_host.served == served and not rehearsal_host.gone


# -- pids the kernel gives again --------------------------------------------------------------

NEXT_PID = "/proc/sys/kernel/ns_last_pid"  # the pid the kernel gave last (root may set it)


def test_a_child_given_the_pid_of_an_earlier_child_is_not_taken_for_dead() -> None:
    """pid_max is 32,768 here and a run takes a pid for its process and one a thread: the
    kernel gives pids again within a few thousand runs. The fork server's handle kept every
    child's exit by pid, so on main a fresh child given an earlier child's pid read as dead:
    the pool discarded it (not even killing it) and forked again, and once the earlier
    children had had most pids, nearly every fork. Here the kernel is made to give the pid
    again at once (``ns_last_pid``)."""
    if not os.access(NEXT_PID, os.W_OK):
        pytest.skip("the next pid cannot be chosen here (ns_last_pid needs root)")
    pool = Pool(1)
    try:
        pool.warm()  # its fork server, and its ready child: nothing forks meanwhile
        zygote = pool._zygote_now()
        first = Child(zygote).wait_ready()
        first.discard()  # killed, and reported dead
        assert zygote.exit_code(first.pid, timeout=HANG_GUARD) is not None
        for _ in range(100):  # another process of the machine may take the pid first
            with open(NEXT_PID, "w") as last:
                last.write(str(first.pid - 1))
            again = Child(zygote)
            if again.pid == first.pid:
                break
            again.discard()
        assert again.pid == first.pid, "the kernel never gave the pid again"
        again.wait_ready()
        assert again.alive()
        pool._ready.appendleft(again)  # the pool's next ready child
        box = Sandbox(limits=Limits(seconds=30), isolation="process")
        box._pool = pool  # type: ignore[attr-defined]
        assert box.run("result = 2\n") == 2
        assert pool.last is again
    finally:
        pool.close()


# -- integers past the plan's own limit, from a plan process that skips it --------------------


@pytest.fixture(scope="module")
def probe_pool() -> Iterator[Pool]:
    made = Pool(1, probes=True)
    yield made
    made.close()


def test_a_host_word_gets_no_integer_past_the_plans_int_bits(probe_pool: Pool) -> None:
    """A plan makes no integer past ``Limits.int_bits`` (100,000 bits): the plan's process
    refuses the operation. One that skips that sends any: an int crosses as hex, and a 16 MB
    frame (within the host's budget) is an int of 64 million bits. The host word then works
    on what no plan can make; squaring one of 16 million bits takes 9 s here with the
    interpreter's lock held, so the host's clock, the deadline's kill and every other run
    stop (one of 64 million bits: about 80 s, on a plan of 2 s). Now the host refuses it:
    the word never sees it, and the plan's call fails."""
    seen: list[int] = []

    def w(x: Any) -> int:
        seen.append(x.bit_length() if type(x) is int else -1)
        return 1

    probe = CHANNEL + (
        "big = {'i': 'f' * 4_000_000}\n"
        "ok, answer = ep.request('call', [wid, [big], {'d': []}, 1])\n"
        "result = [ok, ep.request('call', [wid, [{'i': 'f' * 20}], {'d': []}, 2])[1]]\n"
    )
    box = probed(probe_pool, probe, Limits(seconds=30), w=w)
    ok, small = box.run("result = w\n")
    assert seen == [80], f"the host word got integers of {seen} bits"
    assert ok is False and small == 1


@pytest.mark.parametrize("mode", ["inprocess", "process"])
def test_an_integer_a_plan_grows_past_int_bits_by_adding_crosses_as_in_one_process(
    mode: str,
) -> None:
    """The host's bound leaves what a plan can make: + is not checked against int_bits."""
    box = Sandbox(host={"bits": lambda x: x.bit_length()}, limits=Limits(seconds=60),
                  isolation=mode)  # fmt: skip
    source = "x = 2 ** 49999\nx = x * x\nfor _ in range(2000):\n    x = x + x\n"
    assert box.run(source + "result = bits(x)\n") == 101999


# -- values whose shared parts make a walk far larger than the value ---------------------------

SHARED = "x = [1]\nfor _ in range(60):\n    x = [x, x]\n"  # 61 lists; walked, 2**61 nodes


def test_a_host_word_is_not_handed_a_value_whose_walk_is_past_the_runs_budget() -> None:
    """The codec keeps shared parts shared (the host's copy costs what the plan's does), so a
    host word got a 2**61-node walk in 61 lists: serializing it, comparing it or printing it
    never ends. Here the word counts what it walks (stopping at 10 million): on main it got
    there. Now the plan's call fails with a TypeError and the word never runs; the same
    list a few times over (a walk the budget allows) still crosses."""
    walked: list[int] = []

    def nodes(value: Any) -> int:
        count, todo = 0, [value]
        while todo and count < 10_000_000:
            item = todo.pop()
            count += 1
            if type(item) is list:
                todo.extend(item)
        walked.append(count)
        return count

    box = Sandbox(host={"nodes": nodes}, limits=Limits(seconds=60), isolation="process")
    with pytest.raises(PlanError) as failed:
        box.run(SHARED + "result = nodes(x)\n")
    assert walked == [] and "TypeError" in str(failed.value), failed.value
    row = "row = list(range(1000))\n"
    assert box.run(row + "result = nodes([row, row, row])\n") == 3004
    assert box.run(row + "def f():\n    return [row] * 4\nresult = nodes(f())\n") == 4005


AGENT = """
from planlang.check import check
from planlang.rehearse import rehearse
from planlang.sandbox.limits import Limits
from runtime import Settings
source = (
    "s = {'type': 'object'}\\nfor _ in range(40):\\n"
    "    s = {'type': 'object', 'properties': {'a': s, 'b': s}}\\n"
    "r = agent('hi', schema=s)\\nresult = 1\\n"
)
done = rehearse(check(source), seed=0, settings=Settings(), limits=Limits(seconds=2),
                isolation="process")
print(repr(done.problems))
"""


def test_the_runtimes_agent_given_such_a_schema_ends_the_plan_not_the_host() -> None:
    """The runtime's own ``agent`` serializes its schema in C (``runtime.canonical``), with the
    interpreter's lock held: given a schema of 40 levels shared twice (2**41 nodes walked),
    the host process of a 2 s plan never came back on main (killed here at the hang guard:
    its clock and the deadline's kill stopped with it). Now the call fails at once."""
    done = subprocess.run([sys.executable, "-c", AGENT], capture_output=True, text=True,
                          timeout=HANG_GUARD, env={**os.environ, "PYTHONPATH": ROOT},
                          check=True)  # fmt: skip
    assert "cannot be handed to the host" in done.stdout, done.stdout


# -- a callback's answer the host cannot read: a protocol break, never the word's own error ----


@pytest.mark.parametrize("handle", ['{"c":Infinity}', '{"c":[1]}', '{"o":-Infinity}'])
def test_a_malformed_handle_in_a_callbacks_answer_ends_the_run_as_a_protocol_break(
    probe_pool: Pool, handle: str
) -> None:
    """A handle's number that is not one (JSON's Infinity, which the standard library's
    parser reads, or a list) raised OverflowError or TypeError out of the host's decoder,
    which only a CodecError ends the run from: the host word got it as the callback's own
    error (one that guards a callback with ``except TypeError`` went on, and the run
    returned). Now the run ends as a protocol break, as for any answer it cannot read."""
    seen: list[str] = []

    def w(f: Any) -> str:
        try:
            f()
        except Exception as error:  # noqa: BLE001 - what a host word guards a callback with
            seen.append(type(error).__name__)
        return "done"

    probe = CHANNEL + (
        "import os, struct\n"
        "write_all(ep._writer, ['q', 9, R, 'call', [wid, [{'c': 1}], {'d': []}, None]])\n"
        "ask = ep._reader.read()\n"
        f"body = b'[\"a\",%d,true,{handle}]' % ask[1]\n"
        "os.write(ep._writer, struct.pack('>Id', len(body), time.monotonic()) + body)\n"
        "reply = ep._reader.read()\nresult = reply[3]\n"
    )
    box = probed(probe_pool, probe, Limits(seconds=10), w=w)
    with pytest.raises(PlanLimitError, match="broke the protocol"):
        box.run("result = w\n")
    assert seen == ["PlanLimitError"], seen
