"""What kind inference buys: instructions per run of each workload, with it and without it.

Instruction counts from callgrind (``valgrind --tool=callgrind``) do not move with the machine's
load, which wall time on this shared VM does by 2x. One workload run costs
``(Ir(k runs) - Ir(0 runs)) / k``, both after one warm run, with ``PYTHONHASHSEED=0``.

    python benchmarks/bench_inference.py [--runs 3] [--out benchmarks/RESULTS.md]
    python benchmarks/bench_inference.py --child WORKLOAD on|off K   (what callgrind runs)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import callgrind  # noqa: E402
from results_block import write_block  # noqa: E402

HERE = Path(__file__).resolve().parent
WORKLOADS = ("compute_glue", "host_calls", "realistic_plan")


def child(workload: str, mode: str, runs: int) -> None:
    sys.path.insert(0, str(HERE))
    import bench_planlang as bench

    import planlang

    source = (bench.PLANS / f"{workload}.py").read_text(encoding="utf-8")
    checked = planlang.check(source, optimise=mode == "on")
    box = planlang.Sandbox(host=bench.HOST, limits=planlang.Limits(seconds=3600))
    box.run(checked)  # warm
    for _ in range(runs):
        box.run(checked)


def instructions(workload: str, mode: str, runs: int, folder: Path) -> int:
    return callgrind.instructions(
        __file__, ["--child", workload, mode, str(runs)], folder / f"cg.{workload}.{mode}.{runs}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", nargs=3, metavar=("WORKLOAD", "MODE", "K"))
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload in WORKLOADS:
            per_run = {}
            for mode in ("on", "off"):
                zero = instructions(workload, mode, 0, Path(tmp))
                more = instructions(workload, mode, args.runs, Path(tmp))
                per_run[mode] = (more - zero) / args.runs
            rows.append((workload, per_run["on"], per_run["off"]))
    lines = [
        "## Kind inference: instructions per run (issue 11)",
        "",
        f"Command: `python benchmarks/bench_inference.py --runs {args.runs}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; callgrind, "
        "PYTHONHASHSEED=0, (Ir(k) - Ir(0)) / k.",
        "",
        "| workload | with inference (M instr.) | without (M instr.) | without / with |",
        "|---|---|---|---|",
        *(f"| {w} | {on / 1e6:.1f} | {off / 1e6:.1f} | {off / on:.2f}x |" for w, on, off in rows),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_block(args.out, "bench_inference", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
