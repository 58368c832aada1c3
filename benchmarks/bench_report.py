"""The HTML run report at 10,000 workers: file size, time to draw it, time for a browser to show it.

Two synthetic recorded runs side by side (the generator the tests use,
``tests/planlang/report_runs.py``): 100 and 10,000 workers. For each: the Python time to load the
recorded files and write the page, the page's size, and the time headless Chromium takes until
the page's load event, with style and layout done (the page records ``performance.now()``
then into ``body[data-rendered-ms]``), over several alternating rounds, fresh profile each.
The goal is under 5 MB and under 2 s at 10,000 workers; the 100-worker page is the baseline
on the same machine at the same moment, so a loaded machine shows up in both.

    python benchmarks/bench_report.py                      # prints the table
    python benchmarks/bench_report.py --out benchmarks/RESULTS_report.md
    python benchmarks/bench_report.py --events-overhead /path/to/base/checkout   # and the
        # runtime's CPU per worker against a checkout without the report's events
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "planlang"))  # the synthetic runs the tests draw

from report_runs import record_synthetic  # noqa: E402

from planlang.html_report import render_run  # noqa: E402
from planlang.timeline import load_timeline  # noqa: E402

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def browser_ms(page: Path, work: Path, chromium: str) -> tuple[float, float]:
    """(the page's own load-to-layout time, the browser process's wall time), in ms."""
    profile = work / f"profile-{time.monotonic_ns()}"
    began = time.perf_counter()
    done = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=300)  # fmt: skip
    wall = (time.perf_counter() - began) * 1000
    shutil.rmtree(profile, ignore_errors=True)
    found = re.search(r'data-rendered-ms="([0-9.]+)"', done.stdout)
    if not found:
        raise SystemExit(f"the page never finished rendering: {done.stderr[-500:]}")
    return float(found.group(1)), wall


PER_WORKER = """
import json, os, sys, tempfile, time
from runtime import LLM, Budget, Ledger, Reply, Run
def client(model, messages, **params):
    return Reply(json.dumps({"answer": "x"}), credits=0.001, model=model)
S = {"type": "object", "properties": {"answer": {"type": "string"}}}
d = tempfile.mkdtemp()
llm = LLM(Ledger(os.path.join(d, "a.db")), client=client, budget=Budget(None))
run = Run("p", llm=llm, concurrency=16, max_agents=10**6, events_path=os.path.join(d, "e.jsonl"))
n = 4000
began = time.process_time()
run.run_sync(lambda r: r.parallel([lambda i=i: r.agent(f"q {i}", schema=S) for i in range(n)]))
print((time.process_time() - began) / n * 1e6)
"""


def events_overhead(base: str, rounds: int) -> str:
    """CPU per worker of a 4,000-worker run: the runtime at ``base`` against this one."""
    cpu: dict[str, list[float]] = {"base": [], "this": []}
    for _ in range(rounds):  # alternate, so both see the same load
        for name, path in (("base", base), ("this", str(ROOT))):
            env = {**os.environ, "PYTHONPATH": path}
            done = subprocess.run([sys.executable, "-c", PER_WORKER], capture_output=True,
                                  text=True, check=True, env=env)  # fmt: skip
            cpu[name].append(float(done.stdout))
    old, new = statistics.median(cpu["base"]), statistics.median(cpu["this"])
    ratios = ", ".join(f"{b / a:.2f}" for a, b in zip(cpu["base"], cpu["this"], strict=True))
    return (
        f"Runtime cost of the report's events: a 4,000-worker `parallel` at concurrency 16 "
        f"(in-process client, ledger and events on disk), CPU per worker, median of {rounds} "
        f"alternating rounds: {old:.0f} us at `{base}`, {new:.0f} us here "
        f"({new / old - 1:+.1%}; per-round ratios {ratios})."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None, help="Write the results section to this file.")
    parser.add_argument("--events-overhead", metavar="BASE", default=None,
                        help="Also compare CPU per worker with the runtime of a checkout at BASE "
                        "(e.g. one without the report's events).")  # fmt: skip
    args = parser.parse_args()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pages = {}
        for workers in (100, 10_000):
            folder = record_synthetic(work / f"run-{workers}", workers)
            began = time.perf_counter()
            html = render_run(load_timeline(folder))
            draw = time.perf_counter() - began
            page = work / f"run-{workers}.html"
            page.write_text(html, encoding="utf-8")
            pages[workers] = (page, draw)
        timings: dict[int, list[tuple[float, float]]] = {w: [] for w in pages}
        for _ in range(args.rounds):  # alternate, so both see the same load
            for workers, (page, _) in pages.items():
                timings[workers].append(browser_ms(page, work, chromium))
        for workers, (page, draw) in pages.items():
            page_ms = statistics.median(t[0] for t in timings[workers])
            wall_ms = statistics.median(t[1] for t in timings[workers])
            rows.append((workers, page.stat().st_size, draw, page_ms, wall_ms))
    small, big = rows
    lines = [
        "| workers | page bytes | load + write the page (s) | browser: load to layout, median (ms) "
        "| browser process wall, median (ms) |",
        "|---|---|---|---|---|",
        *(f"| {w:,} | {b:,} | {d:.2f} | {p:.0f} | {x:.0f} |" for w, b, d, p, x in rows),
        "",
        f"Ratio 10,000 / 100 workers: page {big[1] / small[1]:.1f}x bytes, browser "
        f"{big[3] / small[3]:.1f}x (load to layout). {args.rounds} rounds each, alternating; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
    ]
    if args.events_overhead:
        lines += ["", events_overhead(args.events_overhead, max(args.rounds, 6))]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(
            "# The HTML run report at 10,000 workers\n\n"
            f"Command: `python benchmarks/bench_report.py {' '.join(sys.argv[1:])}` "
            "(see the script's docstring for what is measured).\n\n" + text + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
