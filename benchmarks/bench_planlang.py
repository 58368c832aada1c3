"""Benchmark of the planlang sandbox against plain CPython and other Python sandboxes.

Why a script and not a timed test: timings are noisy, so the goals of issue 2 are ratios taken
side by side in one process, from interleaved repetitions (every round runs every executor once,
in a rotating order) and medians. The ratio is the median of the per-round ratios to the
baseline, so slow drift of the machine (other jobs, frequency scaling) cancels out.

    python benchmarks/bench_planlang.py [--quick] [--out benchmarks/RESULTS.md] [--profile]

Executors missing from this machine (smolagents, pydantic-monty: the `compare` extra) are
skipped with a note in the table; nothing here needs them to run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import importlib
import importlib.util
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import planlang

HERE = Path(__file__).resolve().parent
PLANS = HERE / "plans"
WORKLOADS = {  # label -> (plan file, goal as a ratio to plain CPython, or None)
    "realistic 60-line plan": ("realistic_plan.py", None),
    "host-call-heavy glue (1,000 calls)": ("host_calls.py", 1.3),
    "compute glue": ("compute_glue.py", 1.8),
}
REFERENCE = {  # measured elsewhere on such workloads (issue 2), for the reader's comparison
    ("host-call-heavy glue (1,000 calls)", "RestrictedPython"): "1.46x",
    ("compute glue", "RestrictedPython"): "2.6x",
    ("host-call-heavy glue (1,000 calls)", "smolagents"): "53x",
    ("compute glue", "smolagents"): "159x",
    ("host-call-heavy glue (1,000 calls)", "pydantic-monty"): "152x",
    ("compute glue", "pydantic-monty"): "2x",
}
Runner = Callable[[], Any]
# Wall time by default. On a shared, busy machine the CPU time of this process (--clock cpu)
# is much steadier, because time spent descheduled is not counted; it cannot see the work
# pydantic-monty does in its worker process, so that column is skipped then.
CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.process_time_ns}
clock = CLOCKS["wall"]

# -- the host side: a fake agent doing realistic small work -----------------------------------


def agent(role: str, prompt: str) -> dict[str, Any]:
    """Stands in for a model call: builds and returns a small dict from its prompt."""
    words = prompt.split()
    digest = sum(map(ord, prompt))
    return {
        "role": role,
        "text": f"{role} on {' '.join(words[:6])}",
        "tokens": len(words) * 3 + 10,
        "score": (digest % 97) / 97,
        "tags": [w.strip(".,:").lower() for w in words[:3]],
    }


def phase(name: str) -> None:
    """Stands in for the runtime's phase marker."""
    return None


INPUTS = {
    "topic": "caching strategies for build systems",
    "sources": [f"https://example.org/paper/{n}" for n in range(12)],
    "max_drafts": 3,
}
HOST = {"agent": agent, "phase": phase, "inputs": INPUTS}

# -- executors: each turns (source) into a zero-argument runner that returns `result` ---------


def planlang_runner(source: str, stack: contextlib.ExitStack) -> Runner:
    checked = planlang.check(source, filename="plan.py")  # compiled once, run many times
    if not checked.ok:
        raise RuntimeError("planlang refused the plan: " + "; ".join(map(str, checked.problems)))
    box = planlang.Sandbox(host=HOST, limits=planlang.Limits())  # every limit on, defaults
    return lambda: box.run(checked)


def cpython_runner(source: str, stack: contextlib.ExitStack) -> Runner:
    code = compile(source, "plan.py", "exec")

    def run() -> Any:
        namespace = dict(HOST)
        exec(code, namespace)  # noqa: S102 - the baseline
        return namespace["result"]

    return run


def restrictedpython_globals() -> dict[str, Any]:
    """RestrictedPython's default guards and safe_builtins, with no limits (as in issue 2).

    RestrictedPython 9 leaves containers and iteration helpers (sorted, zip, dict, sum ...)
    out of safe_builtins and ships no ``_inplacevar_``; they are added back unguarded, as an
    embedder would have to.
    """
    import builtins as py_builtins
    import operator

    from RestrictedPython import safe_builtins
    from RestrictedPython.Eval import default_guarded_getitem, default_guarded_getiter
    from RestrictedPython.Guards import (
        full_write_guard,
        guarded_iter_unpack_sequence,
        guarded_unpack_sequence,
        safer_getattr,
    )

    inplace = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul}
    builtins = dict(safe_builtins)
    for name in ("dict", "list", "tuple", "set", "frozenset", "sorted", "zip", "enumerate",
                 "sum", "min", "max", "any", "all", "map", "filter", "reversed"):  # fmt: skip
        builtins[name] = getattr(py_builtins, name)
    return {
        "__builtins__": builtins,
        "_getattr_": safer_getattr,
        "_getitem_": default_guarded_getitem,
        "_getiter_": default_guarded_getiter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": full_write_guard,
        "_inplacevar_": lambda op, x, y: inplace[op](x, y),
        "_apply_": lambda f, *a, **k: f(*a, **k),
    }


def restrictedpython_runner(source: str, stack: contextlib.ExitStack) -> Runner:
    from RestrictedPython import compile_restricted

    code = compile_restricted(source, "plan.py", "exec")
    base = restrictedpython_globals()

    def run() -> Any:
        namespace = dict(base)
        namespace.update(HOST)
        exec(code, namespace)  # noqa: S102 - restricted code, RestrictedPython's guards
        return namespace["result"]

    return run


def smolagents_runner(source: str, stack: contextlib.ExitStack) -> Runner:
    from smolagents.local_python_executor import LocalPythonExecutor

    executor = LocalPythonExecutor([], additional_functions={"agent": agent, "phase": phase})
    executor.send_tools({})
    executor.send_variables({"inputs": INPUTS})
    return lambda: executor(source).output  # the plan's last line is a bare `result`


def monty_runner(source: str, stack: contextlib.ExitStack) -> Runner:
    import pydantic_monty

    pool = stack.enter_context(pydantic_monty.Monty())
    # One warm session reused for every run (the cheapest way to use monty); max_suspensions
    # is raised from its default of 1,000 because the host-call workload makes 1,000 calls.
    session = stack.enter_context(pool.checkout(limits={"max_suspensions": 100_000}))
    lookup = {"agent": agent, "phase": phase}
    return lambda: session.feed_run(source, inputs={"inputs": INPUTS}, external_lookup=lookup)


EXECUTORS: dict[str, tuple[Callable[[str, contextlib.ExitStack], Runner], str | None]] = {
    "plain CPython exec": (cpython_runner, None),
    "planlang (all limits on)": (planlang_runner, None),
    "RestrictedPython": (restrictedpython_runner, "RestrictedPython"),
    "smolagents": (smolagents_runner, "smolagents"),
    "pydantic-monty": (monty_runner, "pydantic_monty"),
}
BASELINE = "plain CPython exec"

# -- timing -------------------------------------------------------------------------------------


def measure(cases: dict[str, Runner], rounds: int, target_ns: int) -> dict[str, list[float]]:
    """ns per call of each case: warmed up, batched to ~target_ns, interleaved, gc off."""
    loops: dict[str, int] = {}
    for name, fn in cases.items():
        for _ in range(3):
            fn()
        start = clock()
        fn()
        once = max(clock() - start, 1)
        loops[name] = max(1, target_ns // once)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn, n = cases[name], loops[name]
            gc.collect()
            gc.disable()
            try:
                start = clock()
                for _ in range(n):
                    fn()
                elapsed = clock() - start
            finally:
                gc.enable()
            samples[name].append(elapsed / n)
    return samples


def paired_ratio(samples: dict[str, list[float]], name: str, baseline: str) -> float:
    return statistics.median(a / b for a, b in zip(samples[name], samples[baseline], strict=True))


Row = dict[str, str]


def row(workload: str, executor: str, us: str, ratio: str, baseline: str, goal: str, met: str,
        note: str = "") -> Row:  # fmt: skip
    return {"workload": workload, "executor": executor, "median µs": us, "ratio": ratio,
            "baseline": baseline, "goal": goal, "met?": met, "note": note}  # fmt: skip


def judged(ratio: float, goal: float | None) -> tuple[str, str]:
    if goal is None:
        return "-", "-"
    return f"≤ {goal:g}x", "yes" if ratio <= goal else "**no**"


# -- the three parts ----------------------------------------------------------------------------


def uncached_check() -> tuple[Callable[[str, str], Any], str]:
    """planlang's check without its lru_cache, and which function that is."""
    wrapped = getattr(planlang.check, "__wrapped__", None)
    if wrapped is not None:
        return wrapped, "planlang.check.__wrapped__"
    module = importlib.import_module("planlang.check")
    return module._check_cached.__wrapped__, "planlang.check._check_cached.__wrapped__"


def bench_check(sources: dict[str, str], rounds: int, target_ns: int) -> tuple[list[Row], str]:
    from RestrictedPython import compile_restricted

    check, which = uncached_check()
    rows = []
    for label, source in sources.items():
        cases: dict[str, Runner] = {
            "RestrictedPython compile_restricted": lambda s=source: compile_restricted(
                s, "plan.py", "exec"
            ),
            "planlang check (uncached)": lambda s=source: check(s, "plan.py"),
            "plain compile()": lambda s=source: compile(s, "plan.py", "exec"),
        }
        samples = measure(cases, rounds, target_ns)
        base = "RestrictedPython compile_restricted"
        for name in cases:
            ratio = paired_ratio(samples, name, base)
            goal, met = judged(ratio, 1.2 if name.startswith("planlang") else None)
            us = f"{statistics.median(samples[name]) / 1000:,.1f}"
            rows.append(row(f"check: {label}", name, us, f"{ratio:.2f}x", base, goal, met))
    return rows, which


def bench_execution(
    sources: dict[str, str], rounds: int, target_ns: int, stack: contextlib.ExitStack
) -> list[Row]:
    rows = []
    for label, source in sources.items():
        goal_value = WORKLOADS[label][1]
        cases: dict[str, Runner] = {}
        skipped: dict[str, str] = {}
        expected = cpython_runner(source, stack)()
        for name, (make, module) in EXECUTORS.items():
            if module is not None and importlib.util.find_spec(module) is None:
                skipped[name] = f"skipped: {module} is not installed (pip install '.[compare]')"
                continue
            if name == "pydantic-monty" and clock is CLOCKS["cpu"]:
                skipped[name] = "skipped: --clock cpu cannot see its worker process"
                continue
            try:
                runner = make(source, stack)
                got = runner()
            except Exception as error:  # noqa: BLE001 - report, never crash the benchmark
                skipped[name] = f"skipped: failed to run ({type(error).__name__}: {error})"[:200]
                continue
            if got != expected:
                skipped[name] = "skipped: its result differs from plain CPython's"
                continue
            cases[name] = runner
        samples = measure(cases, rounds, target_ns)
        for name in EXECUTORS:
            ref = REFERENCE.get((label, name), "")
            note = f"elsewhere: {ref}" if ref else ""
            if name in skipped:
                rows.append(row(label, name, "-", "-", BASELINE, "-", "-", skipped[name]))
                continue
            ratio = paired_ratio(samples, name, BASELINE)
            goal, met = judged(ratio, goal_value if name.startswith("planlang") else None)
            if goal_value is None and name.startswith("planlang"):
                goal, met = "(none set)", "-"
            us = f"{statistics.median(samples[name]) / 1000:,.1f}"
            rows.append(row(label, name, us, f"{ratio:.2f}x", BASELINE, goal, met, note))
    return rows


def bench_fresh_sandbox(rounds: int, target_ns: int) -> list[Row]:
    one_line = "x = 1"
    planlang.check(one_line)  # the source has been seen before: check's cache is warm
    code = compile(one_line, "<plan>", "exec")
    cases: dict[str, Runner] = {
        "fresh planlang Sandbox(host=...).run('x = 1')": lambda: planlang.Sandbox(
            host={"agent": agent}
        ).run(one_line),
        "exec('x = 1', {}) (string)": lambda: exec(one_line, {}),  # noqa: S102
        "exec(code, {}) (precompiled)": lambda: exec(code, {}),  # noqa: S102
    }
    samples = measure(cases, rounds, target_ns)
    rows = []
    box = "fresh planlang Sandbox(host=...).run('x = 1')"
    for base in ("exec('x = 1', {}) (string)", "exec(code, {}) (precompiled)"):
        us = f"{statistics.median(samples[base]) / 1000:,.2f}"
        rows.append(row("fresh sandbox, one line", base, us, "1.00x", base, "-", "-"))
    for base in ("exec('x = 1', {}) (string)", "exec(code, {}) (precompiled)"):
        ratio = paired_ratio(samples, box, base)
        goal, met = judged(ratio, 3.0)
        us = f"{statistics.median(samples[box]) / 1000:,.2f}"
        rows.append(row("fresh sandbox, one line", box, us, f"{ratio:.2f}x", base, goal, met))
    return rows


# -- output -------------------------------------------------------------------------------------


def markdown(rows: list[Row]) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r[h] for h in header) + " |" for r in rows]
    return "\n".join(lines)


START, END = "<!-- bench_planlang:start -->", "<!-- bench_planlang:end -->"


def write_results(path: Path, section: str) -> None:
    """Replace this benchmark's section of RESULTS.md, keeping any other sections."""
    block = f"{START}\n{section}\n{END}\n"
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n\n"
    if START in old and END in old:
        head, rest = old.split(START, 1)
        new = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        new = old.rstrip("\n") + "\n\n" + block
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--out", type=Path, help="write the table into this markdown file")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall: perf_counter_ns (default); cpu: process_time_ns")  # fmt: skip
    args = parser.parse_args(argv)
    global clock
    clock = CLOCKS[args.clock]
    rounds, target_ns = (5, 3_000_000) if args.quick else (21, 20_000_000)
    sources = {label: (PLANS / file).read_text(encoding="utf-8") for label, (file, _) in
               WORKLOADS.items()}  # fmt: skip
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        check_rows, which = bench_check(sources, rounds, target_ns)
        rows = check_rows + bench_execution(sources, rounds, target_ns, stack)
    rows += bench_fresh_sandbox(rounds, target_ns // 4)
    table = markdown(rows)
    command = "python benchmarks/bench_planlang.py " + " ".join(argv or sys.argv[1:])
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    versions = ", ".join(f"{m} {_version(m)}" for m in ("RestrictedPython", "smolagents",
                                                          "pydantic-monty"))  # fmt: skip
    section = "\n".join([
        "## planlang sandbox (issue 2)",
        "",
        f"Command: `{command.strip()}`  ",
        f"Date: {when}; Python {platform.python_version()} on {platform.machine()}, "
        f"nproc {os.cpu_count()}; {versions}.  ",
        f"{rounds} interleaved rounds per workload, each sample batched to about "
        f"{target_ns / 1e6:g} ms, gc off while timing, clock: {args.clock}. `median µs` is per "
        "run; `ratio` is the median of the per-round ratios to `baseline`. The check is "
        f"measured uncached through `{which}`.",
        "",
        table,
    ])  # fmt: skip
    print(section)
    print(f"\n(took {time.perf_counter() - started:.0f} s)")
    if args.out is not None:
        write_results(args.out, section)
    return 0


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
