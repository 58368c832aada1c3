"""Red team of process isolation (session 10): what lands on the HOST when a plan (or a plan's
process that runs code the attacker controls) goes for the host's own resources.

A compromised child is driven through the test-only probe (``Pool(probes=True)``,
``planlang.isolation.testing``): raw Python in the plan's place. Each test failed on 9f407f7.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from probe_prelude import CHANNEL, probed

from planlang.cli_support import EXIT_REFUSED
from planlang.errors import PlanLimitError, PlanRuntimeError
from planlang.isolation.lanes import Callback
from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def pool(probe_pool: Pool) -> Pool:
    return probe_pool  # the session's (conftest.py)


# -- REDTEAM10 1: plan functions a child names are kept by the host until the run ends ---------


def test_plan_functions_a_child_names_are_not_kept_by_the_host(pool: Pool) -> None:
    """Each frame is held to the plan's memory limit as it is decoded, but every plan function
    it named stayed in the run's table of callbacks until the run ended: a child naming 100,000
    new ones a frame made the host hold 1,000,000 (about 200 MB) in ten frames on a plan of
    ``memory_mb=64``, without end on a longer time limit. The host keeps only those a host word
    still holds."""
    width, frames = 50_000, 6
    probe = CHANNEL + (
        f"for k in range({frames}):\n"
        f"    args = [[{{'c': k * {width} + i}} for i in range(1, {width + 1})]]\n"
        "    write_all(ep._writer, ['q', 100 + k, R, 'call', [wid, args, {'d': []}, None]])\n"
        "    reply = ep._reader.read()\n"
        "result = reply[2:]\n"
    )
    alive: list[int] = []

    def w(callbacks: list[object]) -> int:
        gc.collect()
        alive.append(sum(1 for o in gc.get_objects() if type(o) is Callback))
        return len(callbacks)

    box = probed(pool, probe, Limits(seconds=60, memory_mb=64), w=w)
    assert box.run("result = w\n") == [True, width]
    assert len(alive) == frames
    assert max(alive) <= 2 * width  # the call's own, not every frame's before it


# -- REDTEAM10 2: host words that block strand the host's threads for every later run ---------


@pytest.fixture
def release() -> Iterator[threading.Event]:
    made = threading.Event()
    yield made
    made.set()


def test_host_words_that_block_past_their_runs_do_not_stop_later_runs(
    release: threading.Event,
) -> None:
    """A host word that blocks past the deadline holds the host thread serving its plan (host
    code cannot be interrupted; its run ends at the limit plus grace all the same). Those
    threads were a pool of 256: a plan that makes a host word block (a URL of a server that
    never answers, say) stranded one each run, and after 256 such runs every isolated plan that
    called any host word ended at its time limit, the host's other runs included."""
    stranded = 300
    runs = Pool(2)

    def blocked(_: int) -> str:
        box = Sandbox(host={"block": release.wait}, limits=Limits(seconds=0.2),
                      isolation="process")  # fmt: skip
        box._pool = runs  # type: ignore[attr-defined]
        with pytest.raises(PlanLimitError) as ended:
            box.run("block()\nresult = 1\n")
        return ended.value.kind

    try:
        with ThreadPoolExecutor(64) as fan:
            assert set(fan.map(blocked, range(stranded))) == {"seconds"}
        box = Sandbox(host={"w": lambda: 7}, limits=Limits(seconds=10), isolation="process")
        box._pool = runs  # type: ignore[attr-defined]
        assert box.run("result = w()\n") == 7
    finally:
        release.set()
        runs.close()


# -- REDTEAM10 3: every iterator a host word returned is kept by the host until the run ends ---


def test_host_iterators_the_plan_dropped_are_not_kept_by_the_host() -> None:
    """An honest-looking plan, no probe: a host word that returns an iterator, called in a
    loop. In one process each is freed as the plan drops it; under process isolation the host
    kept every one in the run's table (its frame, and whatever it held: the plan's memory limit
    never saw it) until the run ended. The plan's process now says which it dropped."""

    def made() -> Iterator[int]:
        yield 1

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects()
                   if type(o) is types.GeneratorType and o.gi_code is made.__code__)  # fmt: skip

    host = {"made": made, "alive": alive}
    source = "for i in range(3000):\n    x = made()\nfirst = next(x)\nresult = [first, alive()]\n"
    for mode in ("inprocess", "process"):
        box = Sandbox(host=host, limits=Limits(seconds=60), isolation=mode)
        found, held = box.run(source)
        assert found == 1
        assert held <= 100, mode


# -- REDTEAM10 4: error kinds the two modes did not agree on ---------------------------------

MODES = ("inprocess", "process")


def _raising(error: BaseException) -> object:
    def word() -> object:
        raise error

    return word


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("error", "kind"), [(RecursionError("deep"), "depth"), (MemoryError(), "memory")]
)
def test_a_host_words_recursion_or_memory_error_is_the_same_limit_in_both_modes(
    mode: str, error: BaseException, kind: str
) -> None:
    """A plan can make a host word run out of stack or memory by what it passes. In one
    process that ends the plan at a limit (``depth``, ``memory``); across the boundary it
    crossed as an error of that name, and the plan ended with a ``PlanRuntimeError``."""
    box = Sandbox(host={"w": _raising(error)}, limits=Limits(seconds=10), isolation=mode)
    with pytest.raises(PlanLimitError) as ended:
        box.run("x = 1\nresult = w()\n")
    assert (ended.value.kind, ended.value.line) == (kind, 2)


@pytest.mark.parametrize("mode", MODES)
def test_a_plan_recursing_through_a_host_words_comprehension_ends_at_depth(mode: str) -> None:
    """The host's own stack runs out first under process isolation (each level nests the
    serving of a request on it): the same kind as in one process, not a RecursionError."""
    box = Sandbox(host={"each": lambda f, xs: [f(x) for x in xs]}, limits=Limits(seconds=20),
                  isolation=mode)  # fmt: skip
    with pytest.raises(PlanLimitError) as ended:
        box.run("def f(n):\n    return each(lambda x: f(x), [n])\nresult = f(0)\n")
    assert ended.value.kind == "depth"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", ["ValueError('x')", "slice(1, 2)"])
def test_a_value_a_host_word_cannot_take_is_a_type_error_in_both_modes(
    mode: str, value: str
) -> None:
    """In one process such a value reaches the word, and its answer is refused as not plain
    data (a ``TypeError``); across the boundary the plan's process refuses to send it, and the
    plan saw the codec's own error type (``CodecError``)."""
    box = Sandbox(host={"same": lambda x: x}, limits=Limits(seconds=10), isolation=mode)
    with pytest.raises(PlanRuntimeError) as failed:
        box.run(f"x = 1\nresult = same({value})\n")
    assert (failed.value.error_type, failed.value.line) == ("TypeError", 2)


# -- REDTEAM10 5: nested host calls made the host hold a copy of their arguments a level -------


def test_nested_host_calls_hold_no_more_than_the_plans_memory_in_the_host() -> None:
    """No probe: a host word that calls back a plan function that calls the word again with
    the same list. The plan holds one list (about 12 MB); in one process each level gets that
    same object. Across the boundary each level's arguments are a new copy in the host, alive
    while its word runs: 100 levels made the host hold 1.4 GB on ``memory_mb=256`` (and about
    14 GB with ten times the list, within that limit). Large requests being served are now
    held to the run's budget together: the plan ends at its memory limit."""
    calls = [0]

    def w(data: list[str], f: object) -> object:
        calls[0] += 1
        return f()  # type: ignore[operator]

    source = (
        "big = [str(i) for i in range(200000)]\n"
        "def f():\n    return w(big, f)\n"
        "result = w(big, f)\n"
    )
    box = Sandbox(host={"w": w}, limits=Limits(seconds=60, memory_mb=256), isolation="process")
    with pytest.raises(PlanLimitError) as ended:
        box.run(source)
    assert ended.value.kind == "memory", ended.value
    assert calls[0] < 50  # the budget's worth of levels (the depth limit is 100)


# -- REDTEAM10 6: ``planlang check`` of a plan too deep for Python's parser ----------------------


def test_check_of_a_plan_too_deep_to_parse_says_so_in_one_line(tmp_path: Path) -> None:
    """``Sandbox.run``, ``price`` and ``run`` refuse it (PL003); ``check`` then parsed it again
    for undefined names, and CPython's parser raised MemoryError: a traceback, exit 1."""
    plan = tmp_path / "deep.py"
    plan.write_text("result = " + "-" * 100_000 + "1\n")
    done = subprocess.run([sys.executable, "-m", "planlang", "check", str(plan)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})  # fmt: skip
    assert "Traceback" not in done.stdout + done.stderr
    assert (done.returncode, done.stdout.count("PL003")) == (EXIT_REFUSED, 1), done
