"""Process isolation: the same results and errors as in-process, callbacks into plan functions,
concurrency, and SECURITY.md's known limits, each a must-pass test here.

Every test that runs a plan here uses ``isolation="process"``. Durations are asserted only as
hang guards: a limit plus ``GRACE`` plus a generous margin, far below what the attack costs
in-process (31 s for the colliding set on a 2 s limit; forever for the aliased trees).
"""

from __future__ import annotations

import copy
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planlang
from planlang import HostObject, Limits, PlanLimitError, PlanRuntimeError, Sandbox
from planlang.isolation.parent import GRACE
from planlang.isolation.pool import Pool
from planlang.price import price
from planlang.strategies import DEFAULT_HOST_WORDS, fake_host, fake_values, plans

FAST = Limits(seconds=2, steps=2_000_000, size=1_000_000, memory_mb=256)
HANG_GUARD = 15.0  # seconds past limit + GRACE: only a hang (or the in-process cost) exceeds it


def isolated(host: dict[str, Any] | None = None, limits: Limits = FAST, **kw: Any) -> Sandbox:
    return Sandbox(host=host or {}, limits=limits, isolation="process", **kw)


def timed(fn: Callable[[], Any]) -> tuple[BaseException | None, float]:
    started = time.monotonic()
    try:
        fn()
    except BaseException as error:  # noqa: BLE001 - the verdict
        return error, time.monotonic() - started
    return None, time.monotonic() - started


# -- the same API, results and errors ----------------------------------------------------------


def test_numbers_json_lacks_cross_every_way_as_themselves() -> None:
    """nan and the infinities as host-word arguments (the scalar fast path), as host results
    (scalar and inside data), as callback arguments and results, in the plan's result, and as
    a limit: JSON has none of them, and orjson would write each as null."""
    inf = float("inf")
    seen: list[Any] = []

    def word(x: Any, *more: Any) -> Any:
        seen.append((x, *more))
        return x

    box = isolated({"word": word, "pair": lambda: {"lo": -inf, "hi": inf},
                    "twice": lambda f: f(inf)})  # fmt: skip
    result = box.run(
        "a = word(float('nan'), float('-inf'))\n"
        "result = [a, word(1e308 * 10), pair(), twice(lambda x: [x, -x]), 2.5]\n"
    )
    assert result[0] != result[0]  # nan, not None
    assert result[1:] == [inf, {"lo": -inf, "hi": inf}, [inf, -inf], 2.5]
    assert seen[0][0] != seen[0][0] and seen[0][1] == -inf and seen[1] == (inf,)
    with pytest.raises(ValueError, match="finite"):
        Limits(seconds=inf)  # no deadline is no hard limit: refused, in both modes


def test_results_and_host_values_cross_as_plain_data() -> None:
    inputs = {"files": ["a.py"], "cfg": {"n": 2}, "pair": (1, [2])}
    before = copy.deepcopy(inputs)
    box = isolated({"inputs": inputs, "agent": lambda p: {"text": p.upper(), "n": [1]}})
    result = box.run(
        "r = agent('hi')\nr['n'].append(2)\n"
        "result = [r, inputs['files'], inputs['pair'], {1, 2}, frozenset('a'), inputs['cfg']]\n"
    )
    assert result == [{"text": "HI", "n": [1, 2]}, ["a.py"], (1, [2]), {1, 2},
                      frozenset("a"), {"n": 2}]  # fmt: skip
    assert inputs == before


def test_errors_keep_their_kind_type_and_line() -> None:
    with pytest.raises(PlanRuntimeError) as caught:
        isolated().run("x = 1\ny = {}['missing']\n")
    assert caught.value.error_type == "KeyError" and caught.value.line == 2
    with pytest.raises(PlanLimitError) as limit:
        isolated(limits=Limits(steps=1000)).run("while True:\n    pass\n")
    assert limit.value.kind == "steps" and limit.value.line == 1
    with pytest.raises(planlang.PlanRefused):
        isolated().run("import os\n")


def test_host_objects_show_declared_names_only() -> None:
    class Repo:
        name = "demo"
        secret = "hunter2"

        def files(self) -> list[str]:
            return ["a.py"]

    box = isolated({"repo": HostObject(Repo(), methods=["files"], attributes=["name"])})
    assert box.run("result = [repo.name, repo.files()]\n") == ["demo", ["a.py"]]
    with pytest.raises(PlanRuntimeError) as caught:
        box.run("result = repo.secret\n")
    assert caught.value.error_type == "AttributeError"


def test_prints_reach_the_log_in_order() -> None:
    lines: list[str] = []
    isolated(log=lines.append).run("for i in range(3):\n    print('line', i)\n")
    assert lines == ["line 0", "line 1", "line 2"]


def test_host_errors_that_end_the_run_pass_through_as_themselves() -> None:
    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop("budget")

    with pytest.raises(Stop):
        isolated({"stop": stop}, passthrough=(Stop,)).run("stop()\n")


# -- callbacks and concurrency ---------------------------------------------------------------


def test_a_host_fan_out_calls_plan_lambdas_back_on_its_own_threads() -> None:
    """An embedder's fan-out word runs the plan's thunks on host threads; each thunk's host
    calls overlap in the host (16 in flight at once), and its result comes back as data."""
    in_flight = {"now": 0, "most": 0}
    lock = threading.Lock()
    gate = threading.Barrier(4, timeout=30)

    def agent(prompt: str) -> str:
        with lock:
            in_flight["now"] += 1
            in_flight["most"] = max(in_flight["most"], in_flight["now"])
        try:
            gate.wait()  # four calls must be in the host at the same time to get past this
        except threading.BrokenBarrierError:
            pass
        with lock:
            in_flight["now"] -= 1
        return prompt.upper()

    def fan_out(thunks: list[Callable[[], Any]]) -> list[Any]:
        results: list[Any] = [None] * len(thunks)

        def one(i: int) -> None:
            results[i] = thunks[i]()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(thunks))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    box = isolated({"agent": agent, "fan_out": fan_out}, limits=Limits(seconds=60))
    result = box.run("result = fan_out([lambda i=i: agent(f'p{i}') for i in range(16)])\n")
    assert result == [f"P{i}" for i in range(16)]
    assert in_flight["most"] >= 4


def test_a_callback_runs_under_the_plans_limits() -> None:
    def call(f: Callable[[], Any]) -> Any:
        return f()

    box = isolated({"call": call}, limits=Limits(steps=5000, seconds=10))
    with pytest.raises(PlanLimitError) as caught:
        box.run("def spin():\n    while True:\n        pass\nx = call(spin)\n")
    assert caught.value.kind == "steps"


def test_plan_functions_held_after_the_run_refuse_to_run() -> None:
    kept: list[Callable[[], Any]] = []
    isolated({"keep": kept.append}).run("def f():\n    return 1\nkeep(f)\n")
    with pytest.raises(PlanLimitError):
        kept[0]()


def test_the_runtime_fan_out_runs_thunks_in_the_child_and_prices_the_same() -> None:
    source = (
        "phase('scan')\n"
        "rs = parallel([lambda i=i: agent(f'look at {i}', label=f'w{i}') for i in range(6)])\n"
        "for i, r in stream([lambda: agent('again')]):\n    pass\n"
        "result = len(rs)\n"
    )
    inproc = price(source, seeds=2, isolation="inprocess")
    process = price(source, seeds=2, isolation="process")
    assert process.problems == inproc.problems == []
    assert process.total == inproc.total
    assert [r.result for r in process.rehearsals] == [6, 6]


# -- SECURITY.md's known limits: contained by the process boundary ----------------------------

P = 2**61 - 1
ALIASED_LISTS = "a = [0]\nb = [0]\nfor i in range(64):\n    a = [a, a]\n    b = [b, b]\n"
ALIASED_TUPLE = "t = (0,)\nfor i in range(64):\n    t = (t, t)\n"
KNOWN_LIMITS = {
    "hash-collision-set": f"s = set(range(0, 60000 * {P}, {P}))\n",
    "hash-collision-dict": f"d = dict.fromkeys(range(0, 60000 * {P}, {P}))\n",
    "equality-of-distinct-aliased-trees": ALIASED_LISTS + "same = a == b\n",
    "hash-of-an-aliased-tuple": ALIASED_TUPLE + "h = hash(t)\n",
    "aliased-tuple-as-a-dict-key": ALIASED_TUPLE + "d = {t: 1}\n",
    "print-flood": "while True:\n    print('x' * 100000)\n",
}


def make_host() -> tuple[dict[str, Any], dict[str, Any]]:
    inputs = {"files": ["a.py", "b.py"], "cfg": {"x": 1, "deep": [{"k": 1}]}}
    shared = [1, 2, 3]
    return {"inputs": inputs, "shared": shared}, {"inputs": inputs, "shared": shared}


# Each attack runs for minutes unchecked, so a run of it lasts its whole time limit plus GRACE:
# one second of limit proves the same as FAST's two, five times over.
KNOWN = Limits(seconds=1, steps=FAST.steps, size=FAST.size, memory_mb=FAST.memory_mb)


@pytest.mark.parametrize("name", list(KNOWN_LIMITS))
def test_a_known_limit_ends_within_the_time_limit_and_the_host_lives(name: str) -> None:
    host, values = make_host()
    before = copy.deepcopy(values)
    printed: list[str] = []
    box = isolated(host, KNOWN, log=printed.append)
    error, took = timed(lambda: box.run(KNOWN_LIMITS[name]))
    assert isinstance(error, PlanLimitError), repr(error)
    assert took < KNOWN.seconds + GRACE + HANG_GUARD, took
    assert values == before
    assert isolated().run("result = 1 + 1\n") == 2  # the host, and the pool, carry on


def test_a_host_word_blocked_past_the_deadline_is_left_behind() -> None:
    finished = threading.Event()

    def stuck() -> str:
        time.sleep(FAST.seconds + GRACE + 3)  # ignores current_meter(): a badly-behaved word
        finished.set()
        return "late"

    error, took = timed(lambda: isolated({"stuck": stuck}).run("result = stuck()\n"))
    assert isinstance(error, PlanLimitError) and error.kind == "seconds", repr(error)
    assert not finished.is_set(), "the run waited for the blocked host word"
    assert took < FAST.seconds + GRACE + HANG_GUARD


def test_one_c_call_past_the_memory_limit_is_refused_by_the_address_space_limit() -> None:
    """``[0] * 10**9`` is 8 GB in one C call, within ``size``: the sampled meter would only see
    it afterwards; RLIMIT_AS makes the allocation itself fail."""
    limits = Limits(seconds=10, memory_mb=64, size=10**10)
    error, _ = timed(lambda: isolated(limits=limits).run("x = [0] * 10 ** 9\n"))
    assert isinstance(error, PlanLimitError) and error.kind == "memory", repr(error)


def test_a_tuple_past_the_c_stack_hashed_on_a_host_thread_kills_only_the_child() -> None:
    """In one process this is SIGSEGV of the host: the plan function runs on a thread of the
    host's (its stack is the platform's), so planlang's deep stack cannot help."""

    def on_a_thread(f: Callable[[], Any]) -> Any:
        out: list[Any] = []

        def call() -> None:
            try:
                out.append(f())
            except Exception as error:  # noqa: BLE001 - the plan's process died under it
                out.append(repr(error))

        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
        return out[0] if out else None

    source = (
        "def deep():\n    t = ()\n    for i in range(3000):\n        for j in range(1000):\n"
        "            t = (t,)\n"
        "    return hash(t)\nresult = on_a_thread(deep)\n"
    )
    box = isolated({"on_a_thread": on_a_thread}, limits=Limits(seconds=30, steps=4_000_000))
    error, _ = timed(lambda: box.run(source))
    assert isinstance(error, PlanLimitError) and error.kind == "crash", repr(error)
    assert isolated().run("result = 'alive'\n") == "alive"


def _killed_mid_run(box: Sandbox, pool: Pool, started: threading.Event, plan: str
                    ) -> tuple[threading.Thread, list[BaseException]]:  # fmt: skip
    """Run ``plan`` on ``pool`` on a thread; once it has ``started``, SIGKILL its process from
    outside. The thread (to join) and what the run raised."""
    box._pool = pool  # type: ignore[attr-defined]
    errors: list[BaseException] = []

    def run() -> None:
        try:
            box.run(plan)
        except BaseException as error:  # noqa: BLE001 - the verdict
            errors.append(error)

    runner = threading.Thread(target=run)
    runner.start()
    assert started.wait(30)
    assert pool.last is not None
    os.kill(pool.last.pid, signal.SIGKILL)
    return runner, errors


def test_a_child_killed_from_outside_ends_the_plan_and_is_replaced() -> None:
    pool = Pool(1)
    try:
        started = threading.Event()
        box = isolated({"started": started.set}, limits=Limits(seconds=60, steps=10**9))
        runner, errors = _killed_mid_run(box, pool, started, "started()\nwhile True:\n    pass\n")
        runner.join(30)
        assert len(errors) == 1 and isinstance(errors[0], PlanLimitError), errors
        assert errors[0].kind == "killed" and "SIGKILL" in str(errors[0])
        next_box = isolated()
        next_box._pool = pool  # type: ignore[attr-defined]
        assert next_box.run("result = 41 + 1\n") == 42
        assert pool.started >= 2  # the killed child was replaced, not reused
    finally:
        pool.close()


def test_a_child_killed_while_its_host_word_blocks_ends_the_plan_at_once() -> None:
    """The plan's own host call blocks in the host (far past the time limit) when its process
    is killed from outside: the run ends at once as ``killed``, not at its time limit as
    ``seconds`` (nobody read the pipe that would have told it)."""
    pool = Pool(1)
    release = threading.Event()
    started = threading.Event()

    def blocks() -> None:
        started.set()
        release.wait(60)

    try:
        box = isolated({"blocks": blocks}, limits=Limits(seconds=30))
        runner, errors = _killed_mid_run(box, pool, started, "blocks()\nresult = 1\n")
        runner.join(20)  # the time limit is 30 s: a run that waited for it is still going
        assert not runner.is_alive(), "the run waited for its time limit"
        assert len(errors) == 1 and isinstance(errors[0], PlanLimitError), errors
        assert errors[0].kind == "killed", errors[0]
    finally:
        release.set()
        pool.close()


# -- the same outcome in both modes, for generated plans ----------------------------------------

SMALL = Limits(steps=20_000, seconds=10.0, depth=30, size=20_000, int_bits=4_096)
VALUES = {"inputs": {"type": "object", "properties": {
    "files": {"type": "array", "items": {"type": "string"}},
    "budget": {"type": "integer", "minimum": 0, "maximum": 50}},
    "required": ["files", "budget"]}}  # fmt: skip


def _outcome(box: Sandbox, source: str) -> tuple[str, Any]:
    try:
        return "result", box.run(source)
    except PlanLimitError as error:
        return "limit", error.kind
    except PlanRuntimeError as error:
        return "runtime", error.error_type


@settings(max_examples=40)
@given(plans(DEFAULT_HOST_WORDS, values=VALUES), st.integers(0, 2**16))
def test_process_and_inprocess_give_the_same_outcome(source: str, seed: int) -> None:
    host = {**fake_host(DEFAULT_HOST_WORDS, seed), **fake_values(VALUES, seed)}
    inproc = _outcome(Sandbox(host=host, limits=SMALL, isolation="inprocess"), source)
    host = {**fake_host(DEFAULT_HOST_WORDS, seed), **fake_values(VALUES, seed)}
    process = _outcome(Sandbox(host=host, limits=SMALL, isolation="process"), source)
    if inproc[0] == "limit" and inproc[1] in ("seconds", "memory"):
        assert process[0] == "limit"  # which of two limits a machine meets first may differ
    else:
        assert process == inproc


def test_the_default_limits_are_known_in_the_child_and_others_still_apply() -> None:
    """The child makes ``Limits()`` before it is ready and uses it when the host sends the
    default (compared as sent); any other limits are read from the run, as before."""
    from planlang.isolation import child, payload
    from planlang.isolation.frames import dumps, loads

    assert loads(dumps(payload.limits_payload(Limits()))) == child.default_limits_sent()
    loop = "n = 0\nfor i in range(2000):\n    n = n + 1\nresult = n\n"
    assert Sandbox(isolation="process").run(loop) == 2000
    with pytest.raises(PlanLimitError) as caught:
        isolated(limits=Limits(steps=500)).run(loop)
    assert caught.value.kind == "steps"


def test_host_values_that_share_parts_each_cross_as_themselves() -> None:
    """Each host value is encoded on its own, its shared parts sent once and referred to by
    number within it: each is decoded on its own (one decoder for all of them read the second
    value's references as the first's parts)."""
    shared, other = ["x", 1], ["y", 2]
    host = {"a": [shared, shared, [shared]], "b": [other, other, [other]]}
    assert isolated(host).run("result = [a, b]\n") == [
        [["x", 1], ["x", 1], [["x", 1]]],
        [["y", 2], ["y", 2], [["y", 2]]],
    ]
