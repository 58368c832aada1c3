"""The host against a plan's process that is already compromised (it sends what it likes),
and the cases where both isolation modes must agree (found by a review of the channel).

A test-only probe (``Sandbox._probe``, taken only by a pool started with ``probes=True``)
runs raw Python in the child in place of the plan: it writes crafted frames on the child's
own pipe. Whatever it sends, ``Sandbox.run`` ends with a ``PlanError``.
"""

from __future__ import annotations

import time

import pytest

from planlang.check import check
from planlang.errors import PlanError, PlanLimitError, PlanRuntimeError
from planlang.isolation.pool import Pool
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

HANG_GUARD = 15.0
MODES = ("inprocess", "process")
CRAFTED = """
import gc, time
from planlang.isolation.channel import Endpoint
from planlang.isolation.frames import write_all
ep = [o for o in gc.get_objects() if type(o) is Endpoint][0]
R = ep.default_context
write_all(ep._writer, FRAME)
time.sleep(30)
result = None
"""


@pytest.fixture
def pool(probe_pool: Pool) -> Pool:
    return probe_pool  # the session's (conftest.py)


def probed(pool: Pool, probe: str, seconds: float = 3, **host: object) -> Sandbox:
    box = Sandbox(host=dict(host), limits=Limits(seconds=seconds), isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": probe}  # type: ignore[attr-defined]
    return box


def test_a_child_that_stops_answering_ends_at_the_time_limit(pool: Pool) -> None:
    """No host call, no CPU: the host's own clock ends it, as a time limit (a TimeoutError
    taken for a broken pipe made it a crash, 5 s late)."""
    box = probed(pool, "import time\ntime.sleep(60)\nresult = 1\n", seconds=2)
    started = time.monotonic()
    with pytest.raises(PlanLimitError) as ended:
        box.run("result = None\n")
    assert ended.value.kind == "seconds"
    assert time.monotonic() - started < HANG_GUARD


@pytest.mark.parametrize(
    "frame",
    [
        "['a', R, True]",  # short answer
        "['a', R, True, 5]",  # the run's answer not [result, steps]
        "['a', R, True, [1, 'x']]",  # steps not a number
        "['a', R, False, 5]",  # a failure that describes nothing
        "['a', R, True, [{'x': []}, 0]]",  # a tag's payload of the wrong type
        "['a', R, True, [{'i': [1]}, 0]]",
        "['q', 7, R]",  # short request
        "['n', R]",  # short notice
        "['z', 1, 2, 3]",  # no such kind
        "['p', R]",  # short plain answer
        "['p', R, 5, 6]",  # a plain answer of the wrong length
        "['p', R, 5]",  # the run's answer as plain JSON, not [result, steps]
    ],
)
def test_whatever_frame_a_child_sends_the_run_ends_with_a_plan_error(
    pool: Pool, frame: str
) -> None:
    box = probed(pool, CRAFTED.replace("FRAME", frame), w=lambda *a: 1)
    started = time.monotonic()
    with pytest.raises(PlanError):
        box.run("result = w\n")
    assert time.monotonic() - started < HANG_GUARD


def test_a_child_cannot_pass_an_underscore_keyword_to_a_host_word(pool: Pool) -> None:
    """The plan's own wrapper refuses ``_``-named arguments in the child; the host refuses them
    too, for a child that skips it."""
    seen: list[dict[str, object]] = []
    probe = CRAFTED.replace(
        "write_all(ep._writer, FRAME)\ntime.sleep(30)\nresult = None",
        "from planlang.isolation.child import _ChildSandbox\n"
        "box = [o for o in gc.get_objects() if type(o) is _ChildSandbox][0]\n"
        "wid = box.host['w'].fn.wid\n"
        "write_all(ep._writer, ['q', 9, R, 'call', [wid, [], {'d': ['_secret', 1]}, None]])\n"
        "reply = ep._reader.read()\nresult = [reply[2], reply[3][1]]",
    )
    box = probed(pool, probe, w=lambda **kw: seen.append(kw))
    assert box.run("result = w\n") == [False, "TypeError"]
    assert seen == []


def test_the_same_text_under_two_filenames_keeps_each_its_own(tmp_path: object) -> None:
    """Code objects compare equal whatever file they name: the code sent is each plan's own,
    so its errors name its file and line in both modes."""
    source = "x = 1\ny = [][3]\nresult = x\n"
    for mode in MODES:
        for name in ("first.py", "second.py"):
            with pytest.raises(PlanRuntimeError) as failed:
                Sandbox(limits=Limits(seconds=5), isolation=mode).run(check(source, name))
            assert failed.value.line == 2 and str(failed.value).startswith(f"{name}:2:")


def test_a_long_time_limit_runs() -> None:
    """A wait longer than poll() takes (about 24.8 days) is waited in parts."""
    for mode in MODES:
        assert Sandbox(limits=Limits(seconds=1e7), isolation=mode).run("result = 2\n") == 2


def test_a_list_under_two_keys_of_a_host_answer_is_two_lists_in_both_modes() -> None:
    shared = [1, 2]
    host = {"answer": lambda: {"a": shared, "b": shared}}
    source = "r = answer()\nr['a'].append(3)\nresult = [r, r['a'] is r['b']]\n"
    results = [Sandbox(host=host, isolation=mode).run(source) for mode in MODES]
    assert results[0] == results[1] == [{"a": [1, 2, 3], "b": [1, 2]}, False]
    assert shared == [1, 2]


def test_a_plain_answer_to_a_callback_is_plain_data_in_the_host(pool: Pool) -> None:
    """A callback's answer may come as plain JSON (["p", id, payload]), parsed as it stands: a
    child may put any JSON there, and the host word gets exactly that, as plain data."""
    seen: list[object] = []

    def word(f: object) -> str:
        seen.append(f())  # type: ignore[operator]
        return "done"

    probe = CRAFTED.replace(
        "write_all(ep._writer, FRAME)\ntime.sleep(30)\nresult = None",
        "from planlang.isolation.child import _ChildSandbox\n"
        "box = [o for o in gc.get_objects() if type(o) is _ChildSandbox][0]\n"
        "wid = box.host['w'].fn.wid\n"
        "write_all(ep._writer, ['q', 9, R, 'call', [wid, [{'c': 1}], {'d': []}, None]])\n"
        "ask = ep._reader.read()\n"
        "write_all(ep._writer, ['p', ask[1], {'deep': {'x': [1, {'y': 2.5}]}, 'k': None}])\n"
        "reply = ep._reader.read()\nresult = [ask[3], reply]",
    )
    box = probed(pool, probe, w=word)
    assert box.run("result = w\n") == ["callback", ["a", 9, True, "done"]]
    assert seen == [{"deep": {"x": [1, {"y": 2.5}]}, "k": None}]


@pytest.mark.parametrize(
    "answer",
    [
        {"n": 2**63 - 1, "m": -(2**63) + 1, "f": 1.5, "t": True, "z": None, "s": "é\u2028"},
        {"big": 2**63, "small": -(2**63)},  # past 64 bits: not plain JSON, tagged
        {"nan": float("inf"), "l": [float("-inf"), 1]},  # JSON has no infinity: tagged
        {"l": [1, "a", None, False, 2.0], "e": [], "d": {}},  # an inner dict: not flat
        {"k": (1, 2)},  # a tuple stays a tuple
        {1: "a"},  # a key that is not text
    ],
)
def test_a_host_answer_arrives_the_same_in_both_modes(answer: dict[object, object]) -> None:
    """Flat answers cross as plain JSON, the rest tagged: either way, as in one process."""
    host = {"answer": lambda: dict(answer)}
    results = [Sandbox(host=host, isolation=mode).run("result = answer()\n") for mode in MODES]
    assert repr(results[0]) == repr(results[1]) == repr(answer)  # types too: 2.0, (1, 2)


def test_a_plain_answer_is_the_plans_own_to_change() -> None:
    """Each call's answer is new: changing one changes no other, in both modes."""
    host = {"answer": lambda: {"l": [1], "n": 1}}
    source = "a = answer()\na['l'].append(2)\na['n'] = 5\nb = answer()\nresult = [a, b]\n"
    for mode in MODES:
        assert Sandbox(host=host, isolation=mode).run(source) == [{"l": [1, 2], "n": 5},
                                                                   {"l": [1], "n": 1}]  # fmt: skip


RAW = """
import gc, os, struct, time
from planlang.isolation.channel import Endpoint
ep = [o for o in gc.get_objects() if type(o) is Endpoint][0]
body = b'["a",%d,true,[[' % ep.default_context + BODY + b'],0]]'
os.write(ep._writer, struct.pack(">Id", len(body), time.monotonic()) + body)
time.sleep(30)
result = None
"""


def test_a_frame_that_would_decode_past_the_memory_limit_is_refused(pool: Pool) -> None:
    """``[],`` is three bytes of JSON and about 64 of a host's list: a frame of them is
    counted before it is decoded, and refused past what the host takes from one frame (the
    plan's memory limit, and at least ``BUDGET_FLOOR``)."""
    lists = RAW.replace("BODY", "b'[],' * 5_000_000 + b'[]'")  # 15 MB: 5 million lists
    box = probed(pool, lists, seconds=10)
    box.limits = Limits(seconds=10, memory_mb=1)
    with pytest.raises(PlanLimitError) as refused:
        box.run("result = None\n")
    assert refused.value.kind == "memory"
    assert "past the 256 MiB the host takes from one frame" in str(refused.value)
    text = RAW.replace("BODY", "b'\"' + b'x' * 15_000_000 + b'\"'").replace(
        "time.sleep(30)\n", ""
    )  # as large, but one string: about its size in the host too
    box = probed(pool, text, seconds=10)
    box.limits = Limits(seconds=10, memory_mb=1)
    assert box.run("result = None\n") == ["x" * 15_000_000]


def test_a_flood_of_requests_no_thread_waits_for_ends_the_run(pool: Pool) -> None:
    """Requests outside any call the host made queue for the host's spare threads: a child
    sending thousands of them is refused, not queued without bound."""
    from planlang.isolation.channel import MAX_PENDING

    calls: list[int] = []
    probe = CRAFTED.replace(
        "write_all(ep._writer, FRAME)",
        "from planlang.isolation.child import _ChildSandbox\n"
        "box = [o for o in gc.get_objects() if type(o) is _ChildSandbox][0]\n"
        "wid = box.host['w'].fn.wid\n"
        f"for i in range({MAX_PENDING + 200}):\n"
        "    write_all(ep._writer, ['q', 10 + i, None, 'call', [wid, [], {'d': []}, None]])",
    )

    def slow() -> None:
        calls.append(1)
        time.sleep(0.5)

    box = probed(pool, probe, seconds=10, w=slow)
    started = time.monotonic()
    with pytest.raises(PlanError, match="requests"):
        box.run("result = w\n")
    assert time.monotonic() - started < HANG_GUARD
    assert len(calls) < MAX_PENDING  # refused long before all were served


def test_what_a_child_prints_past_the_size_limit_ends_the_run(pool: Pool) -> None:
    """The plan's own print is bounded by Limits.size in its process; the host holds a child
    that skips that bound to the same one."""
    line = "x" * 100_000
    probe = CRAFTED.replace(
        "write_all(ep._writer, FRAME)",
        f"for i in range(30):\n    write_all(ep._writer, ['n', R, 'print', {line!r}])",
    )
    box = Sandbox(limits=Limits(seconds=5, size=1_000_000), isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    box._probe = {"probe": probe}  # type: ignore[attr-defined]
    with pytest.raises(PlanError, match="printed"):
        box.run("result = None\n")
    assert sum(len(text) + 1 for text in box.printed) <= 1_000_000
