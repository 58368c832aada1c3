"""Helpers for the bench tests: where the default corpus lives, and re-proving a bug."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bench.corpus import Corpus
from bench.proof import Proof, run_examples

REPO = Path(__file__).resolve().parents[2]
ALGOS = REPO / "data" / "algos"


def rerun(corpus: Corpus, bug: dict[str, Any], workdir: Path, planted: bool) -> Proof:
    """Run the examples of the bug's file from a fresh copy, with the planted line or not."""
    copy = workdir / ("buggy" if planted else "clean")
    shutil.copytree(
        corpus.root / corpus.package,
        copy / corpus.package,
        ignore=shutil.ignore_patterns("__pycache__", "tests"),
    )
    path = copy / bug["path"]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    index = bug["source_line"] - 1
    assert lines[index].rstrip("\r\n") == bug["original"]
    if planted:
        lines[index] = bug["planted"] + lines[index][len(bug["original"]) :]
        path.write_text("".join(lines), encoding="utf-8")
    module = corpus.module_name(bug["path"])
    return run_examples(copy, module, bug["path"], 120, corpus.doctest_globals)


def assert_proven(corpus: Corpus, bug: dict[str, Any], workdir: Path) -> None:
    """The clean file passes all its examples; the buggy one fails >= 1 and <= 40% of them."""
    clean = rerun(corpus, bug, workdir, planted=False)
    assert clean.all_pass, f"{bug['id']}: {clean.problem()}"
    buggy = rerun(corpus, bug, workdir, planted=True)
    assert buggy.status == "ok"
    failing = len(buggy.failed)
    assert 1 <= failing <= 0.4 * buggy.total, f"{bug['id']}: {failing} of {buggy.total} fail"
    assert {e.line for e in buggy.failed} == {e["line"] for e in bug["failing"]}
