"""Does it matter which core runs a plan? Plain ``exec`` on the main thread against the same on
planlang's deep-stack thread, interleaved.

    python benchmarks/placement.py            # the OS places both threads
    taskset -c 0 python benchmarks/placement.py   # both on one core

Plans that can loop run on a thread of their own (``planlang/stack.py``). If the machine's cores
differ in speed, an unpinned benchmark measures where that thread landed as well as planlang,
which is why ``bench_planlang.py`` pins itself to one CPU by default.
"""

from __future__ import annotations

import gc
import statistics
import time
from pathlib import Path

from planlang.sandbox.deep_stack import run_on_deep_stack, stack_for

PLAN = Path(__file__).resolve().parent / "plans" / "compute_glue.py"


def main(rounds: int = 21, batch: int = 20) -> None:
    code = compile(PLAN.read_text(encoding="utf-8"), str(PLAN), "exec")

    def plain() -> object:
        namespace: dict[str, object] = {}
        exec(code, namespace)  # noqa: S102 - the thing measured
        return namespace["result"]

    stack = stack_for(10_000_000)
    cases = {
        "main thread": plain,
        "deep-stack thread": lambda: run_on_deep_stack(plain, stack, lambda: None),
    }
    for run in cases.values():
        for _ in range(5):
            run()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, run in cases.items():
            gc.collect()
            gc.disable()
            started = time.perf_counter_ns()
            for _ in range(batch):
                run()
            samples[name].append((time.perf_counter_ns() - started) / batch)
            gc.enable()
    base = samples["main thread"]
    for name, values in samples.items():
        ratio = statistics.median(a / b for a, b in zip(values, base, strict=True))
        per_run = statistics.median(values) / 1000
        print(f"{name}: {per_run:,.0f} us per run, {ratio:.2f}x the main thread")


if __name__ == "__main__":
    main()
