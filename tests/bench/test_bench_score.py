"""bench.match: what counts, what is a wrong place, and properties that must always hold."""

from __future__ import annotations

from typing import Any

import pytest
from bench_helpers import ALGOS
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import match
from bench.key import load_key

KEY_PATH = ALGOS / "hidden" / "answer_key.json"
KEY = load_key(KEY_PATH)
LIBRARY = ALGOS / "audited"

SYNTHETIC: dict[str, Any] = {
    "files": ["pkg/a.py", "pkg/b.py"],
    "bugs": [
        {"id": "bug-1", "path": "pkg/a.py", "line": 10, "function": "f", "span": [7, 14]},
        {"id": "bug-2", "path": "pkg/a.py", "line": 18, "function": "C.g", "span": [15, 30]},
        {"id": "bug-3", "path": "pkg/b.py", "line": 40, "function": "h", "span": [38, 50]},
    ],
}


def test_a_finding_within_the_window_in_the_bugs_function_counts() -> None:
    score = match([{"file": "pkg/a.py", "line": 13}], SYNTHETIC)
    assert score.found == ("bug-1",) and score.recall == pytest.approx(1 / 3)
    assert score.precision == 1.0


def test_a_finding_outside_the_window_does_not_count() -> None:
    score = match([{"file": "pkg/b.py", "line": 48}], SYNTHETIC, window=5)
    assert score.found == () and score.wrong_places == ("pkg/b.py:h",)
    assert match([{"file": "pkg/b.py", "line": 48}], SYNTHETIC, window=8).found == ("bug-3",)


def test_the_line_must_be_in_the_bugs_function_unless_the_function_is_named() -> None:
    # Line 15 is within 5 lines of bug-1 (line 10) but inside C.g; nearest bug there is bug-2.
    assert match([{"file": "pkg/a.py", "line": 15}], SYNTHETIC).found == ("bug-2",)
    # Line 6 is outside any known function: only the named function gives a second chance.
    assert match([{"file": "pkg/a.py", "line": 8}], SYNTHETIC).found == ("bug-1",)
    assert match([{"file": "pkg/a.py", "line": 6}], SYNTHETIC).found == ()
    assert match([{"file": "pkg/a.py", "line": 6, "function": "f"}], SYNTHETIC).found == ("bug-1",)
    named = [{"file": "pkg/a.py", "line": 6, "function": "pkg.a.f"}]
    assert match(named, SYNTHETIC).found == ("bug-1",)


def test_nearest_bug_wins() -> None:
    key = {
        "files": ["m.py"],
        "bugs": [
            {"id": "x", "path": "m.py", "line": 10, "function": "f", "span": [1, 30]},
            {"id": "y", "path": "m.py", "line": 14, "function": "f", "span": [1, 30]},
        ],
    }
    assert match([{"file": "m.py", "line": 13}], key).found == ("y",)
    assert match([{"file": "m.py", "line": 11}], key).found == ("x",)


def test_wrong_reports_count_once_per_place_and_repeats_count_once() -> None:
    findings = [
        {"file": "pkg/b.py", "line": 100},
        {"file": "pkg/b.py", "line": 105},
        {"file": "pkg/b.py", "line": 111},
        {"file": "pkg/a.py", "line": 10},
        {"file": "./pkg/a.py", "line": 11},
    ]
    score = match(findings, SYNTHETIC)
    assert score.wrong_places == ("pkg/b.py:block10", "pkg/b.py:block11")
    assert score.found == ("bug-1",)
    assert score.precision == pytest.approx(1 / 3)


def test_path_spellings_are_normalised() -> None:
    for path in ["pkg/a.py", "./pkg/a.py", "/pkg/a.py", "data/x/audited/pkg/a.py"]:
        assert match([{"file": path, "line": 10}], SYNTHETIC).found == ("bug-1",)


def test_the_audited_library_names_functions_for_wrong_places() -> None:
    score = match([{"file": "algos/sorting.py", "line": 58}], KEY, library=LIBRARY)
    assert score.found == () and score.wrong_places == ("algos/sorting.py:is_sorted",)


def test_a_key_path_finds_the_audited_copy_next_to_it() -> None:
    score = match([{"file": "algos/sorting.py", "line": 58}], KEY_PATH)
    assert score.wrong_places == ("algos/sorting.py:is_sorted",)


def test_nothing_reported_gives_zero_not_an_error() -> None:
    score = match([], SYNTHETIC)
    assert (score.recall, score.precision, score.wrong_places) == (0.0, 0.0, ())


def test_a_negative_window_is_refused() -> None:
    with pytest.raises(ValueError, match="-1"):
        match([], SYNTHETIC, window=-1)


BUGS: list[dict[str, Any]] = list(KEY["bugs"])
exact = st.sampled_from(BUGS).map(lambda b: {"file": b["path"], "line": b["line"]})
noise = st.fixed_dictionaries(
    {
        "file": st.sampled_from([b["path"] for b in BUGS] + ["algos/__init__.py"]),
        "line": st.integers(min_value=-5, max_value=200),
    }
)
anything = st.dictionaries(
    st.sampled_from(["file", "path", "line", "function"]),
    st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=30), st.booleans()),
)
findings = st.lists(st.one_of(exact, noise, anything), max_size=12)


@given(st.lists(st.sampled_from(BUGS), unique_by=lambda b: b["id"]))
def test_a_finding_at_a_bugs_exact_place_always_counts(chosen: list[dict[str, Any]]) -> None:
    score = match([{"file": b["path"], "line": b["line"]} for b in chosen], KEY, library=LIBRARY)
    assert set(score.found) == {b["id"] for b in chosen}
    assert score.recall == pytest.approx(len(chosen) / len(BUGS))
    assert score.precision == (1.0 if chosen else 0.0)


@settings(max_examples=80)  # many findings per example; 80 keeps the suite inside its budget
@given(findings, st.integers(min_value=1, max_value=4))
def test_duplicates_never_raise_recall(items: list[dict[str, Any]], times: int) -> None:
    once = match(items, KEY, library=LIBRARY)
    repeated = match(items * times, KEY, library=LIBRARY)
    assert (repeated.recall, repeated.precision) == (once.recall, once.precision)
    assert len(repeated.found) <= len(BUGS)


@settings(max_examples=80)
@given(findings.flatmap(lambda items: st.tuples(st.just(items), st.permutations(items))))
def test_permuting_findings_changes_nothing(
    pair: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    items, shuffled = pair
    a, b = match(items, KEY, library=LIBRARY), match(shuffled, KEY, library=LIBRARY)
    assert (a.recall, a.precision, a.found, a.wrong_places) == (
        b.recall,
        b.precision,
        b.found,
        b.wrong_places,
    )


@settings(max_examples=80)
@given(findings, st.text(max_size=40), st.integers())
def test_a_path_outside_the_library_never_counts_and_never_raises(
    items: list[dict[str, Any]], path: str, line: int
) -> None:
    library_files = set(KEY["files"])
    before = match(items, KEY, library=LIBRARY)
    with_stray = match([*items, {"file": path, "line": line}], KEY, library=LIBRARY)
    if path.strip() and not any(path.replace("\\", "/").endswith(f) for f in library_files):
        assert with_stray.found == before.found
    for hostile in ["../hidden/answer_key.json", "hidden/answer_key.json", "/etc/passwd"]:
        assert match([{"file": hostile, "line": 1}], KEY, library=LIBRARY).found == ()
