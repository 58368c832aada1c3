"""Rehearsals of one plan at once (process isolation): the same report as one after another."""

from __future__ import annotations

import importlib
import json
import threading
from typing import Any

import pytest

import planlang.rehearse as rehearse_module
from planlang.price import price
from runtime import Settings

price_module = importlib.import_module("planlang.price")  # planlang.price is also the function

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 2},
                   "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["n", "tags"],
}  # fmt: skip

# Answer-dependent: how many workers the second phase asks for, and whether it divides by 0.
PLAN = f"""
S = {json.dumps(SCHEMA)}
phase("scan")
scans = parallel([lambda i=i: agent(f"scan {{i}}", schema=S, model="scan") for i in range(12)])
phase("check")
more = sum(s["n"] for s in scans if s)
checks = parallel([lambda i=i: agent(f"check {{i}}", schema=S, model="check")
                   for i in range(more)])
result = 100 // scans[0]["n"]
"""

SETTINGS = Settings(
    roles={"scan": {"model": "small", "price": 0.01}, "check": {"model": "big", "price": 0.1}},
    max_agents=200,
)
SEEDS = (5, 0, 3, 1, 4, 2)  # not sorted: the report keeps the order given


def _noting_threads(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names of the threads rehearsals run on, from now on."""
    threads: set[str] = set()
    real = rehearse_module.rehearse

    def noted(*args: Any, **kwargs: Any) -> Any:
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(rehearse_module, "rehearse", noted)
    return threads


def _priced(monkeypatch: pytest.MonkeyPatch, at_once: int) -> tuple[Any, set[str]]:
    """The report with ``at_once`` rehearsals at a time, and the threads they ran on."""
    monkeypatch.setattr(price_module, "PARALLEL_REHEARSALS", at_once)
    monkeypatch.setattr(price_module, "REHEARSAL_HOSTS", 0)  # here only: test_rehearsal_hosts
    threads = _noting_threads(monkeypatch)
    report = price(PLAN, seeds=SEEDS, settings=SETTINGS, isolation="process")
    return report, threads


def test_rehearsals_at_once_give_the_report_of_rehearsals_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parallel, parallel_threads = _priced(monkeypatch, 2)
    sequential, sequential_threads = _priced(monkeypatch, 1)
    assert len(parallel_threads) == 2 and all(
        name.startswith("planlang-rehearsal") for name in parallel_threads
    )  # they did run side by side
    assert len(sequential_threads) == 1
    assert parallel.to_dict() == sequential.to_dict()
    assert [r.seed for r in parallel.rehearsals] == list(SEEDS)
    assert [(r.result, r.accounting, r.problems, r.wall_seconds) for r in parallel.rehearsals] == [
        (r.result, r.accounting, r.problems, r.wall_seconds) for r in sequential.rehearsals
    ]
    calls = parallel.phases["check"]["calls"]
    assert calls.min < calls.max  # the seeds differ, so an order mixed up would show


def test_a_rehearsal_that_crashes_is_reported_with_its_seeds_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report, _ = _priced(monkeypatch, 2)
    crashed = [r.seed for r in report.rehearsals if r.problems]
    assert crashed and len(crashed) < len(SEEDS)  # some seeds answer n=0, some do not
    (problem,) = report.problems
    assert problem.kind == "crash" and "ZeroDivisionError" in problem.message
    assert problem.line == 9
    assert problem.seeds == tuple(crashed)
    assert not report.ok


def test_an_error_of_a_rehearsal_ends_the_pricing_as_before() -> None:
    def broken_host(run: Any) -> dict[str, Any]:
        raise LookupError("no such corpus")

    with pytest.raises(LookupError, match="no such corpus"):
        price(PLAN, seeds=3, settings=SETTINGS, host=broken_host, isolation="process")


def test_in_one_process_rehearsals_run_one_after_another(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = _noting_threads(monkeypatch)
    price(PLAN, seeds=3, settings=SETTINGS, isolation="inprocess")
    assert threads == {threading.current_thread().name}
