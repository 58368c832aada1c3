"""What the host holds for a plan under process isolation, and what it leaves behind.

A host word that calls plan functions back gathers their answers as decoded copies (in one
process they are one object): each large one is held to the run's budget while the host refers
to it (``queued.Queued.keep``). And a host that dies without its exit handlers leaves its
ready children's scratch directories behind: the next pool sweeps those of dead owners.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from planlang.errors import PlanLimitError
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

BIG = "big = [str(i) for i in range(200000)]\n"  # about 1.3 MB as JSON, far past HELD_MIN


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def _box(host: dict[str, Any]) -> Sandbox:
    return Sandbox(host=host, limits=Limits(seconds=120, memory_mb=256), isolation="process")


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("thunk", ["lambda: big", "lambda: same(big)"])
def test_answers_a_host_word_gathers_are_held_to_the_runs_budget(
    thunk: str, threaded: bool
) -> None:
    """60 answers of a large list: one object in one process, 60 copies here, unbounded on
    main (865 MB resident on a 256 MB limit). Now the run ends on its memory limit, and the
    host neither grew past it nor lost anything. ``same(big)``: a tail's answer, which the
    host copies itself. ``threaded``: called back from threads of the word's own (lanes)."""
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

    box = _box({"each": each_on_threads if threaded else each, "same": lambda value: value})
    with pytest.raises(PlanLimitError) as ended:
        box.run(BIG + f"result = each({thunk}, 60)\n")
    assert ended.value.kind == "memory"
    assert peak[0] < 500 * 2**20, f"the host grew by {peak[0] >> 20} MB"
    assert box.run("result = 1 + 1\n") == 2  # the host and its pool carry on


def test_answers_the_host_drops_are_not_held() -> None:
    """An answer the host word lets go of is released: 60 large answers, one at a time,
    end as they do in one process."""

    def each(f: Any, n: int) -> int:
        return sum(len(f()) for _ in range(n))

    assert _box({"each": each}).run(BIG + "result = each(lambda: big, 60)\n") == 60 * 200000


def test_parallel_answers_freed_between_rounds_are_not_held() -> None:
    """Rounds of a fan-out each gathering large answers: what a round's word returned and
    the host dropped counts no more, so many rounds pass as in one process."""

    def fan(thunks: Any) -> int:  # on threads of its own: the callbacks go on lanes
        with ThreadPoolExecutor(4) as threads:
            return sum(len(answer) for answer in threads.map(lambda thunk: thunk(), thunks))

    source = BIG + "total = 0\nfor i in range(15):\n    total += fan([lambda: big] * 4)\n"
    source += "result = total\n"
    assert _box({"fan": fan}).run(source) == 15 * 4 * 200000
