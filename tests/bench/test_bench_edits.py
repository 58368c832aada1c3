"""bench.edits and bench.audited: each kind makes its mistake on one line; examples vanish."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from bench_helpers import ALGOS

from bench.audited import strip_examples
from bench.corpus import load_package
from bench.edits import KINDS, apply, candidates
from bench.validate import Validator

SOURCE = '''\
def f(a, x, n):
    """Doc.

    >>> f([1], 1, 1)
    0
    """
    total = 0
    i = len(a) - 1
    while i >= 0 and a[i] > x:
        i -= 1
    for k in range(1, n):
        total += a[k] // 2
    if not a:
        return max(0, i)
    return total
'''

EXPECTED = {
    "off_by_one": "    for k in range(1, n - 1):",
    "strictness": "    while i > 0 and a[i] > x:",
    "plus_minus": "        i += 1",
    "swap_operands": "    while 0 >= i and a[i] > x:",
    "wrong_constant": "    i = len(a) - 2",
    "and_or": "    while i >= 0 or a[i] > x:",
    "negation": "    if a:",
    "wrong_index": "        total += a[k + 1] // 2",
    "wrong_return": "    return i",
    "true_division": "        total += a[k] / 2",
    "accumulator_init": "    total = 1",
    "boundary_removed": "    while a[i] > x:",
}


def _edits() -> dict[str, list[str]]:
    scope = ast.parse(SOURCE).body[0]
    assert isinstance(scope, ast.FunctionDef)
    found: dict[str, list[str]] = {}
    for edit in candidates(SOURCE, scope):
        found.setdefault(edit.kind, []).append(edit.planted)
    return found


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_makes_its_mistake(kind: str) -> None:
    assert EXPECTED[kind] in _edits()[kind]


def test_edits_touch_one_code_line_never_the_docstring() -> None:
    scope = ast.parse(SOURCE).body[0]
    assert isinstance(scope, ast.FunctionDef)
    before = SOURCE.splitlines()
    for edit in candidates(SOURCE, scope):
        after = apply(SOURCE, edit).splitlines()
        assert [n for n, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b] == [
            edit.line
        ]
        assert edit.line >= 7


def test_apply_refuses_an_edit_for_another_text() -> None:
    scope = ast.parse(SOURCE).body[0]
    assert isinstance(scope, ast.FunctionDef)
    edit = candidates(SOURCE, scope)[0]
    with pytest.raises(ValueError, match="not the edit's original"):
        apply(SOURCE.replace(edit.original, "    pass"), edit)


def test_edits_a_linter_would_flag_are_refused() -> None:
    source = "def g(a):\n    best = a\n    worst = -a\n    return best + worst\n"
    scope = ast.parse(source).body[0]
    assert isinstance(scope, ast.FunctionDef)
    valid = Validator(source)
    planted = {e.planted for e in candidates(source, scope) if valid(e)}
    assert "    return best - worst" in planted
    unsafe = "def h(a):\n    if a:\n        return a\n    late = 1\n    return late\n"
    scope = ast.parse(unsafe).body[0]
    assert isinstance(scope, ast.FunctionDef)
    # "return late" on line 3 would read a name before it is bound: never offered.
    assert all("return late" not in e.planted or e.line == 5 for e in candidates(unsafe, scope))


def test_stripping_removes_examples_and_keeps_prose_and_line_map() -> None:
    stripped = strip_examples(SOURCE)
    assert ">>>" not in stripped.text and '"""Doc.' in stripped.text
    lines = stripped.text.splitlines()
    assert lines[:2] == ["def f(a, x, n):", '    """Doc."""']  # summary closed on its line
    for number, original in enumerate(SOURCE.splitlines(), start=1):
        if number in stripped.kept and number > 2:
            assert lines[stripped.line_of(number) - 1] == original
    with pytest.raises(ValueError, match="removed"):
        stripped.line_of(4)


def test_stripping_keeps_closing_quotes_that_share_a_line_with_output() -> None:
    source = 'def f():\n    """Doc.\n\n    >>> 1 + 1\n    2"""\n    return 2\n'
    text = strip_examples(source).text
    ast.parse(text)
    assert ">>>" not in text and text.endswith('    """Doc."""\n    return 2\n')


def test_corpus_loader_reads_conftest_doctest_names() -> None:
    corpus = load_package("networkx")
    assert corpus.doctest_globals == {"nx": "networkx"}
    assert not any("/tests/" in path for path in corpus.files)
    assert len(corpus.files) == 288


def test_default_source_examples_cover_every_module() -> None:
    for path in (ALGOS / "source" / "algos").glob("*.py"):
        if path.name != "__init__.py":
            assert path.read_text(encoding="utf-8").count(">>>") >= 9, path.name
    assert Path(ALGOS / "audited").is_dir()


def test_negation_flips_membership_and_never_doubles_a_not() -> None:
    source = "def f(u, nodes):\n    if u not in nodes:\n        return u is None\n    return 0\n"
    scope = ast.parse(source).body[0]
    assert isinstance(scope, ast.FunctionDef)
    planted = {e.planted.strip() for e in candidates(source, scope) if e.kind == "negation"}
    assert {"if u in nodes:", "return u is not None"} <= planted
    assert not any("not u not" in text for text in planted)
