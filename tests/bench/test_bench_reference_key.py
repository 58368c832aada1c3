"""The committed networkx key: all 72 planted bugs are re-proven against networkx 3.6.1.

The planted corpus is 6 MB and not committed; the key (data/networkx/hidden) is. Each bug is a
one-line edit of the installed release, so the key alone rebuilds every buggy file: copy the
package, put the planted line in place, rerun that file's examples in a child process (the copy
first on its path) and check the proof the planting recorded. Two private copies of the package
let the two cores prove two bugs at once without seeing each other's edits.
"""

from __future__ import annotations

import json
import queue
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import REPO

from bench.corpus import Corpus, load_package
from bench.key import SourceMismatch, load_key, planted_source
from bench.plant import MAX_FAILING_SHARE
from bench.workspace import Slot

KEY_PATH = REPO / "data" / "networkx" / "hidden" / "answer_key.json"
VERSION = "3.6.1"
WORKERS = 2
# Generous: the slowest file's examples take a few seconds; a hang must still end the run.
PROOF_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def networkx_key() -> dict[str, Any]:
    return load_key(KEY_PATH)


@pytest.fixture(scope="module")
def networkx_corpus() -> Corpus:
    try:
        installed = metadata.version("networkx")
    except metadata.PackageNotFoundError:
        pytest.fail(
            f"networkx is not installed; the reference key was planted in networkx {VERSION} "
            f"(pip install 'networkx=={VERSION}', or the project's bench extra)."
        )
    if installed != VERSION:
        pytest.fail(
            f"networkx {installed} is installed, but the reference key was planted in "
            f"networkx {VERSION}; its lines only fit that release."
        )
    return load_package("networkx")


def test_the_key_holds_72_bugs_in_distinct_networkx_files(networkx_key: dict[str, Any]) -> None:
    bugs = networkx_key["bugs"]
    assert networkx_key["corpus"] == "networkx" and networkx_key["seed"] == 1
    assert len(bugs) == 72
    assert len({bug["path"] for bug in bugs}) == 72
    assert [bug["id"] for bug in bugs] == [f"bug-{n:03d}" for n in range(1, 73)]


def test_every_original_line_is_in_the_installed_release(
    networkx_key: dict[str, Any], networkx_corpus: Corpus
) -> None:
    assert sorted(networkx_key["files"]) == sorted(networkx_corpus.files)
    for bug in networkx_key["bugs"]:
        source = (networkx_corpus.root / bug["path"]).read_text(encoding="utf-8")
        planted = planted_source(bug, source)
        assert planted != source
        assert planted.splitlines()[bug["source_line"] - 1] == bug["planted"]


@pytest.mark.slow
def test_every_networkx_bug_is_proven_by_its_files_examples(
    networkx_key: dict[str, Any], networkx_corpus: Corpus, tmp_path: Path
) -> None:
    pool: queue.Queue[Slot] = queue.Queue()
    for index in range(WORKERS):
        base = tmp_path / f"slot{index}"
        base.mkdir()
        pool.put(Slot(networkx_corpus, base))

    def prove(bug: dict[str, Any]) -> list[str]:
        slot = pool.get()
        try:
            return _problems(slot, bug)
        finally:
            pool.put(slot)

    with ThreadPoolExecutor(WORKERS) as executor:
        problems = [p for found in executor.map(prove, networkx_key["bugs"]) for p in found]
    assert not problems, "\n".join(problems)


def _problems(slot: Slot, bug: dict[str, Any]) -> list[str]:
    """Why ``bug`` is not proven in ``slot`` (empty when it is): the file's examples all pass
    unedited, and with the planted line between one and 40% of them fail, at the key's lines."""
    name = f"{bug['id']} ({bug['path']}:{bug['source_line']})"
    try:
        buggy_source = planted_source(bug, slot.read(bug["path"]))
    except SourceMismatch as error:
        return [str(error)]
    clean = slot.run(bug["path"], PROOF_TIMEOUT)
    if not clean.all_pass:
        return [f"{name}: unedited, {clean.problem()}"]
    buggy = slot.run(bug["path"], PROOF_TIMEOUT, buggy_source)
    if buggy.status != "ok":
        return [f"{name}: with the bug, {buggy.problem()}"]
    problems = []
    failing = len(buggy.failed)
    if not 1 <= failing <= MAX_FAILING_SHARE * buggy.total:
        problems.append(f"{name}: {failing} of {buggy.total} examples fail with the bug")
    if buggy.total != clean.total or buggy.total != bug["examples"]:
        problems.append(
            f"{name}: {clean.total} examples unedited and {buggy.total} with the bug, "
            f"but the key recorded {bug['examples']}"
        )
    lines = sorted(example.line for example in buggy.failed)
    expected = sorted(example["line"] for example in bug["failing"])
    if lines != expected:
        problems.append(f"{name}: examples at lines {lines} fail, the key says {expected}")
    return problems


# planted_source, the helper that replays one key entry on its original file.

BUG = {"id": "bug-009", "path": "pkg/m.py", "source_line": 2, "original": "    a < b"}


def test_planted_source_replaces_only_the_keyed_line_and_keeps_its_ending() -> None:
    source = "def f():\r\n    a < b\r\n    a < b\r\n"
    bug = {**BUG, "planted": "    a <= b"}
    assert planted_source(bug, source) == "def f():\r\n    a <= b\r\n    a < b\r\n"


def test_planted_source_refuses_a_line_that_is_not_the_original() -> None:
    bug = {**BUG, "planted": "    a <= b"}
    with pytest.raises(SourceMismatch, match=r"line 2 of pkg/m.py reads '    a > b'"):
        planted_source(bug, "def f():\n    a > b\n")


def test_planted_source_refuses_a_line_past_the_end_of_the_file() -> None:
    bug = {**BUG, "source_line": 7, "planted": "x"}
    with pytest.raises(SourceMismatch, match="has 2 lines, so it has no line 7"):
        planted_source(bug, "a\nb\n")


def test_the_committed_key_is_the_json_the_planter_writes() -> None:
    text = KEY_PATH.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"
