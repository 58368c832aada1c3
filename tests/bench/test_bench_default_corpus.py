"""The committed default corpus: every bug proven, nothing leaks, planting is reproducible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ALGOS, assert_all_proven

from bench.__main__ import main
from bench.audited import strip_examples
from bench.corpus import load_dir
from kit.paths import PathRefused, read_text
from kit.source import enclosing_function

CORPUS = load_dir(ALGOS / "source")


def test_the_key_names_about_a_dozen_bugs_in_distinct_files(algos_key: dict[str, Any]) -> None:
    paths = [bug["path"] for bug in algos_key["bugs"]]
    assert len(paths) >= 10 and len(set(paths)) == len(paths)
    assert len({bug["kind"] for bug in algos_key["bugs"]}) >= 8


def test_every_planted_bug_is_proven_by_its_files_examples(
    algos_key: dict[str, Any], tmp_path: Path
) -> None:
    assert_all_proven(CORPUS, algos_key["bugs"], tmp_path)


def test_key_lines_show_the_planted_line_in_its_function(algos_key: dict[str, Any]) -> None:
    for bug in algos_key["bugs"]:
        text = (ALGOS / "audited" / bug["path"]).read_text(encoding="utf-8")
        assert text.splitlines()[bug["line"] - 1] == bug["planted"]
        assert enclosing_function(text, bug["line"]) == bug["function"]
        start, end = bug["span"]
        assert start <= bug["line"] <= end


def test_no_doctest_prompt_is_left_in_the_audited_copy() -> None:
    files = list((ALGOS / "audited").rglob("*.py"))
    assert len(files) == len(CORPUS.files)
    for path in files:
        assert ">>>" not in path.read_text(encoding="utf-8"), path


def test_audited_differs_from_the_stripped_original_only_at_key_lines(
    algos_key: dict[str, Any],
) -> None:
    key_lines = {(bug["path"], bug["line"]) for bug in algos_key["bugs"]}
    for relative in CORPUS.files:
        original = strip_examples((CORPUS.root / relative).read_text(encoding="utf-8")).text
        audited = (ALGOS / "audited" / relative).read_text(encoding="utf-8")
        before, after = original.splitlines(), audited.splitlines()
        assert len(before) == len(after), relative
        changed = {
            (relative, n) for n, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b
        }
        assert changed == {k for k in key_lines if k[0] == relative}


def test_the_kit_reader_refuses_the_key() -> None:
    with pytest.raises(PathRefused):
        read_text(ALGOS, "hidden/answer_key.json")
    with pytest.raises(PathRefused):
        read_text(ALGOS / "audited", "../hidden/answer_key.json")
    assert "def " in read_text(ALGOS / "audited", "algos/sorting.py")


def test_same_seed_same_key(tmp_path: Path, algos_key: dict[str, Any]) -> None:
    argv = ["plant", "--source", str(ALGOS / "source"), "--out", str(tmp_path)]
    argv += ["--bugs", str(len(algos_key["bugs"])), "--seed", str(algos_key["seed"]), "--quiet"]
    assert main(argv) == 0
    key = json.loads((tmp_path / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
    assert key == algos_key
    for relative in CORPUS.files:
        ours = (tmp_path / "audited" / relative).read_bytes()
        assert ours == (ALGOS / "audited" / relative).read_bytes(), relative
