"""Many runners, one store (issue 16): calls per second through the front door on PostgreSQL
beside SQLite, at 1, 4 and 16 runner processes, side by side in one run.

    python benchmarks/bench_shared.py [--calls 4000] [--runners 1,4,16] [--repeat 3]
                                      [--url postgresql://...] [--out RESULTS_shared.md]

Each runner is a process calling ``Run.agent`` at concurrency 16 with a zero-latency client,
so what is measured is the store, not a model. The ``--calls`` are split evenly among the
runners, every question asked once (each call is paid: lookup, claim, budget, store). The
runners open their stores, then wait for one go signal; throughput is all calls over the time
from the first start to the last finish. SQLite: one ledger file (claims across processes),
each runner its own budget (SQLite has no shared one). PostgreSQL: one ledger and one shared
budget with a cap on one server (``--url``, else a throwaway local server started here, with
``fsync = off``, as in the tests). Configurations are interleaved ``--repeat`` times and the
medians are reported.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime import LLM, Budget, Ledger, Reply, Run, Settings  # noqa: E402

SETTINGS = Settings(default_price=0.001, concurrency=16)


def zero_latency(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
    return Reply(text="ok", prompt_tokens=1, completion_tokens=1)


def runner(location: str, name: str, first: int, calls: int, go: Path) -> None:
    """One runner process: open the stores, wait for ``go``, make ``calls`` paid calls."""
    ledger = Ledger(location)
    budget: Budget
    if location.startswith("postgresql"):
        from runtime.shared_budget import SharedBudget

        budget = SharedBudget(location, name)
    else:
        budget = Budget(None)
    settings = SETTINGS.model_copy(update={"max_agents": calls + 1})
    run = Run("bench", llm=LLM(ledger, client=zero_latency, budget=budget, settings=settings),
              settings=settings)  # fmt: skip
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    started = time.time()
    questions = range(first, first + calls)
    run.run_sync(lambda r: r.parallel([lambda i=i: r.agent(f"{name} q {i}") for i in questions]))
    print(f"{started} {time.time()}", flush=True)
    ledger.close()
    budget.close()


def measure(location: str, runners: int, calls: int, tag: str) -> float:
    """Calls per second of ``runners`` processes sharing ``location``."""
    share = calls // runners
    with tempfile.TemporaryDirectory() as tmp:
        go = Path(tmp) / "go"
        if location.startswith("postgresql"):
            from runtime.shared_budget import SharedBudget

            SharedBudget(location, tag, cap=1e9).close()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        command = [sys.executable, __file__, "--runner", location, tag]
        children = [
            subprocess.Popen(
                [*command, str(n * share), str(share), str(go)],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )  # fmt: skip
            for n in range(runners)
        ]
        for child in children:
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
        go.touch()
        spans = []
        for child in children:
            out, _ = child.communicate(timeout=600)
            assert child.returncode == 0, f"a runner failed ({child.returncode})"
            spans.append(tuple(map(float, out.split())))
    return share * runners / (max(end for _, end in spans) - min(start for start, _ in spans))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--runners", default="1,4,16")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--url", default=None, help="a server to use (default: start one)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--runner", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.runner:
        location, name, first, calls, go = args.runner
        runner(location, name, int(first), int(calls), Path(go))
        return
    cluster = None
    url = args.url
    if url is None:
        from runtime.pg_cluster import Cluster, bin_dir

        found = bin_dir()
        if found is None:
            sys.exit("No PostgreSQL binaries (apt-get install postgresql) and no --url given.")
        cluster = Cluster(found)
    counts = [int(n) for n in args.runners.split(",")]
    results: dict[tuple[str, int], list[float]] = {}
    try:
        for rep in range(args.repeat):
            for runners in counts:
                with tempfile.TemporaryDirectory() as tmp:
                    db = cluster.new_database() if cluster is not None else url
                    for backend, location in (("sqlite", str(Path(tmp) / "answers.db")),
                                              ("postgresql", db)):  # fmt: skip
                        rate = measure(location, runners, args.calls, f"r{rep}n{runners}")
                        results.setdefault((backend, runners), []).append(rate)
                        print(f"{backend:>10} {runners:>2} runners: {rate:,.0f} calls/s",
                              flush=True)  # fmt: skip
    finally:
        if cluster is not None:
            cluster.remove()
    report(results, counts, args)


def report(results: dict[tuple[str, int], list[float]], counts: list[int], args: Any) -> None:
    lines = [
        "# Shared-store benchmark results",
        "",
        f"Command: `python benchmarks/bench_shared.py --calls {args.calls} --runners "
        f"{args.runners} --repeat {args.repeat}`  ",
        f"Machine: Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        "Calls per second through the front door (`Run.agent`, every call paid), all runners "
        "together, median of the repeats (runs in brackets).",
        "",
        "| runners | SQLite file | PostgreSQL (ledger + shared budget) | PostgreSQL / SQLite |",
        "|---|---|---|---|",
    ]
    for n in counts:
        sq, pg = results[("sqlite", n)], results[("postgresql", n)]
        runs = ", ".join(f"{r:,.0f}" for r in sq), ", ".join(f"{r:,.0f}" for r in pg)
        lines.append(f"| {n} | {statistics.median(sq):,.0f} ({runs[0]}) | "
                     f"{statistics.median(pg):,.0f} ({runs[1]}) | "
                     f"{statistics.median(pg) / statistics.median(sq):.2f} |")  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        out = Path(args.out)
        notes = ""
        marker = "<!-- notes below are kept when the table is rewritten -->"
        if out.exists() and marker in out.read_text():
            notes = out.read_text().split(marker, 1)[1]
        out.write_text(text + "\n" + marker + notes)


if __name__ == "__main__":
    main()
