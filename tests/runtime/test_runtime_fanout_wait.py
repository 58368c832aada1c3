"""How ``parallel`` runs its thunks: a task a pool thread, each taking the next thunk in turn.

A future for every thunk (1,000 of a rehearsal's workers) cost the host more than the thunk's
own bookkeeping (``runtime.spread``). What a fan-out returns or raises is unchanged, and a
cancelled run still ends a fan-out that waits on thunks never started.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from runtime import LLM, Budget, Ledger, Reply, Run, RunCancelled, Settings
from runtime.errors import SpendRefused

SETTINGS = Settings(default_price=0.0, concurrency=2)


def _run(client: Any) -> Run:
    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(None), settings=SETTINGS)
    return Run("fan-out", llm=llm, concurrency=2)


def _echo(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
    return Reply(messages[-1]["content"])


def test_a_fan_out_starts_one_task_a_pool_thread_not_one_a_thunk() -> None:
    run = _run(_echo)
    submitted = []
    pool = run.fan_out._pool
    real = pool.submit

    def counted(fn: Any, /, *args: Any) -> Any:
        submitted.append(fn)
        return real(fn, *args)

    pool.submit = counted  # type: ignore[method-assign]
    results = run.run_sync(lambda r: r.parallel([lambda i=i: r.agent(f"q{i}") for i in range(40)]))
    assert results == [f"q{i}" for i in range(40)]
    assert len(submitted) == 2  # the run's concurrency
    assert [r.status for r in run.threads] == ["done"] * 40


def test_a_thunk_that_fails_gives_none_and_its_event_the_others_their_results() -> None:
    run = _run(_echo)

    def plan(r: Run) -> Any:
        return r.parallel([lambda: r.agent("a"), lambda: 1 / 0, lambda: r.agent("c")])

    assert run.run_sync(plan) == ["a", None, "c"]
    [failed] = [e for e in run.events if e["kind"] == "thunk_failed"]
    assert failed["index"] == 1 and "ZeroDivisionError" in failed["error"]


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
