"""Helpers for the bench tests: where the default corpus lives, and re-proving a bug."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.corpus import Corpus
from bench.workspace import Slot

REPO = Path(__file__).resolve().parents[2]
ALGOS = REPO / "data" / "algos"


def assert_all_proven(corpus: Corpus, bugs: list[dict[str, Any]], workdir: Path) -> None:
    """:func:`assert_proven` for every bug, two at a time (the proofs are child processes)."""
    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(assert_proven, corpus, bug, workdir) for bug in bugs]:
            future.result()


def assert_proven(corpus: Corpus, bug: dict[str, Any], workdir: Path) -> None:
    """In a fresh copy of the corpus, the bug's file passes all its examples, and with the
    planted line it fails at least one and at most 40% of them, at the lines the key names."""
    copy = workdir / bug["id"]
    copy.mkdir(parents=True)
    slot = Slot(corpus, copy)
    source = slot.read(bug["path"])
    lines = source.splitlines(keepends=True)
    index = bug["source_line"] - 1
    assert lines[index].rstrip("\r\n") == bug["original"]
    lines[index] = bug["planted"] + lines[index][len(bug["original"]) :]
    clean = slot.run(bug["path"], 120)
    assert clean.all_pass, f"{bug['id']}: {clean.problem()}"
    buggy = slot.run(bug["path"], 120, "".join(lines))
    assert buggy.status == "ok"
    failing = len(buggy.failed)
    assert 1 <= failing <= 0.4 * buggy.total, f"{bug['id']}: {failing} of {buggy.total} fail"
    assert {e.line for e in buggy.failed} == {e["line"] for e in bug["failing"]}
