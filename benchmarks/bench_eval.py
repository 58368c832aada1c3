"""Benchmark: the simulated evaluation on the reference corpus (networkx, 72 bugs, seed 1).

Rebuilds the planted corpus from the committed key (``bench.rebuild``: no proofs, seconds),
runs every design with the fitted simulated model over several seeds, and records the table
(with the study's numbers beside it) in benchmarks/RESULTS_eval.md and .json, and in
docs/EVAL.md between its "reference run" markers. ``tests/bench/test_eval_reference.py`` checks
the recorded numbers against the study and a fresh run of one design against the record.

    python benchmarks/bench_eval.py [--repeats 5] [--budget 400] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import load_package  # noqa: E402
from bench.eval_cli import main as evaluate  # noqa: E402
from bench.rebuild import rebuild  # noqa: E402

KEY = ROOT / "data" / "networkx" / "hidden" / "answer_key.json"
RESULTS = Path(__file__).with_name("RESULTS_eval.md")
DOC = ROOT / "docs" / "EVAL.md"
PLACE = "<networkx, 72 bugs, seed 1>"  # the corpus folder, a temporary one by default
START, END = "<!-- reference run: start -->", "<!-- reference run: end -->"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=float, default=400.0)
    parser.add_argument("--corpus", help="a planted networkx (default: rebuilt in a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(args.corpus) if args.corpus else Path(scratch) / "networkx"
        if not args.corpus:
            rebuild(load_package("networkx"), KEY, corpus)
        started = time.perf_counter()
        data = RESULTS.with_suffix(".json")
        argv = ["--corpus", str(corpus), "--budget", f"{args.budget:g}", "--repeats",
                str(args.repeats), "--out", str(RESULTS), "--json", str(data)]  # fmt: skip
        code = evaluate(argv)
        seconds = time.perf_counter() - started
    recorded = data.read_text(encoding="utf-8").replace(str(corpus), PLACE)
    data.write_text(recorded.replace(f"{ROOT}/", ""), encoding="utf-8")
    command = f"python benchmarks/bench_eval.py --repeats {args.repeats} --budget {args.budget:g}"
    text = RESULTS.read_text(encoding="utf-8").replace(str(corpus), PLACE)
    text = text.replace(f"{ROOT}/", "")
    text = text.replace("# Evaluation", "#### Evaluation", 1)
    record = f"Command: `{command}` ({seconds / 60:.0f} min on 2 shared cores).\n\n{text}"
    RESULTS.write_text(record, encoding="utf-8")
    doc = DOC.read_text(encoding="utf-8")
    if START in doc and END in doc:
        head, rest = doc.split(START, 1)
        DOC.write_text(f"{head}{START}\n{record}{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    print(record)
    return code


if __name__ == "__main__":
    sys.exit(main())
