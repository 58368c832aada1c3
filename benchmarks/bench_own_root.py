"""What a plan process's own root (``identity._own_root``) costs it, before it says ready.

    python benchmarks/bench_own_root.py [ROUNDS]

Two pools side by side, one with the layer and one without (``without=("own root",)``),
taken in turn, ROUNDS times each (default 200): each child reports its own CPU time and minor
page faults from its fork to where a plan would run (a test-only probe reads getrusage, which
a fork starts at zero). Prints the medians and the median and mean of the paired differences.
Needs root (a uid of its own) and user namespaces, as the layer does.
"""

from __future__ import annotations

import statistics
import sys

from planlang.isolation.pool import Pool
from planlang.isolation.testing import run_probe

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
