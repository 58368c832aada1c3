"""Red team 11: the host of isolated plans, attacked through the embedding API and from a plan
process the language layer no longer holds (``probe_prelude``). Each case failed on main
(d2c4927) before its fix; deadlines here are hang guards only, never the thing measured.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from planlang.errors import PlanLimitError
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HANG_GUARD = 120.0  # seconds: only a hang takes this long


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


# -- answers a host word gathers, each below the size the held budget counted ----------------

MEDIUM = "big = 'x' * 60000\n"  # 60 KB as JSON: below the 64 KiB a held answer had to pass


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("thunk", ["lambda: big", "lambda: same(big)", "lambda: [big, 1]"])
def test_many_medium_answers_a_host_word_gathers_are_held_to_the_runs_budget(
    thunk: str, threaded: bool
) -> None:
    """12,000 answers of 60 KB: one object in one process, 12,000 copies in the host. Only
    answers past 64 KiB were counted, so on main the host grew by about 690 MB on a plan of
    256 MB and the run returned. Now it ends on its memory limit, the host within it."""
    peak = [0]
    start = _resident()

    def each(f: Any, n: int) -> int:
        out = []
        for _ in range(n):
            out.append(f())
            peak[0] = max(peak[0], _resident() - start)
        return len(out)

    def each_on_threads(f: Any, n: int) -> int:  # the callbacks go on lanes
        with ThreadPoolExecutor(4) as threads:
            return each(lambda: threads.submit(f).result(), n)

    box = Sandbox(host={"each": each_on_threads if threaded else each, "same": lambda v: v},
                  limits=Limits(seconds=120, memory_mb=256), isolation="process")  # fmt: skip
    with pytest.raises(PlanLimitError) as ended:
        box.run(MEDIUM + f"result = each({thunk}, 12000)\n")
    assert ended.value.kind == "memory"
    assert peak[0] < 500 * 2**20, f"the host grew by {peak[0] >> 20} MB"
    assert box.run("result = 1 + 1\n") == 2  # the host and its pool carry on


def test_medium_answers_the_host_drops_are_not_held() -> None:
    """The same 12,000 answers, each let go of at once: as in one process."""

    def each(f: Any, n: int) -> int:
        return sum(len(f()) for _ in range(n))

    box = Sandbox(host={"each": each}, limits=Limits(seconds=120, memory_mb=256),
                  isolation="process")  # fmt: skip
    assert box.run(MEDIUM + "result = each(lambda: big, 12000)\n") == 12000 * 60000
