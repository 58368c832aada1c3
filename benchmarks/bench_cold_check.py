"""A cold ``planlang check`` beside a cold ``import RestrictedPython`` (issue 11's goal: 3x).

Each sample is a fresh interpreter, so it measures what a user waits for: the interpreter's
start, the imports the command needs, the check and the exit. The two commands are interleaved
(ABAB...), so the machine's load falls on both alike, and the medians are compared.

    python benchmarks/bench_cold_check.py [--rounds 21] [--out benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_block import write_block  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "examples" / "hello_plan.py"
COMMANDS = {
    "python -c 'import RestrictedPython'": [sys.executable, "-c", "import RestrictedPython"],
    "planlang check examples/hello_plan.py": [sys.executable, "-m", "planlang", "check", str(PLAN)],
}
GOAL = 3.0


def sample(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    for command in COMMANDS.values():
        sample(command)  # warm the file cache, as a user's second run is
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for i in range(args.rounds):
        order = list(COMMANDS) if i % 2 == 0 else list(reversed(COMMANDS))
        for name in order:
            times[name].append(sample(COMMANDS[name]))
    base, ours = (statistics.median(times[name]) for name in COMMANDS)
    ratio = ours / base
    load = os.getloadavg()[0]
    lines = [
        "## Cold check (issue 11)",
        "",
        f"Command: `python benchmarks/bench_cold_check.py --rounds {args.rounds}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load:.1f}; "
        f"{args.rounds} interleaved rounds, medians of fresh interpreters.",
        "",
        "| command | median ms |",
        "|---|---|",
        *(f"| `{name}` | {statistics.median(t) * 1000:.1f} |" for name, t in times.items()),
        "",
        f"Ratio: **{ratio:.2f}x** (goal ≤ {GOAL:g}x: {'met' if ratio <= GOAL else 'not met'}).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_block(args.out, "bench_cold_check", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
