"""Host instructions of one rehearsal of bench_price.py's plan (1,000 worker calls), counted by
callgrind: a measure that does not move with the machine's load, as wall and CPU time here do.

Only the host process is counted (the fork server and the plan processes it starts are exec'd
and run natively), and only one rehearsal, after a warm one (instrumentation is turned on and
off around it with ``callgrind_control``). Each copy is a planlang source directory put first
on ``PYTHONPATH`` (a ``git archive main`` copy, this worktree).

    python benchmarks/price_instructions.py /tmp/main . --modes process,inprocess
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measured(mode: str, seeds: int) -> None:
    """Inside valgrind: a warm price, then ``seeds`` rehearsals counted."""
    sys.path.insert(0, str(HERE))
    import bench_price

    from planlang.price import price
    from planlang.sandbox.limits import Limits

    slow = Limits(seconds=3000)  # valgrind's pace must end nothing
    price(bench_price.PLAN, settings=bench_price.SETTINGS, seeds=1, isolation=mode, limits=slow)
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "--instr=on", pid], capture_output=True, check=True)
    price(bench_price.PLAN, settings=bench_price.SETTINGS, seeds=seeds, isolation=mode,
          limits=slow)  # fmt: skip
    subprocess.run(["callgrind_control", "--instr=off", pid], capture_output=True, check=True)
    subprocess.run(["callgrind_control", "--dump", pid], capture_output=True, check=True)
    os._exit(0)  # the counts are dumped: no finalization to count or wait for


def count(copy: Path, mode: str, seeds: int) -> int:
    python = os.path.realpath(sys.executable)  # not a shim: callgrind follows no children
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
             python, __file__, "--measured", mode, str(seeds)],
            check=True, capture_output=True, cwd=folder,
            env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(copy.resolve())},
        )  # fmt: skip
        dumps = Path(folder).glob("callgrind.out*")
        lines = [line for dump in dumps for line in dump.read_text().splitlines()]
        totals = [int(line.split()[1]) for line in lines if line.startswith("totals:")]
    return max(totals)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("copies", nargs="+", type=Path, help="planlang source directories")
    parser.add_argument("--modes", default="process,inprocess")
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    print("| mode | copy | host instructions | per worker call |\n|---|---|---|---|")
    for mode in args.modes.split(","):
        for copy in args.copies:
            total = count(copy, mode, args.seeds)
            print(f"| {mode} | {copy} | {total / 1e6:,.0f} M | "
                  f"{total / (1000 * args.seeds) / 1e3:,.0f} k |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measured"]:
        measured(sys.argv[2], int(sys.argv[3]))
    sys.exit(main())
