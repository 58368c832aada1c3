"""Benchmark: plant 72 proven bugs in networkx (the reference corpus) on both cores.

Reports the wall time of planting (proofs included) and the share of the workers' time spent
running doctest examples in child interpreters, which is the part parallelism can hide; the
rest is parsing, edit enumeration, copying and writing the audited copy. Also surveys the
corpus (files, tokens, shards, files whose examples pass) for docs/BENCH.md.

    python benchmarks/bench_plant.py [--bugs 72] [--seed 1] [--out /tmp/bench-networkx]

Writes benchmarks/RESULTS_bench.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import load_package  # noqa: E402
from bench.key import write_corpus  # noqa: E402
from bench.plant import plant  # noqa: E402
from bench.survey import survey  # noqa: E402

RESULTS = Path(__file__).with_name("RESULTS_bench.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bugs", type=int, default=72)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="/tmp/bench-networkx")
    args = parser.parse_args()
    corpus = load_package("networkx")

    started = time.perf_counter()
    surveyed = survey(corpus, workers=args.workers)
    survey_seconds = time.perf_counter() - started

    started = time.perf_counter()
    planting = plant(corpus, args.bugs, args.seed, workers=args.workers)
    key = write_corpus(corpus, planting, Path(args.out), args.seed)
    seconds = time.perf_counter() - started
    share = planting.doctest_seconds / (seconds * args.workers)
    kinds = Counter(bug["kind"] for bug in key["bugs"])
    skipped = [o for o in planting.outcomes if o.skipped]
    unproven = [o for o in planting.outcomes if not o.skipped and not o.planted]
    tried = sum(o.tried for o in planting.outcomes)

    lines = [
        "# Planting benchmark (networkx 3.6.1, reference corpus)",
        "",
        f"Command: `python benchmarks/bench_plant.py --bugs {args.bugs} --seed {args.seed}"
        f" --workers {args.workers}`",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}",
        "",
        "## Survey (`python -m bench survey --package networkx`)",
        "",
        *(f"- {line}" for line in surveyed.lines()),
        f"- survey time: {survey_seconds:.1f} s",
        "",
        "## Planting",
        "",
        f"- bugs planted: {len(key['bugs'])} of {args.bugs}",
        f"- files visited: {len(planting.outcomes)} of {planting.eligible} eligible"
        f" (skipped {len(skipped)}, no proven edit {len(unproven)})",
        f"- proofs run (edits tried): {tried}",
        f"- wall time, proofs included: {seconds:.1f} s",
        f"- time in doctest child processes: {planting.doctest_seconds:.1f} s"
        f" = {share:.0%} of the {args.workers} workers' time",
        "- bugs per kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
        "",
        "Timings vary from run to run; the key does not (same seed, same bugs).",
        "",
    ]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
