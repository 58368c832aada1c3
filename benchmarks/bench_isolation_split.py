"""Where an isolated compute-glue run's time goes, and the floor under it on this machine.

    python benchmarks/bench_isolation_split.py [--runs 40] [--out benchmarks/RESULTS.md]

Issue 12 asks compute glue under process isolation to be within 2x of plain CPython; the
judged row (``bench_isolation.py``) times one run on a refilled pool after a rest against a
third of three rested CPython runs. This times the same run in parts, pinned as there (host on
CPU 0, the plan's process on CPU 1 once ready), each part's median over ``--runs`` rested runs:
the host's steps (wrapped in place: the wrappers' own cost is in the parts), and what cannot be
taken off a run: waking a process at rest on the other CPU and being woken back (a bare
process, no planlang), and the plan itself in the sandbox, rested, in process. Their sum is the
floor; the ``budget`` row is 2x the judged denominator. Also, for scale, the same plan with
every guard of the sandbox replaced by a plain call (unsafe: measured, never used).
"""

from __future__ import annotations

import argparse
import marshal
import operator
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_isolation as bi  # noqa: E402
import bench_planlang as bp  # noqa: E402
from bench_isolation import _rested  # noqa: E402
from results_block import write_block  # noqa: E402

import planlang  # noqa: E402
from planlang.isolation import channel, parent  # noqa: E402
from planlang.isolation import pool as pool_module  # noqa: E402

_ECHO_STAMP = r"""
import os, select, sys, time
poller = select.poll(); poller.register(0, select.POLLIN)
os.set_blocking(0, False)
while True:
    poller.poll()
    woke = time.monotonic_ns()
    if not os.read(0, 65536):
        break
    os.write(1, str(woke).encode())
"""


def wakes(runs: int) -> tuple[float, float]:
    """(µs from our write's start until a bare process at rest on CPU 1 runs, µs from its
    write until our poll returns), medians, each after a 50 ms rest."""
    child = subprocess.Popen([sys.executable, "-c", _ECHO_STAMP], stdin=subprocess.PIPE,  # noqa: S603
                             stdout=subprocess.PIPE, bufsize=0)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    bi._place(child.pid, {1})
    writer, reader = child.stdin.fileno(), child.stdout.fileno()
    poller = select.poll()
    poller.register(reader, select.POLLIN)
    there, back = [], []
    try:
        for _ in range(runs):
            time.sleep(0.05)
            start = time.monotonic_ns()
            os.write(writer, b'["go"]')
            poller.poll()
            came = time.monotonic_ns()
            woke = int(os.read(reader, 64))
            there.append(woke - start)
            back.append(came - woke)  # its write and our wake (its stamp's own cost is in it)
    finally:
        child.stdin.close()
        child.wait(timeout=10)
    return statistics.median(there) / 1000, statistics.median(back) / 1000


def _timed(run: Callable[[], Any]) -> int:
    start = time.monotonic_ns()
    run()
    return time.monotonic_ns() - start


class _Stamps:
    """Monotonic stamps the wrapped steps of an isolated run leave, by name."""

    def __init__(self) -> None:
        self.at: dict[str, int] = {}

    def wrap(self, owner: Any, name: str, before: str, after: str) -> None:
        original = getattr(owner, name)
        at = self.at

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            at[before] = time.monotonic_ns()
            try:
                return original(*args, **kwargs)
            finally:
                at[after] = time.monotonic_ns()

        setattr(owner, name, wrapped)

    def on_done(self) -> None:
        original = parent._Session.notice
        at = self.at

        def notice(session: Any, op: str, payload: Any) -> None:
            if op == "done":
                at["done"] = time.monotonic_ns()
            original(session, op, payload)

        parent._Session.notice = notice  # type: ignore[method-assign,assignment]


def unguarded(source: str) -> Callable[[], Any]:
    """The checked plan in the sandbox's namespace, every guard a plain call (unsafe)."""
    import builtins

    checked = planlang.check(source)
    box = planlang.Sandbox(host=bi.HOST, isolation="inprocess")
    code = checked.code
    assert code is not None
    cell = [0]
    plain = {"_step_": lambda: None, "_getiter_": iter, "_enter_": lambda: cell,
             "_add_": operator.add, "_mod_": operator.mod, "_mul_": operator.mul,
             "_getattr_": getattr, "_iter_unpack_sequence_": lambda it, *_: iter(it)}  # fmt: skip

    def run() -> Any:
        namespace = box._namespace(box._new_meter(), code)
        namespace.update({name: fn for name, fn in plain.items() if name in namespace})
        given = namespace["__builtins__"]
        namespace["__builtins__"] = {name: getattr(builtins, name, given[name]) for name in given}
        exec(code, namespace)  # noqa: S102 - a measurement of the guards' cost, never a plan run
        return namespace["result"]

    return run


def split(runs: int) -> list[str]:
    source = (bp.PLANS / "compute_glue.py").read_text(encoding="utf-8")
    checked = planlang.check(source)
    isolated = planlang.Sandbox(host=bi.HOST, isolation="process")
    inprocess = planlang.Sandbox(host=bi.HOST, isolation="inprocess")
    baseline = bi.cpython(source)
    bare = unguarded(source)
    expected = baseline()
    assert isolated.run(checked) == inprocess.run(checked) == bare() == expected
    stamps = _Stamps()
    stamps.wrap(pool_module.Pool, "acquire", "acquire", "acquired")
    stamps.wrap(parent._Session, "__init__", "session", "sessioned")
    stamps.wrap(channel.Endpoint, "request", "request", "answered")
    stamps.on_done()
    pool = pool_module.default_pool()
    parts: dict[str, list[float]] = {}

    def add(name: str, ns: float) -> None:
        parts.setdefault(name, []).append(ns / 1000)

    at = stamps.at
    for _ in range(runs):
        at.clear()

        def timed() -> None:
            at["start"] = time.monotonic_ns()
            isolated.run(checked)
            at["end"] = time.monotonic_ns()

        _rested(pool, timed)
        start, took = at["start"], at["end"] - at["start"]
        add("from `Sandbox.run` to the pool", at["acquire"] - start)
        add(
            "acquire: a ready process taken, told `go` with the code",
            at["acquired"] - at["acquire"],
        )
        add("the run's session set up (channel, lanes)", at["sessioned"] - at["session"])
        add("the run's request made (limits, host values)", at["request"] - at["sessioned"])
        add("request sent to the plan's end heard (the plan's process: woken, code loaded, "
            "limits set, plan run, `done` sent)", at["done"] - at["request"])  # fmt: skip
        add("`done` heard to its answer read", at["answered"] - at["done"])
        add("the answer decoded, the run closed, `Sandbox.run` returns",
            start + took - at["answered"])  # fmt: skip
        add("isolated run, in all", took)
        add(
            "plain CPython, a third of three rested runs (the judged denominator)",
            _rested(pool, lambda: [baseline() for _ in range(3)]) / 3,
        )
        add("plain CPython, one rested run", _rested(pool, baseline))
        add("planlang in-process, one rested run", _rested(pool, lambda: inprocess.run(checked)))
        add("the plan with every guard a plain call (unsafe), one rested run", _rested(pool, bare))
    code = marshal.dumps(checked.code)
    rested_load = statistics.median(_rested(pool, lambda: marshal.loads(code)) for _ in range(runs))
    warm_load = min(_timed(lambda: marshal.loads(code)) for _ in range(runs))
    there, back = wakes(runs)
    med = {name: statistics.median(values) for name, values in parts.items()}
    denominator = med["plain CPython, a third of three rested runs (the judged denominator)"]
    floor = med["planlang in-process, one rested run"] + there + back
    rows = [f"| {name} | {value:,.0f} | {value / denominator:.2f}x |"
            for name, value in med.items()]  # fmt: skip
    rows += [
        f"| a write that wakes a bare process at rest on CPU 1, until it runs | {there:,.0f} "
        f"| {there / denominator:.2f}x |",
        f"| its write back, until this process's poll returns | {back:,.0f} "
        f"| {back / denominator:.2f}x |",
        f"| for scale, one-off work at rest: `marshal.loads` of the plan's code, rested "
        f"(warm: {warm_load / 1000:,.0f} µs) | {rested_load / 1000:,.0f} "
        f"| {rested_load / 1000 / denominator:.2f}x |",
        f"| **floor**: in-process rested + those two wakes | {floor:,.0f} "
        f"| {floor / denominator:.2f}x |",
        f"| **budget**: 2x the judged denominator | {2 * denominator:,.0f} | 2.00x |",
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {0})
    bi._pin_children()
    load = os.getloadavg()[0]
    rows = split(args.runs)
    text = "\n".join(
        [
            "## Process isolation: where a compute-glue run's time goes (issue 12)",
            "",
            "Command: `python benchmarks/bench_isolation_split.py --out benchmarks/RESULTS.md`  ",
            f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; Python "
            f"{sys.version.split()[0]}, load average {load:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end; pinned as `bench_isolation.py`; medians of "
            f"{args.runs} runs, each after a 50 ms rest on a refilled pool; ratios to the judged "
            "denominator.",
            "",
            "| part | µs | of CPython |",
            "|---|---|---|",
            *rows,
            "",
        ]
    )
    print(text)
    if args.out:
        write_block(args.out, "bench_isolation_split", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
