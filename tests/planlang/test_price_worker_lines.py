"""A failing worker is reported at the plan line that asked for it, in both modes.

Under process isolation the plan's frames are in its own process, so the host takes the line
the plan's process sent with the call (the host thread's own stack is not walked for them).
"""

from __future__ import annotations

import pytest

from planlang.price import price
from runtime import Settings

# a schema no answer can satisfy: the stand-in refuses it, so each worker fails
PLAN = """
BAD = {"type": "integer", "minimum": 5, "maximum": 1}
first = agent("alone", schema=BAD)
many = parallel([lambda i=i: agent(f"part {i}",
                                   schema=BAD) for i in range(3)])
result = [first, many]
"""


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_failing_workers_are_reported_at_their_plan_lines(isolation: str) -> None:
    report = price(PLAN, seeds=1, settings=Settings(max_agents=10), isolation=isolation)
    lines = sorted({problem.line for problem in report.problems if problem.kind == "worker"})
    assert lines == [3, 4]  # the thunk's call starts on line 4
    assert report.rehearsals[0].result == [None, [None, None, None]]
