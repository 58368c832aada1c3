"""planlang.Sandbox: host words in, plain data out, limits enforced, errors at the plan's line."""

import copy
import threading
import time

import pytest

import planlang
from planlang import HostObject, Limits, PlanLimitError, PlanRefused, PlanRuntimeError, Sandbox


def fake_agent(prompt, schema=None):
    return {"answer": prompt.upper(), "tags": ["a", "b"]}


def test_the_contract_example_runs_and_returns_result():
    inputs = {"files": ["a.py", "b.py"], "budget": 3}
    box = Sandbox(host={"agent": fake_agent, "inputs": inputs}, limits=Limits(steps=10_000))
    source = 'result = [agent(f"read {f}")["answer"] for f in inputs["files"]]\n'
    assert planlang.check(source).ok
    assert box.run(source) == ["READ A.PY", "READ B.PY"]


def test_a_plan_without_result_returns_none():
    assert Sandbox().run("x = 1\n") is None


def test_run_refuses_unchecked_source_with_all_problems():
    with pytest.raises(PlanRefused) as caught:
        Sandbox().run("import os\nclass A:\n    pass\n")
    assert [p.code for p in caught.value.problems] == ["PL101", "PL102"]


def test_run_accepts_a_check_result_but_not_a_forged_one():
    checked = planlang.check("result = 2 + 2\n")
    assert Sandbox().run(checked) == 4
    forged = planlang.CheckResult("plan.py", checked.sha256, (), compile("result = 5", "p", "exec"))
    with pytest.raises(PlanRefused):
        Sandbox().run(forged)


def test_host_word_results_are_fresh_plan_data():
    shared = {"k": [1, 2]}
    box = Sandbox(host={"get": lambda: shared})
    result = box.run('d = get()\nd["k"].append(3)\nd["new"] = 1\nresult = d\n')
    assert result == {"k": [1, 2, 3], "new": 1}
    assert shared == {"k": [1, 2]}


def test_host_inputs_are_read_only_and_unchanged():
    inputs = {"files": ["a"], "cfg": {"x": 1}, "tags": {"t"}}
    before = copy.deepcopy(inputs)
    attempts = [
        'inputs["files"].append("b")',
        'inputs["cfg"]["x"] = 2',
        'del inputs["cfg"]',
        'inputs["cfg"].update({"y": 1})',
        'f = inputs["files"]\nf += ["c"]',
        'c = inputs["cfg"]\nc |= {"y": 1}',
        'list.append(inputs["files"], "z")',
        'inputs["files"][0] = "z"',
        'inputs["tags"].add("u")',
    ]
    for attempt in attempts:
        with pytest.raises(PlanRuntimeError):
            Sandbox(host={"inputs": inputs}).run(attempt)
    assert inputs == before


def test_a_plan_may_copy_host_data_and_change_its_copy():
    inputs = {"files": ["a"]}
    result = Sandbox(host={"inputs": inputs}).run(
        'files = list(inputs["files"])\nfiles.append("b")\nresult = files\n'
    )
    assert result == ["a", "b"]
    assert inputs == {"files": ["a"]}


class Repo:
    def __init__(self):
        self.name = "demo"
        self.secret = "hunter2"

    def read(self, path):
        return {"path": path, "text": "x = 1"}

    def delete_everything(self):  # pragma: no cover - must never be reachable
        raise AssertionError("reached")


def test_host_objects_show_only_what_the_embedder_declared():
    repo = Repo()
    box = Sandbox(host={"repo": HostObject(repo, methods=["read"], attributes=["name"])})
    assert box.run('result = [repo.name, repo.read("a.py")["text"]]') == ["demo", "x = 1"]
    for attempt in ("repo.secret", "repo.delete_everything()", "repo.obj"):
        with pytest.raises(PlanRuntimeError, match="does not offer"):
            box.run(f"x = {attempt}")
    with pytest.raises(PlanRefused):
        box.run('repo.name = "evil"')
    assert repo.name == "demo"


def test_undeclared_objects_show_nothing():
    with pytest.raises(PlanRuntimeError, match="does not offer"):
        Sandbox(host={"repo": Repo()}).run("x = repo.name")


def test_a_plan_error_carries_the_plans_own_line():
    source = "x = 1\ny = 2\n\ndef f(d):\n    return d['missing']\n\nz = f({})\n"
    with pytest.raises(PlanRuntimeError) as caught:
        Sandbox().run(source)
    assert caught.value.line == 5
    assert caught.value.error_type == "KeyError"
    assert "plan.py:5" in str(caught.value)


def test_a_limit_error_carries_the_plans_line_and_kind():
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(limits=Limits(steps=1000)).run("x = 0\nwhile True:\n    x += 1\n")
    assert caught.value.kind == "steps"
    assert caught.value.line in (2, 3)


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("for i in range(1000):\n    for j in range(1000):\n        pass", "steps"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "depth"),
        ("x = 'ab' * 10**7", "size"),
        ("x = [0] * 10**7", "size"),
        ("x = 7 ** 10**7", "size"),
        ("x = 1 << 10**7", "size"),
        ("x = range(10**8)", "size"),
        ("x = ','.join(['abc'] * 100) * 10**5", "size"),
        ("x = 'a'.ljust(10**8)", "size"),
        ("x = f'{1:>{10**8}}'", "size"),
        ("s = 'ab'\nfor i in range(40):\n    s = s + s", "size"),
        ("xs = [1]\nfor i in range(40):\n    xs[len(xs):] = xs", "size"),
    ],
)
def test_each_limit_ends_the_plan_with_its_kind(source, kind):
    limits = Limits(steps=100_000, size=100_000, depth=50, seconds=5)
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(limits=limits).run(source)
    assert caught.value.kind == kind


def test_the_time_limit_ends_a_plan_whose_host_word_waits():
    def slow(seconds):
        meter = planlang.current_meter()
        time.sleep(min(seconds, meter.remaining() if meter else seconds))
        return None

    started = time.monotonic()
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(host={"slow": slow}, limits=Limits(seconds=0.3)).run("slow(30)\nslow(30)\n")
    assert caught.value.kind == "seconds"
    assert time.monotonic() - started < 5


def test_a_limit_swallowed_by_host_code_still_ends_the_plan():
    def swallow(thunk):
        try:
            thunk()
        except Exception:
            return "swallowed"

    source = "def spin():\n    while True:\n        pass\nx = swallow(spin)\ny = 1\n"
    with pytest.raises(PlanLimitError):
        Sandbox(host={"swallow": swallow}, limits=Limits(steps=1000)).run(source)


@pytest.mark.parametrize("exc", [SystemExit, GeneratorExit, BaseException])
def test_base_exceptions_from_host_words_never_reach_the_host_as_such(exc):
    def bad():
        raise exc("stop")

    with pytest.raises(PlanRuntimeError):
        Sandbox(host={"bad": bad}).run("bad()")


def test_plan_functions_cannot_run_after_the_plan_finished():
    box = Sandbox()
    f = box.run("def f():\n    return 1\nresult = f\n")
    with pytest.raises(PlanLimitError):
        f()


def test_print_goes_to_the_log():
    lines = []
    Sandbox(log=lines.append).run("print('a', 1, sep='-')\n")
    assert lines == ["a-1"]


def test_plan_lambdas_run_from_host_threads_are_counted():
    def parallel(thunks):
        results = [None] * len(thunks)

        def go(i, t):
            results[i] = t()

        threads = [threading.Thread(target=go, args=(i, t)) for i, t in enumerate(thunks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    box = Sandbox(host={"parallel": parallel})
    assert box.run("result = parallel([lambda i=i: i * i for i in range(4)])") == [0, 1, 4, 9]
    assert box.last_meter.steps >= 4


@pytest.mark.parametrize("bad_name", ["_x", "not an identifier", "__builtins__"])
def test_host_names_must_be_plain_identifiers(bad_name):
    with pytest.raises(ValueError, match="must be an identifier"):
        Sandbox(host={bad_name: 1})


def test_limits_are_validated():
    with pytest.raises(ValueError, match="steps=0"):
        Limits(steps=0)
    with pytest.raises(ValueError, match="seconds"):
        Limits(seconds=-1)


def test_every_construct_of_the_language_runs():
    from test_check import GOOD

    result = Sandbox(host={"phase": lambda name: None}).run(GOOD)
    assert result == {
        "squares": [0, 4, 8],
        "label": "      12 {'a': 3, 'b': 1}",
        "rest": [3, 2],
        "seen": [0, 4, 8],
    }


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("result = [a for a, b in [(1, 2), (3, 4)]]", [1, 3]),
        ("result = {k: v for k, v in {'x': 1}.items()}", {"x": 1}),
        ("result = []\nfor a, (b, c) in [(1, (2, 3))]:\n    result.append(a + b + c)", [6]),
        ("a, *b = 'xyz'\nresult = [a, b]", ["x", ["y", "z"]]),
        ("result = sum(x for x, _y in [(1, 0), (2, 0)])", None),
        ("result = [i * j for i in range(3) for j in range(2) if i]", [0, 1, 0, 2]),
        ("def f(*args, **kw):\n    return [args, kw]\nresult = f(*[1, 2], **{'k': 3})",
         [(1, 2), {"k": 3}]),
    ],
)  # fmt: skip
def test_unpacking_in_every_position(source, expected):
    if expected is None:  # '_y' is refused: names may not start with '_'
        with pytest.raises(PlanRefused):
            Sandbox().run(source)
        return
    assert Sandbox().run(source) == expected


def test_host_words_never_receive_underscore_keywords():
    seen = []
    with pytest.raises(PlanRuntimeError, match="starts with '_'"):
        Sandbox(host={"word": lambda **kw: seen.append(kw)}).run("word(**{'_x': 1})")
    assert seen == []


def test_a_deeply_nested_tuple_hashed_does_not_crash_the_host():
    """CPython hashes tuples by C recursion; the plan runs on a stack that fits its step limit.
    Run in a child process, so a regression shows as a failed test, not a dead test run."""
    import subprocess
    import sys

    code = (
        "import planlang\n"
        "src = 't = ()\\nfor i in range(400000):\\n    t = (t,)\\nd = {t: 1}\\nresult = len(d)'\n"
        "print(planlang.Sandbox().run(src))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.strip() == "1"


def test_straight_line_plans_run_inline_and_looping_ones_on_a_deep_stack():
    from planlang.sandbox.deep_stack import needs_deep_stack, stack_for

    assert not needs_deep_stack(planlang.check("x = 1\ny = x + 1\n").code)
    assert needs_deep_stack(planlang.check("for i in range(3):\n    pass\n").code)
    assert needs_deep_stack(planlang.check("f = lambda: 1\n").code)
    assert needs_deep_stack(planlang.check("xs = [i for i in range(3)]\n").code)
    assert stack_for(5_000_000) >= 5_000_000 * 64  # about 64 bytes of C stack per level


def test_ctrl_c_while_a_deep_stack_plan_runs_ends_it_as_interrupted(ctrl_c):
    import os
    import signal
    import threading as th

    timer = th.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT))  # a real Ctrl-C
    timer.start()
    try:
        with pytest.raises(PlanLimitError) as caught:
            Sandbox(limits=Limits(seconds=30, steps=10**9)).run("while True:\n    pass\n")
    finally:
        timer.cancel()
    assert caught.value.kind == "interrupted"


def test_a_fork_reads_its_own_memory_not_its_parents():
    """The meter keeps /proc/self/statm open (one pread a checkpoint): a fork must not go on
    reading its parent's file (the fork server's children do fork from a process that ran
    plans), so a fork's growth is its own and the parent's reading does not move."""
    import os

    from planlang.sandbox import limits

    before = limits._resident_bytes()
    assert limits._statm[0] >= 0
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the fork reports through the pipe
        try:
            # from the fork's own reading: a fork starts with less resident than its parent
            # (file-backed pages are mapped again as it touches them), by how much the
            # parent has loaded
            start = limits._resident_bytes()
            grown = bytearray(64 * 2**20)
            for at in range(0, len(grown), 4096):
                grown[at] = 1
            os.write(write, str(limits._resident_bytes() - start).encode())
        finally:
            os._exit(0)
    os.close(write)
    child_growth = int(os.read(read, 64) or b"0")
    os.close(read)
    os.waitpid(pid, 0)
    assert child_growth >= 48 * 2**20
    assert limits._resident_bytes() - before < 32 * 2**20


@pytest.mark.parametrize("n", [65, 254, 255, 256, 511, 1000])
def test_a_long_loop_is_charged_a_chunk_ahead_and_sees_what_it_appends(n):
    """A loop over a list longer than 64 items is charged 256 steps (and the clock read)
    before each 256 of its items, and a list that grows while it is walked is walked to its
    new end, as Python walks it."""
    from planlang.sandbox.guards import Guards
    from planlang.sandbox.limits import Meter

    meter = Meter(Limits())
    items = list(range(n))
    seen = []
    for item in Guards(meter, {}).getiter(items):
        seen.append((item, meter.steps))
        if item == 40:
            items.append(-1)
    assert [item for item, _steps in seen] == [*range(n), -1]
    assert [steps for _item, steps in seen] == [256 * (i // 256 + 1) for i in range(n + 1)]
    assert meter.steps == 256 * ((n + 1) // 256 + 1)


def test_the_depth_limit_counts_each_thread_on_its_own():
    """Plan functions nest per thread (parallel thunks each start at depth 0): a thread may
    go as deep as the limit whatever another thread holds, and one level more trips."""
    from planlang.sandbox.limits import Meter

    meter = Meter(Limits(depth=3))
    for _ in range(3):
        meter.enter()
    outcome: list[object] = []

    def other_thread() -> None:
        for _ in range(3):
            meter.enter()
        try:
            meter.enter()
        except PlanLimitError as error:
            outcome.append(error.kind)
        for _ in range(3):
            meter.leave()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join(timeout=60)
    assert outcome == ["depth"]
    meter.leave()
    with pytest.raises(PlanLimitError):  # the meter stays tripped, on every thread
        meter.enter()


def test_a_plan_function_that_raises_into_the_host_gives_its_depth_back():
    """A host word that calls a plan function back and catches what it raises, many times:
    each call's level of depth is given back by its ``finally``, so the plan can still nest
    as deep as its limit afterwards."""

    def retry(fn: object, times: int) -> int:
        failed = 0
        for _ in range(times):
            try:
                fn(0)  # type: ignore[operator]
            except Exception:  # noqa: BLE001 - the host decides what a failure means
                failed += 1
        return failed

    plan = (
        "def bad(n):\n    return 1 // n\n"
        "def nest(n):\n    return 0 if n == 0 else nest(n - 1) + 1\n"
        "result = [retry(bad, 50), nest(2)]\n"
    )
    box = Sandbox(host={"retry": retry}, limits=Limits(depth=3), isolation="inprocess")
    assert box.run(plan) == [50, 2]


def test_memory_is_read_at_checkpoints_once_its_interval_passed_or_after_a_large_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A checkpoint reads resident memory (a system call) only when MEMORY_EVERY seconds have
    passed since the last read, or when a large result was allowed since: a compute-heavy plan
    no longer pays a read every 256 steps. The clock is the test's, so load cannot move it."""
    from planlang.sandbox import limits

    now = [1000.0]
    reads: list[int] = []
    monkeypatch.setattr(limits.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(limits, "_resident_bytes", lambda: reads.append(1) or 0)
    meter = limits.Meter(Limits(seconds=60))
    assert len(reads) == 1  # the base
    meter.charge(100 * limits.CHECK_EVERY)  # many checkpoints, no time passed
    for _ in range(100):
        meter.charge(limits.CHECK_EVERY)
    assert len(reads) == 1
    now[0] += limits.MEMORY_EVERY
    meter.charge(limits.CHECK_EVERY)
    assert len(reads) == 2
    meter.allow_size(limits.LARGE_SIZE, "A test")  # charged, and read at its checkpoint
    meter.charge(limits.CHECK_EVERY)
    assert len(reads) == 3
    meter.charge(limits.CHECK_EVERY)
    assert len(reads) == 3
