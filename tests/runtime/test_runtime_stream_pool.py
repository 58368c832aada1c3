"""No combination of the fan-out words may deadlock the pool (issue 13, item 20).

It is an error for streams consumed inside ``parallel`` thunks to leave the plan waiting for
ever; a combination that cannot make progress ends with an error instead.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from runtime import LLM, Budget, FanOutDeadlock, Ledger, Reply, Run, RunCancelled, Settings

SETTINGS = Settings(default_price=0.0, concurrency=4)


def echo(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
    return Reply(messages[-1]["content"])


def new_run() -> Run:
    llm = LLM(Ledger(":memory:"), client=echo, budget=Budget(None), settings=SETTINGS)
    return Run("streams", llm=llm, concurrency=4)


def finish(run: Run) -> Any:
    """Wait with a hang guard: a deadlock fails the test instead of hanging the suite."""
    return run.wait(timeout=120)


def test_128_streams_each_consumed_by_a_parallel_thunk_finish() -> None:
    def plan(r: Run) -> list[Any]:
        streams = [iter(r.stream([lambda i=i: r.agent(f"q {i}")])) for i in range(128)]
        return r.parallel([lambda s=s: next(s) for s in streams])

    run = new_run().start(plan)
    assert finish(run) == [(0, f"q {i}") for i in range(128)]
    assert run.status == "completed"


def test_a_stream_drained_inside_parallel_thunks_yields_everything() -> None:
    def plan(r: Run) -> list[Any]:
        streams = [iter(r.stream([lambda i=i, j=j: r.agent(f"{i}.{j}") for j in range(3)]))
                   for i in range(16)]  # fmt: skip
        return r.parallel([lambda s=s: sorted(v for _, v in s) for s in streams])

    assert finish(new_run().start(plan)) == [[f"{i}.{j}" for j in range(3)] for i in range(16)]


def test_streams_whose_thunks_take_from_each_other_end_the_run_with_fan_out_deadlock() -> None:
    holder: dict[str, Any] = {}

    def plan(r: Run) -> list[Any]:
        holder["a"] = iter(r.stream([lambda: next(holder["b"])]))
        holder["b"] = iter(r.stream([lambda: next(holder["a"])]))
        return r.parallel([lambda: next(holder["a"]), lambda: next(holder["b"])])

    run = new_run().start(plan)
    with pytest.raises(FanOutDeadlock, match="take from each other"):
        finish(run)
    assert run.status == "failed"
    assert not [e for e in run.events if e["kind"] == "thunk_failed"]


@pytest.mark.parametrize("consumer", ["plan", "parallel", "loop"])
def test_a_stream_advanced_from_its_own_thunk_ends_the_run(consumer: str) -> None:
    holder: dict[str, Any] = {}

    def plan(r: Run) -> Any:
        holder["s"] = s = iter(r.stream([lambda: r.agent("a"), lambda: next(holder["s"])]))
        if consumer == "plan":
            return next(s), next(s)
        if consumer == "parallel":
            return r.parallel([lambda: list(s)])
        return [value for value in s]

    run = new_run().start(plan)
    with pytest.raises(FanOutDeadlock, match="own thunks take from it"):
        finish(run)


def test_one_stream_taken_from_by_two_parallel_thunks_shares_its_items() -> None:
    def plan(r: Run) -> list[Any]:
        s = iter(r.stream([lambda i=i: r.agent(f"q {i}") for i in range(12)]))
        return r.parallel([lambda: list(s), lambda: list(s), lambda: next(s, None)])

    first, second, third = finish(new_run().start(plan))
    taken = first + second + ([third] if third is not None else [])
    assert sorted(taken) == sorted((i, f"q {i}") for i in range(12))


def test_a_stream_ended_by_a_run_error_raises_it_again_and_an_exhausted_one_stops() -> None:
    def plan(r: Run) -> Any:
        s = iter(r.stream([lambda: r.agent("only")]))
        return next(s), next(s, "exhausted"), list(s)

    assert finish(new_run().start(plan)) == ((0, "only"), "exhausted", [])


def test_a_check_that_takes_from_a_stream_does_not_hold_the_only_agent_slot() -> None:
    llm = LLM(Ledger(":memory:"), client=echo, budget=Budget(None), settings=SETTINGS)
    run = Run("one slot", llm=llm, concurrency=1)

    def plan(r: Run) -> Any:
        s = iter(r.stream([lambda: r.agent("inner")]))
        return r.agent("outer", check=lambda answer: None if next(s) else "no")

    assert finish(run.start(plan)) == "outer"


def test_a_plan_thread_holding_a_stream_runs_its_thunks_when_the_pool_waits_on_it() -> None:
    """Both pool threads wait for their turn at the stream the plan is advancing, so no pool
    thread is left to run its queued thunks: the plan's thread runs them itself."""
    llm = LLM(Ledger(":memory:"), client=echo, budget=Budget(None), settings=SETTINGS)
    run = Run("two threads", llm=llm, concurrency=2)
    busy = threading.Semaphore(0)

    def plan(r: Run) -> Any:
        source = r.stream([lambda i=i: r.agent(f"s {i}") for i in range(4)])
        taking = iter(source)

        def taker() -> Any:
            busy.release()
            while source._owner is None:  # set-up only: wait until the plan holds its turn
                time.sleep(0.001)
            return next(taking)

        takers = r.stream([])
        takers_iter = iter(takers)
        takers.add(taker)
        takers.add(taker)
        busy.acquire()
        busy.acquire()  # both pool threads are busy: the stream's thunks queue behind them
        first = next(taking)
        rest = list(taking)
        taken = [value for _, value in takers_iter]
        return [first, *rest, *[value for value in taken if value is not None]]

    assert sorted(finish(run.start(plan))) == [(i, f"s {i}") for i in range(4)]


def test_a_cancelled_run_ends_a_consumer_waiting_in_a_worker() -> None:
    started = threading.Event()
    release = threading.Event()

    def slow() -> Any:
        started.set()
        release.wait(60)
        return 1

    def plan(r: Run) -> list[Any]:
        s = iter(r.stream([slow]))
        return r.parallel([lambda: next(s)])

    run = new_run().start(plan)
    assert started.wait(60)
    run.cancel("test")
    release.set()
    with pytest.raises(RunCancelled):
        finish(run)


def test_an_item_that_ends_the_run_leaves_the_streams_other_items_unstarted() -> None:
    """A RunError from one item ends the run: the items not started never start, though no
    one takes from the stream any more (the plan gone at its limit). Each ran to raise it
    again before (red team 21: 600,000 held a plan 17 s past its 5 s limit)."""
    started: list[int] = []
    raised = threading.Event()
    lock = threading.Lock()

    def item(i: int) -> Any:
        with lock:
            started.append(i)
        if i == 1:
            raised.wait(30)
            raise RunCancelled("the plan ended")
        if i > 1:  # none is over before the error: at most the pool's width start before it
            raised.wait(30)
        time.sleep(0.001)
        return i

    def plan(r: Run) -> int:
        taken = iter(r.stream([lambda i=i: item(i) for i in range(50_000)]))
        next(taken)  # then it takes no more, as a plan that ended at its limit
        raised.set()
        deadline = time.monotonic() + 2  # items started after the error, in 2 s at most
        while time.monotonic() < deadline:
            time.sleep(0.05)
        return len(started)

    run = new_run().start(plan)
    seen = finish(run)
    assert seen < 200, f"{seen} items started; the error came at about the fifth"


def test_a_long_stream_runs_on_at_most_the_pools_width_of_tasks(monkeypatch) -> None:
    """A pool task (and a future) per item made 600,000 stream items host work past any
    clock: 18 s for a plan of 2 s in one process. The items now wait in the stream, taken by at
    most ``concurrency`` runners; every item still runs and is yielded once, added ones too."""
    from runtime.fanout import FanOut

    started: list[Any] = []
    real_start = FanOut.start

    def counting_start(self: FanOut, fn: Any, *args: Any) -> Any:
        started.append(fn)
        return real_start(self, fn, *args)

    monkeypatch.setattr(FanOut, "start", counting_start)

    def plan(r: Run) -> list[int]:
        s = r.stream([lambda i=i: i for i in range(20_000)])
        seen = []
        for index, value in s:
            seen.append(value)
            if index < 20_000 and index % 5_000 == 0:  # more work while iterating
                s.add(lambda index=index: -index - 1)
        return sorted(seen)

    got = finish(new_run().start(plan))
    assert got == sorted(list(range(20_000)) + [-1, -5_001, -10_001, -15_001])
    # the initial items start 4 runners; an added item starts one only when fewer are busy
    assert len(started) <= 4 * 5, len(started)


def test_an_item_added_after_the_runners_ended_still_runs() -> None:
    """A runner stops counting itself under the lock that found the stream empty: an item
    added just then starts a runner of its own instead of waiting for ever."""

    def plan(r: Run) -> list[int]:
        s = r.stream([lambda: 0])
        got = []
        for index, value in s:
            got.append(value)
            if index < 200:
                time.sleep(0.001 * (index % 3))  # the runner may or may not have ended
                s.add(lambda index=index: index + 1)
        return got

    assert finish(new_run().start(plan)) == list(range(201))
