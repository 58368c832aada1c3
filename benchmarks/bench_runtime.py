"""Runtime benchmarks (issue 3, Performance), measured side by side in one process.

    python benchmarks/bench_runtime.py [--calls 10000] [--repeat 5] [--out RESULTS_runtime.md]

1. Front-door overhead: N calls through ``Run.agent`` (zero-latency client, on-disk ledger)
   against the same client called from a bare thread pool. The two are interleaved
   ``--repeat`` times and the medians are reported: on a busy machine single runs swing by 2x.
2. Parallel efficiency: 200 workers of a fixed-latency client at concurrency 16, against the
   ideal ``ceil(200/16) x latency``.
3. Barrier waste: scan-then-verify on log-normal latencies, ``parallel`` twice (a barrier)
   against ``stream(..., then=verify)``.

``--floor`` adds a diagnostic: the least a front door can do under issue 3's contracts (key,
ledger lookup, budget reserve/settle, a restamped reply, a compressed row committed before the
answer returns, a record and three events), written as one tight function on the same pool,
against the bare pool. It shows how much of the gap the contracts themselves cost. A second
floor keeps only what crash recovery cannot do without: one committed SQLite row per answer
(no key, lookup, compression, budget or records).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runtime import LLM, Budget, Ledger, Reply, Run, Settings
from runtime.canonical import dumps

SETTINGS = Settings(default_price=0.0, concurrency=16)
NOTES = "<!-- notes below are kept when the table is rewritten -->"


def zero_latency(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
    return Reply(text="ok", prompt_tokens=1, completion_tokens=1)


def front_door(calls: int, concurrency: int) -> dict[str, float]:
    """One side-by-side measurement: the front door, then the bare pool right after."""
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(Path(tmp) / "bench.db")
        run = Run("overhead", llm=LLM(ledger, client=zero_latency, settings=SETTINGS),
                  concurrency=concurrency, max_agents=calls)  # fmt: skip
        started, cpu = time.perf_counter(), time.process_time()
        run.run_sync(lambda r: r.parallel([lambda i=i: r.agent(f"q {i}") for i in range(calls)]))
        through_run = time.perf_counter() - started
        run_cpu = time.process_time() - cpu
        ledger.close()
    bare, bare_cpu = bare_pool(calls, concurrency)
    # CPU seconds of this process (all threads) per call: steadier than wall time when other
    # programs load the machine, since it does not count time spent waiting for a core.
    return {"run_s": through_run, "bare_s": bare, "run_rate": calls / through_run,
            "bare_rate": calls / bare, "ratio": through_run / bare,
            "run_cpu_us": run_cpu / calls * 1e6, "bare_cpu_us": bare_cpu / calls * 1e6}  # fmt: skip


def bare_pool(calls: int, concurrency: int) -> tuple[float, float]:
    """Wall and CPU seconds of the client called from a bare thread pool."""
    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(concurrency) as pool:
        futures = [
            pool.submit(zero_latency, "m", [{"role": "user", "content": f"q {i}"}])
            for i in range(calls)
        ]
        for future in futures:
            future.result()
    return time.perf_counter() - started, time.process_time() - cpu


_SCHEMA = """CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL,
    role TEXT, sample INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, seconds REAL NOT NULL, credits REAL NOT NULL,
    created REAL NOT NULL, reply BLOB NOT NULL)"""


def _answers_db(path: Path) -> sqlite3.Connection:
    """A ledger-shaped table in WAL mode, as the runtime's ledger opens one."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(_SCHEMA)
    return db


def minimal_front_door(calls: int, concurrency: int) -> dict[str, float]:
    """The contract-mandated work only, in one function on a bare pool; then the bare pool."""
    tail = ',"model":"m","params":{},"sample":0}'
    insert = "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    lock, log_lock = threading.Lock(), threading.Lock()
    budget = Budget(None)
    events: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []

    with tempfile.TemporaryDirectory() as tmp:
        db = _answers_db(Path(tmp) / "floor.db")

        def agent(prompt: str) -> str:
            messages = [{"role": "user", "content": prompt}]
            record: dict[str, Any] = {"prompt": prompt, "messages": messages, "replies": []}
            key = hashlib.sha256(('{"messages":' + dumps(messages) + tail).encode()).hexdigest()
            with lock:
                db.execute("SELECT reply FROM answers WHERE key = ?", (key,)).fetchone()
            reservation = budget.admit(0.0)
            got = zero_latency("m", list(messages))
            reply = Reply(got.text, got.finish, got.prompt_tokens, got.completion_tokens,
                          got.seconds, "m", got.data, 0.0, False, False, None, 0)  # fmt: skip
            packer = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS, 4)
            blob = packer.compress(reply.to_json().encode()) + packer.flush()
            with lock:
                db.execute(insert, (key, "m", None, 0, 1, 1, 0.0, 0.0, time.time(), blob))
            budget.settle(reservation, 0.0)
            record["replies"].append({"text": reply.text})
            with log_lock:
                for kind in ("worker_started", "call", "worker_done"):
                    events.append({"seq": len(events) + 1, "kind": kind})
                records.append(record)
            return reply.text

        started, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(concurrency) as pool:
            for future in [pool.submit(agent, f"q {i}") for i in range(calls)]:
                future.result()
        floor, floor_cpu = time.perf_counter() - started, time.process_time() - cpu
        db.close()
    bare, bare_cpu = bare_pool(calls, concurrency)
    return {"ratio": floor / bare, "floor_cpu_us": floor_cpu / calls * 1e6,
            "bare_cpu_us": bare_cpu / calls * 1e6}  # fmt: skip


def row_floor(calls: int, concurrency: int) -> dict[str, float]:
    """The bare pool plus one committed row per answer, and nothing else; then the bare pool."""
    insert = "INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    lock = threading.Lock()
    blob = b"x" * 130  # about the size of a compressed reply
    with tempfile.TemporaryDirectory() as tmp:
        db = _answers_db(Path(tmp) / "rows.db")

        def answer(i: int) -> Reply:
            reply = zero_latency("m", [{"role": "user", "content": f"q {i}"}])
            with lock:
                db.execute(insert, (f"k{i}", "m", None, 0, 1, 1, 0.0, 0.0, 0.0, blob))
            return reply

        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            for future in [pool.submit(answer, i) for i in range(calls)]:
                future.result()
        rows = time.perf_counter() - started
        db.close()
    bare, _ = bare_pool(calls, concurrency)
    return {"ratio": rows / bare}


def front_door_medians(calls: int, concurrency: int, repeat: int) -> dict[str, Any]:
    """Interleaved repetitions; medians of the rates and of the per-repetition ratio."""
    runs = [front_door(calls, concurrency) for _ in range(repeat)]
    for number, fd in enumerate(runs, 1):
        line = f"  front door run {number}: {fd['run_rate']:,.0f} calls/s, "
        line += f"bare {fd['bare_rate']:,.0f} calls/s, ratio {fd['ratio']:.2f}x; CPU per call "
        line += f"{fd['run_cpu_us']:.0f} us vs bare {fd['bare_cpu_us']:.0f} us"
        print(line, file=sys.stderr)
    median = {name: statistics.median(fd[name] for fd in runs) for name in runs[0]}
    return {**median, "runs": runs}


def parallel_efficiency(workers: int, concurrency: int, latency: float) -> dict[str, float]:
    def fixed(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        time.sleep(latency)
        return Reply(text="ok")

    run = Run("efficiency", llm=LLM(Ledger(":memory:"), client=fixed, settings=SETTINGS),
              concurrency=concurrency)  # fmt: skip
    started = time.perf_counter()
    run.run_sync(lambda r: r.parallel([lambda i=i: r.agent(f"w {i}") for i in range(workers)]))
    wall = time.perf_counter() - started
    ideal = math.ceil(workers / concurrency) * latency
    return {"wall_s": wall, "ideal_s": ideal, "ratio": wall / ideal}


def lognormal_latency(prompt: str, median: float, sigma: float) -> float:
    seed = int(hashlib.sha256(prompt.encode()).hexdigest()[:12], 16)
    return median * math.exp(random.Random(seed).gauss(0.0, sigma))


def barrier_waste(scans: int, concurrency: int, median: float, sigma: float) -> dict[str, float]:
    def heavy_tailed(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        prompt = messages[-1]["content"]
        time.sleep(lognormal_latency(prompt, median, sigma))
        return Reply(text=prompt)

    def barrier(r: Run) -> list[Any]:
        found = r.parallel([lambda i=i: r.agent(f"scan {i}") for i in range(scans)])
        return r.parallel([lambda f=f: r.agent(f"verify {f}") for f in found])

    def streaming(r: Run) -> list[Any]:
        stream = r.stream([lambda i=i: r.agent(f"scan {i}") for i in range(scans)],
                          then=lambda f: r.agent(f"verify {f}"))  # fmt: skip
        return [value for _, value in sorted(stream)]

    walls = {}
    for name, plan in (("barrier", barrier), ("stream", streaming)):
        run = Run(name, llm=LLM(Ledger(":memory:"), client=heavy_tailed, settings=SETTINGS),
                  concurrency=concurrency)  # fmt: skip
        started = time.perf_counter()
        result = run.run_sync(plan)
        walls[name] = time.perf_counter() - started
        assert len(result) == scans and None not in result
    return {"barrier_s": walls["barrier"], "stream_s": walls["stream"],
            "ratio": walls["stream"] / walls["barrier"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="front-door repetitions")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--floor", action="store_true", help="also measure the minimal door")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="workers for the front door and the floors (default 16)")  # fmt: skip
    args = parser.parse_args()
    width = args.concurrency
    fd = front_door_medians(args.calls, width, args.repeat)
    floors = [
        minimal_front_door(args.calls, width) for _ in range(args.repeat if args.floor else 0)
    ]
    row_floors = [row_floor(args.calls, width) for _ in range(args.repeat if args.floor else 0)]
    pe = parallel_efficiency(200, 16, 0.05)
    bw = barrier_waste(16, 16, 0.05, 1.0)
    rows = [
        "| benchmark | measured | goal | met |",
        "|---|---|---|---|",
        f"| front door: {args.calls} calls via Run.agent (on-disk ledger, concurrency {width}), "
        f"median of {args.repeat} | {fd['run_rate']:,.0f} calls/s ({fd['run_s']:.2f} s; runs: "
        + ", ".join(f"{r['run_rate']:,.0f}" for r in fd["runs"])
        + ") | >= 2,000 calls/s | "
        f"{'yes' if fd['run_rate'] >= 2000 else 'no'} |",
        f"| front door vs bare thread pool ({fd['bare_rate']:,.0f} calls/s), median ratio | "
        f"{fd['ratio']:.2f}x slower (runs: "
        + ", ".join(f"{r['ratio']:.2f}" for r in fd["runs"])
        + f") | within 3x | {'yes' if fd['ratio'] <= 3 else 'no'} |",
        f"| front door CPU per call (process CPU time, all threads), median | "
        f"{fd['run_cpu_us']:.0f} us vs bare pool {fd['bare_cpu_us']:.0f} us | (diagnostic) | - |",
        *(
            [
                f"| floor: the contract work alone in one function on the bare pool "
                f"(diagnostic, median of {len(floors)}) | "
                f"{statistics.median(f['ratio'] for f in floors):.2f}x the bare pool (runs: "
                + ", ".join(f"{f['ratio']:.2f}" for f in floors)
                + f"); CPU per call {statistics.median(f['floor_cpu_us'] for f in floors):.0f}"
                f" us vs {statistics.median(f['bare_cpu_us'] for f in floors):.0f} us | - | - |",
                f"| floor: the bare pool plus one committed SQLite row per answer, nothing else "
                f"(diagnostic, median of {len(row_floors)}) | "
                f"{statistics.median(f['ratio'] for f in row_floors):.2f}x the bare pool (runs: "
                + ", ".join(f"{f['ratio']:.2f}" for f in row_floors)
                + ") | - | - |",
            ]
            if floors
            else []
        ),
        f"| parallel efficiency: 200 workers x 50 ms at concurrency 16 | {pe['wall_s']:.3f} s "
        f"vs ideal {pe['ideal_s']:.3f} s = {pe['ratio']:.3f} | within 10% (<= 1.10) | "
        f"{'yes' if pe['ratio'] <= 1.10 else 'no'} |",
        f"| barrier waste: 16 scans + 16 verifies, log-normal (median 50 ms, sigma 1), "
        f"concurrency 16 | stream {bw['stream_s']:.2f} s / barrier {bw['barrier_s']:.2f} s "
        f"= {bw['ratio']:.2f} | stream faster (< 1) | {'yes' if bw['ratio'] < 1 else 'no'} |",
    ]
    table = "\n".join(rows)
    print(table)
    if args.out is not None:
        command = "python benchmarks/bench_runtime.py " + " ".join(sys.argv[1:])
        machine = f"Python {platform.python_version()}, {platform.machine()}, "
        machine += f"{__import__('os').cpu_count()} cores"
        head = (
            "# Runtime benchmark results\n\n"
            f"Command: `{command.strip()}`  \nMachine: {machine}  \n"
            f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n{table}\n"
        )
        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        notes = old.split(NOTES, 1)[1] if NOTES in old else "\n"
        args.out.write_text(head + "\n" + NOTES + notes, encoding="utf-8")


if __name__ == "__main__":
    main()
