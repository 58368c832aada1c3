"""Pricing side by side: ``price`` of bench_price.py's plan in two copies of planlang, interleaved.

Each copy (a directory put first on ``PYTHONPATH``, e.g. a ``git archive main`` copy and this
worktree) runs in a process of its own that stays up; rounds alternate between them, so the
machine's drift in load hits both alike. A round is one
``price(bench_price.PLAN, settings=bench_price.SETTINGS, seeds=5, isolation=MODE)``; the process
reports its wall time, the host's CPU time, and the CPU time of the plan processes it used (read
from /proc as each run ends, so a plan process that is already gone is missed: a lower bound).

    git archive main | tar -x -C /tmp/main
    python benchmarks/price_side_by_side.py /tmp/main . --modes process,inprocess --rounds 4
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def serve() -> None:
    """One copy's side: a line with a mode in, a line with the times of one price out."""
    sys.path.insert(0, str(HERE))
    import bench_price

    import planlang.isolation.parent as parent
    from planlang.price import price

    tick = os.sysconf("SC_CLK_TCK")
    children: list[float] = []
    end = parent._Session._end

    def noted_end(session: parent._Session, error: object) -> None:
        try:  # utime + stime of the plan's process, just before it is let go
            fields = Path(f"/proc/{session.child.pid}/stat").read_text().rsplit(")", 1)[1].split()
            children.append((int(fields[11]) + int(fields[12])) / tick)
        except OSError:
            pass
        end(session, error)  # type: ignore[arg-type]

    parent._Session._end = noted_end  # type: ignore[method-assign]
    for mode in ("process", "inprocess"):  # warm: the pool, the imports, the caches
        price(bench_price.PLAN, settings=bench_price.SETTINGS, seeds=1, isolation=mode)
    for line in sys.stdin:
        children.clear()
        cpu, wall = time.process_time(), time.perf_counter()
        report = price(bench_price.PLAN, settings=bench_price.SETTINGS, seeds=5,
                       isolation=line.strip())  # fmt: skip
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert report.ok and report.total["calls"].median == 1000, report.problems
        print(f"{wall} {cpu} {sum(children)}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("copies", nargs=2, type=Path, help="two planlang source directories")
    parser.add_argument("--modes", default="process,inprocess")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    names = [str(path) for path in args.copies]
    procs = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env={**os.environ, "PYTHONPATH": str(Path(name).resolve())},
        )
        for name in names
    }  # fmt: skip
    modes = args.modes.split(",")
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    print("| round | mode | copy | wall s | host CPU s | plan processes' CPU s | load |")
    print("|---|---|---|---|---|---|---|")
    for round_ in range(args.rounds):
        for mode in modes:
            for name in names if round_ % 2 == 0 else names[::-1]:
                proc = procs[name]
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(mode + "\n")
                proc.stdin.flush()
                wall, cpu, children = map(float, proc.stdout.readline().split())
                rows.setdefault((mode, name), []).append((wall, cpu, children))
                print(f"| {round_ + 1} | {mode} | {name} | {wall:.2f} | {cpu:.2f} | "
                      f"{children:.2f} | {os.getloadavg()[0]:.1f} |", flush=True)  # fmt: skip
    print("\n| mode | copy | median wall s | median host CPU s |\n|---|---|---|---|")
    for (mode, name), found in rows.items():
        print(f"| {mode} | {name} | {statistics.median(r[0] for r in found):.2f} | "
              f"{statistics.median(r[1] for r in found):.2f} |")  # fmt: skip
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
        sys.exit(0)
    sys.exit(main())
