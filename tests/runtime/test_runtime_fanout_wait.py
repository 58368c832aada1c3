"""How ``parallel`` waits for its thunks: woken once, when the last is done or the first raised.

Waiting on each future in turn woke the plan's thread once a thunk (a context switch each, for
1,000 workers a rehearsal); the latch wakes it once. What a fan-out returns or raises is
unchanged, and a cancelled run still ends a fan-out that waits on thunks never started.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from runtime import LLM, Budget, Ledger, Reply, Run, RunCancelled, Settings
from runtime.errors import SpendRefused
from runtime.fanout import _Latch


def test_the_latch_wakes_only_once_every_thunk_is_done() -> None:
    futures: list[Future[Any]] = [Future() for _ in range(3)]
    latch = _Latch(futures)
    futures[2].set_result(2)
    futures[0].set_result(0)
    assert not latch._woken.is_set()
    futures[1].set_result(1)
    assert latch._woken.is_set()


def test_the_latch_wakes_at_the_first_thunk_that_raised() -> None:
    futures: list[Future[Any]] = [Future() for _ in range(3)]
    latch = _Latch(futures)
    futures[1].set_exception(SpendRefused("no money"))
    assert latch._woken.is_set()


def test_the_latch_counts_cancelled_and_already_done_futures() -> None:
    done: Future[Any] = Future()
    done.set_result(None)
    futures: list[Future[Any]] = [done, Future(), Future()]
    latch = _Latch(futures)
    futures[1].cancel()
    assert not latch._woken.is_set()
    futures[2].cancel()
    assert latch._woken.is_set()
    assert _Latch([])._woken.is_set()


SETTINGS = Settings(default_price=0.0, concurrency=2)


def _run(client: Any) -> Run:
    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(None), settings=SETTINGS)
    return Run("fan-out", llm=llm, concurrency=2)


def _echo(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
    return Reply(messages[-1]["content"])


def test_parallel_gives_its_results_in_order_and_raises_the_first_error_in_order() -> None:
    run = _run(_echo)
    results = run.run_sync(lambda r: r.parallel([lambda i=i: r.agent(f"q{i}") for i in range(9)]))
    assert results == [f"q{i}" for i in range(9)]

    def first(r: Run) -> None:
        time.sleep(0.05)
        raise SpendRefused("the first")

    def plan(r: Run) -> Any:
        return r.parallel([lambda: first(r), lambda: (_ for _ in ()).throw(SpendRefused("next"))])

    with pytest.raises(SpendRefused, match="the first"):
        _run(_echo).run_sync(plan)


def test_a_cancelled_run_ends_a_parallel_waiting_on_thunks_never_started() -> None:
    started, release = threading.Event(), threading.Event()

    def slow(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        started.set()
        release.wait(10)  # a hang guard only
        return Reply("late")

    run = _run(slow).start(lambda r: r.parallel([lambda: r.agent("q") for _ in range(20)]))
    assert started.wait(10)
    run.cancel("test")
    release.set()
    with pytest.raises(RunCancelled):
        run.wait(timeout=30)
