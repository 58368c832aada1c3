"""No combination of the fan-out words may deadlock the pool (issue 13, item 20).

It is an error for streams consumed inside ``parallel`` thunks to leave the plan waiting for
ever; a combination that cannot make progress ends with an error instead.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from runtime import LLM, Budget, Ledger, Reply, Run, RunCancelled, Settings

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


def test_streams_that_wait_on_each_other_end_instead_of_hanging() -> None:
    holder: dict[str, Any] = {}

    def plan(r: Run) -> list[Any]:
        holder["a"] = iter(r.stream([lambda: next(holder["b"])]))
        holder["b"] = iter(r.stream([lambda: next(holder["a"])]))
        return r.parallel([lambda: next(holder["a"]), lambda: next(holder["b"])])

    run = new_run().start(plan)
    finish(run)
    assert run.status == "completed"
    failures = [e["error"] for e in run.events if e["kind"] == "thunk_failed"]
    assert any("generator already executing" in f for f in failures)


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
