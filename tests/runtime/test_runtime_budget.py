"""The budget: reserve, settle, wait at the cap, wake on raise_to, never bill twice."""

from __future__ import annotations

import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Budget, RunCancelled


def test_admit_settle_and_release(make_budget) -> None:
    budget = make_budget(1.0)
    first = budget.admit(0.4)
    second = budget.admit(0.6)
    assert budget.snapshot() == (0.0, 1.0, 1.0)
    budget.settle(first, 0.3)
    budget.release(second)
    assert budget.snapshot() == (0.3, 0.0, 1.0)
    with pytest.raises(ValueError, match="already settled"):
        budget.settle(first, 0.3)
    assert budget.spent == 0.3


def test_exact_sums_fit_the_cap(make_budget) -> None:
    budget = make_budget(5.0)
    for _ in range(25):
        budget.settle(budget.admit(0.2), 0.2)
    assert budget.spent == 5.0  # 25 x 0.2 is exactly the cap, not a hair over


def test_waits_at_the_cap_until_raised(make_budget) -> None:
    budget = make_budget(1.0)
    budget.settle(budget.admit(1.0), 1.0)
    waited = threading.Event()
    admitted: list[float] = []

    def worker() -> None:
        admitted.append(budget.admit(0.5, on_wait=waited.set).amount)

    thread = threading.Thread(target=worker)
    thread.start()
    assert waited.wait(5)
    while budget.paused == 0:
        threading.Event().wait(0.001)
    assert admitted == [] and budget.paused == 1
    budget.raise_to(2.0)
    thread.join(5)
    assert admitted == [0.5] and budget.paused == 0


def test_a_stop_condition_ends_the_wait(make_budget) -> None:
    budget = make_budget(0.0)
    stop = threading.Event()
    outcome: list[BaseException] = []

    def worker() -> None:
        try:
            budget.admit(0.1, stop=stop.is_set)
        except RunCancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    while budget.paused == 0:
        threading.Event().wait(0.001)
    stop.set()
    budget.wake()
    thread.join(5)
    assert len(outcome) == 1 and budget.reserved == 0.0


def test_unlimited_and_bad_amounts(make_budget) -> None:
    budget = make_budget(None)
    budget.settle(budget.admit(1e6), 1e6)
    assert budget.cap is None and budget.spent == 1e6
    with pytest.raises(ValueError, match="negative"):
        budget.admit(-1.0)


@settings(max_examples=60)
@given(
    cap_units=st.integers(min_value=1, max_value=50),
    jobs=st.lists(
        st.tuples(st.integers(1, 10), st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=40
    ),
    threads=st.integers(1, 8),
    seed=st.integers(0, 2**16),
)
def test_property_spent_plus_reserved_never_passes_the_cap(
    cap_units: int, jobs: list[tuple[int, float, bool]], threads: int, seed: int
) -> None:
    """Random costs, failures and concurrency; a person raises the cap whenever every worker
    is paused. The cap always holds and nothing is billed twice."""
    biggest = max(cost for cost, _, _ in jobs) / 10
    budget = Budget(max(cap_units / 10, biggest))  # every single call fits the cap
    rng = random.Random(seed)
    lock = threading.Lock()
    billed: list[float] = []
    violations: list[tuple[float, float, float | None]] = []
    queue = list(enumerate(jobs))
    active = [threads]

    def check() -> None:
        spent, reserved, now_cap = budget.snapshot()
        if now_cap is not None and spent + reserved > now_cap + 1e-9:
            violations.append((spent, reserved, now_cap))

    def worker(delay: float) -> None:
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    _, (cost_units, fraction, fails) = queue.pop()
                cost = cost_units / 10
                reservation = budget.admit(cost)
                check()
                if delay:
                    threading.Event().wait(delay)
                actual = 0.0 if fails else round(cost * fraction, 6)
                budget.settle(reservation, actual)
                with lock:
                    billed.append(actual)
                check()
                try:
                    budget.settle(reservation, actual)  # a second bill must be refused
                except ValueError:
                    pass
                else:  # pragma: no cover - reported below
                    violations.append((-1.0, -1.0, None))
        finally:
            with lock:
                active[0] -= 1

    pool = [
        threading.Thread(target=worker, args=(rng.choice([0.0, 0.0002]),)) for _ in range(threads)
    ]
    for t in pool:
        t.start()
    while any(t.is_alive() for t in pool):
        with lock:
            stuck = active[0] > 0 and budget.paused >= active[0]
        if stuck:  # everyone waits at the cap: the person raises it
            budget.raise_to(budget.cap + biggest)  # type: ignore[operator]
        threading.Event().wait(0.0002)
    assert violations == []
    assert len(billed) == len(jobs)
    assert budget.reserved == 0.0
    assert budget.spent == pytest.approx(sum(billed), abs=1e-6)
