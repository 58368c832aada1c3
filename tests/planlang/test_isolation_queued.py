"""The large callback answers the host keeps count against the run's budget (``queued``), and
keeping them costs amortized constant work each, not a walk of all of them per request."""

from __future__ import annotations

import pytest

from planlang.isolation.frames import FrameTooCostly
from planlang.isolation.queued import Queued

BUDGET = 2**30


def test_kept_answers_are_swept_amortized_not_at_every_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fan-out of n callbacks that each call a host word and answer a large value: every
    request served sweeps, and a sweep looks at every kept answer. At one sweep a request
    that was n² work (2,000 callbacks: 100 ms of 325 here)."""
    sweeps = []
    original = Queued._sweep

    def counted(self: Queued) -> None:
        sweeps.append(len(self.kept))
        original(self)

    monkeypatch.setattr(Queued, "_sweep", counted)
    held = Queued()
    answers = []  # the fan-out word's results: every answer still referred to
    for n in range(2000):
        request = [n]
        held.count(request, 100, BUDGET)  # a large request, served...
        answer = "x" * 2048 + str(n)
        answers.append(answer)
        held.keep(answer, 2200, BUDGET)  # ...whose callback answered a large value
        held.take(request)
    assert len(held.kept) == 2000  # each still counted: the host refers to it
    assert len(sweeps) <= 60  # a few dozen, not one a request
    assert sum(sweeps) <= 8 * 2000  # and what they looked at is linear in the answers


def test_large_answers_that_died_are_released_within_a_few_requests() -> None:
    """REVIEW12: a fan-out of 8 answers of 1.3 MB, then small host calls. Swept only as the
    kept answers doubled, they stayed for the rest of the run (host RSS 156 MB up, 61 MB at
    one sweep a request)."""
    held = Queued()
    size = 1_300_000
    answers = ["a" * size + str(n) for n in range(8)]
    for answer in answers:
        held.keep(answer, size, BUDGET)
    request = ["being served"]  # served while the fan-out's answers are still its result
    held.count(request, 100, BUDGET)
    held.take(request)
    assert len(held.kept) == 8
    del answers, answer  # the fan-out word returned: nothing of the host's refers to them
    for n in range(2):
        request = [n]
        held.count(request, 100, BUDGET)
        held.take(request)
    assert held.kept == {}
    assert held.total == 0


def test_answers_nothing_refers_to_are_still_released() -> None:
    held = Queued()
    for n in range(40):
        held.keep("y" * 2048 + str(n), 2200, BUDGET)  # dropped at once: only kept holds it
    for n in range(10):  # a quarter as many requests served as answers kept
        request = [n]
        held.count(request, 10, BUDGET)
        held.take(request)
    assert held.kept == {}
    assert held.total == 0


def test_a_budget_passed_is_refused_only_after_a_sweep() -> None:
    held = Queued()
    size = 4096  # not a constant the compiler folds (its code would refer to it)
    held.keep("z" * size, 600, 1000)  # nothing else refers to it: a sweep would release it
    held.keep("w" * size, 600, 1000)  # over the budget only if the first were still counted
    live = "v" * size
    held.keep(live, 300, 1000)
    with pytest.raises(FrameTooCostly):
        held.keep("u" * size, 1000, 1000)  # past it with everything released
    assert id(live) in held.kept
