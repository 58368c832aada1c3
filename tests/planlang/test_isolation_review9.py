"""Session 9's review of the late-answer check (REDTEAM9): each test failed on main (ddd520a).

- in a plan's process, a plan that ended well inside its time limit was refused with
  ``seconds`` when its answer reached the host after the deadline: the time to encode, send
  and read its result counted against the plan, which in one process it does not (a result
  of 100,000 small dicts took 1.4 s more to arrive than the plan took to make it, here).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from planlang.isolation import parent
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits


def test_a_plan_that_ended_in_time_keeps_its_result_when_its_answer_is_read_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host reads the answer only after the deadline (within its grace), as a large
    result's encoding or a loaded machine makes it; the plan itself ended at once."""
    box = Sandbox(limits=Limits(seconds=1), isolation="process")
    assert box.run("result = 0\n") == 0  # a warm pool
    real_run = parent._Session.run

    def run(self: Any, checked: Any, code_sent: bool = False) -> Any:
        request = self.endpoint.request

        def read_late(*args: Any, **keywords: Any) -> Any:
            answer = request(*args, **keywords)
            while time.monotonic() <= self.meter.deadline:
                time.sleep(0.05)
            return answer

        self.endpoint.request = read_late
        return real_run(self, checked, code_sent)

    monkeypatch.setattr(parent._Session, "run", run)
    assert box.run("result = 1\n") == 1
