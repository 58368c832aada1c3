"""What a plan process's own root (``identity._own_root``) costs it, before it says ready.

    python benchmarks/bench_own_root.py [ROUNDS]

Two pools side by side, one with the layer and one without (``without=("own root",)``),
taken in turn, ROUNDS times each (default 200): each child reports its own CPU time and minor
page faults from its fork to where a plan would run (a test-only probe reads getrusage, which
a fork starts at zero). Prints the medians and the median and mean of the paired differences.
Then the whole life of a plan process, its exit included: one-line plans in chunks of 100,
through each pool in turn, chunk by chunk; the CPU its fork server's reaped children used
(``cutime`` and ``cstime`` of the server's /proc stat, in clock ticks) per plan, median of
ROUNDS // 20 chunks.
Needs root (a uid of its own) and user namespaces, as the layer does.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits

PROBE = (
    "import resource\nu = resource.getrusage(resource.RUSAGE_SELF)\n"
    "result = [u.ru_utime + u.ru_stime, u.ru_minflt]\n"
)


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    pools = {
        "own root": Pool(1, probes=True),
        "without": Pool(1, probes=True, without=("own root",)),
    }
    try:
        found = {name: on for name, on, _detail in pools["own root"].layers()}
        if not found.get("own root"):
            print("the own root layer is not active here: nothing to measure")
            return 1
        seen: dict[str, list[list[float]]] = {name: [] for name in pools}
        for _ in range(rounds):
            for name, pool in pools.items():
                seen[name].append(list(run_probe(pool, PROBE)))
        lives: dict[str, list[float]] = {name: [] for name in pools}
        boxes = {name: _box(pool) for name, pool in pools.items()}
        for _ in range(max(3, rounds // 20)):  # in turn, as the machine's load moves
            for name, pool in pools.items():
                lives[name].append(_lifetime(pool, boxes[name]))
    finally:
        for pool in pools.values():
            pool.close()
    for name, rows in seen.items():
        cpu, faults = zip(*rows, strict=True)
        print(f"{name:9s} CPU from fork to the plan {statistics.median(cpu) * 1e3:.2f} ms, "
              f"minor faults {statistics.median(faults):.0f}")  # fmt: skip
    paired = [a[0] - b[0] for a, b in zip(seen["own root"], seen["without"], strict=True)]
    print(f"paired difference: median {statistics.median(paired) * 1e3:.3f} ms, "
          f"mean {statistics.mean(paired) * 1e3:.3f} ms over {rounds} rounds")  # fmt: skip
    for name, chunks in lives.items():
        print(f"{name:9s} CPU of a plan process's whole life {statistics.median(chunks):.2f} ms"
              f" (median of {len(chunks)} chunks of {CHUNK} plans)")  # fmt: skip
    return 0


CHUNK = 100


def _children_cpu(pool: Pool) -> float:
    """Seconds of CPU the pool's fork server's reaped children used."""
    assert pool._zygote is not None
    with open(f"/proc/{pool._zygote.process.pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _box(pool: Pool) -> Sandbox:
    box = Sandbox(limits=Limits(seconds=10), isolation="process")
    box._pool = pool  # type: ignore[attr-defined]
    box.run("result = 1\n")
    return box


def _lifetime(pool: Pool, box: Sandbox) -> float:
    """Milliseconds of CPU per plan process, fork to exit, over a chunk of one-line plans."""
    before = _children_cpu(pool)
    for _ in range(CHUNK):
        box.run("result = 1\n")
    time.sleep(0.3)  # the last ones reaped
    return (_children_cpu(pool) - before) / CHUNK * 1e3


if __name__ == "__main__":
    sys.exit(main())
