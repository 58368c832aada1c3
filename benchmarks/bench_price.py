"""Pricing benchmark (issue 4): a plan of 1,000 worker calls, priced with 5 rehearsals.

Reports the time of ``planlang.price`` and, side by side in the same run, the ratio of one
rehearsal to one scripted real run of the same plan (a zero-latency scripted client, an
in-memory ledger): the stand-in should not be the bottleneck.

    python benchmarks/bench_price.py [--repeats 3] [--out benchmarks/RESULTS_price.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import planlang
from planlang.binding import run_host_words
from planlang.price import price
from planlang.rehearse import rehearse
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

SCHEMA = {
    "type": "object",
    "properties": {
        "findings": {"type": "array", "maxItems": 2,
                     "items": {"type": "object", "properties": {"line": {"type": "integer"}},
                               "required": ["line"]}},
        "ok": {"type": "boolean"},
    },
    "required": ["findings", "ok"],
}  # fmt: skip

PLAN = f"""
S = {json.dumps(SCHEMA)}
phase("scan")
scans = parallel([lambda i=i: agent(f"scan part {{i}}", schema=S, model="scan")
                  for i in range(800)])
phase("check")
checks = parallel([lambda i=i: agent(f"check part {{i}}", schema=S, model="skeptic")
                   for i in range(200)])
result = sum(len(s["findings"]) for s in scans + checks if s)
"""

SETTINGS = Settings(
    roles={"scan": {"model": "small", "price": 0.01}, "skeptic": {"model": "big", "price": 0.05}},
    max_agents=2000,
    concurrency=16,
)


def scripted(model, messages, **params):
    data = {"findings": [{"line": 1}], "ok": True}
    return Reply(text=json.dumps(data), data=data)


def scripted_run() -> float:
    llm = LLM(Ledger(":memory:"), client=scripted, budget=Budget(None), settings=SETTINGS)
    run = Run("scripted", llm=llm, settings=SETTINGS)
    words, _ = run_host_words(run)
    box = planlang.Sandbox(host=words)
    start = time.perf_counter()
    run.run_sync(lambda r: box.run(PLAN))
    return time.perf_counter() - start


def one_rehearsal() -> float:
    checked = planlang.check(PLAN)
    start = time.perf_counter()
    rehearse(checked, seed=0, settings=SETTINGS)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    price_times, rehearsal_times, run_times = [], [], []
    for _ in range(args.repeats):  # interleaved, so drift hits all three alike
        start = time.perf_counter()
        report = price(PLAN, settings=SETTINGS, seeds=5)
        price_times.append(time.perf_counter() - start)
        rehearsal_times.append(one_rehearsal())
        run_times.append(scripted_run())
    assert report.total["calls"].median == 1000, report.total
    med = statistics.median
    ratio = med(rehearsal_times) / med(run_times)
    lines = [
        "## Pricing (issue 4)",
        "",
        f"Command: `python benchmarks/bench_price.py --repeats {args.repeats}`; "
        f"{time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {os.cpu_count()} cores.",
        "",
        "| measure | median | runs |",
        "|---|---|---|",
        f"| price: 1,000 worker calls x 5 rehearsals | {med(price_times):.2f} s | "
        f"{', '.join(f'{t:.2f}' for t in price_times)} |",
        f"| one rehearsal (1,000 calls, stand-in) | {med(rehearsal_times):.3f} s | "
        f"{', '.join(f'{t:.3f}' for t in rehearsal_times)} |",
        f"| one scripted run (1,000 calls, zero-latency client, ledger) | {med(run_times):.3f} s |"
        f" {', '.join(f'{t:.3f}' for t in run_times)} |",
        f"| rehearsal / scripted run | **{ratio:.2f}x** | |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
