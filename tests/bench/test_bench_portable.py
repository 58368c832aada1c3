"""Proofs and edits on libraries unlike the default corpus: what they print is portable, their
outcome does not depend on the hash seed, and edits a linter or a reader would spot are refused.
"""

from __future__ import annotations

import threading
from pathlib import Path

from bench.audited import strip_examples
from bench.corpus import load_dir
from bench.edits import KINDS, Edit
from bench.lint import signature
from bench.plant import _try_file
from bench.proof import Example as ProofExample
from bench.proof import Proof, run_examples
from bench.validate import Validator
from bench.workspace import Slot

RAISES = '''\
"""Raises."""


def check(value):
    """Refuse negative values.

    >>> check(1)
    1
    >>> check(-1)
    Traceback (most recent call last):
      ...
    ValueError: negative
    >>> check(0)
    0
    """
    if value < 0:
        raise KeyError("negative")
    return value
'''

SET_ORDER = '''\
"""Set order."""


def letters(text):
    """The letters of ``text`` as a set, printed in iteration order.

    >>> letters("abcdefgh")
    ORDER
    >>> len(letters("aab"))
    2
    >>> "a" in letters("abc")
    True
    """
    return list(set(text))
'''


def _package(tmp_path: Path, name: str, source: str) -> Path:
    package = tmp_path / "src" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "mod.py").write_text(source, encoding="utf-8")
    return package


def test_a_failing_traceback_names_neither_frames_nor_the_corpus_folder(tmp_path: Path) -> None:
    package = _package(tmp_path, "raiser", RAISES)
    proof = run_examples(package.parent, "raiser.mod", "raiser/mod.py", 60)
    assert proof.status == "ok" and len(proof.failed) == 1
    got = proof.failed[0].got
    # The key records this text: a temporary folder in it would differ from run to run.
    assert got == "Traceback (most recent call last):\n  ...\nKeyError: 'negative'\n"
    assert str(tmp_path) not in got and "File " not in got


def test_examples_that_print_set_order_give_the_same_outcome_in_every_child(
    tmp_path: Path,
) -> None:
    corpus = load_dir(_package(tmp_path, "hashy", SET_ORDER.replace("ORDER", "[]")))
    slot = Slot(corpus, tmp_path / "slot")
    printed = slot.run("hashy/mod.py", 60).examples[0].got
    source = SET_ORDER.replace("ORDER", printed.strip())
    # With a random hash seed per child, this passes about once in 40,000 runs; an edit tried
    # on it would be "proven" by chance.
    outcomes = {slot.run("hashy/mod.py", 60, source).all_pass for _ in range(4)}
    assert outcomes == {True}


NESTED = """\
def selector_of(ranks):
    def selector(things):
        thing_rank = min(ranks)
        return [thing for thing in things if thing >= thing_rank]

    squares = [r * r for r in ranks]
    return selector, squares
"""


def test_reading_a_name_bound_only_in_a_nested_scope_is_a_lint_finding() -> None:
    before = signature(NESTED)
    for name in ("thing_rank", "thing", "r"):
        after = signature(NESTED.replace("return selector, squares", f"return {name}, squares"))
        assert ("nested-only", "selector_of", name) in after - before


def test_a_wrong_return_of_a_nested_name_is_refused_but_a_local_one_kept() -> None:
    valid = Validator(NESTED)
    line = "    return selector, squares"
    assert not valid(Edit("wrong_return", 7, line, "    return thing_rank, squares"))
    assert not valid(Edit("wrong_return", 7, line, "    return r, squares"))
    assert valid(Edit("wrong_return", 7, line, "    return ranks, squares"))


def test_a_signed_zero_is_refused_as_an_edit() -> None:
    source = "def unquote(etag):\n    etag = etag[1:-1]\n    return etag\n"
    valid = Validator(source)
    line = "    etag = etag[1:-1]"
    assert not valid(Edit("wrong_constant", 2, line, "    etag = etag[1:-0]"))
    assert not valid(Edit("wrong_constant", 2, line, "    etag = etag[1:len(etag)-0]"))
    assert valid(Edit("off_by_one", 2, line, "    etag = etag[1:-2]"))


def test_subtracting_from_a_string_is_refused_as_an_edit() -> None:
    source = "def join(parts, n):\n    text = ''.join('/' + part for part in parts)\n    return n\n"
    valid = Validator(source)
    line = source.splitlines()[1]
    assert not valid(Edit("plus_minus", 2, line, line.replace("'/' +", "'/' -")))
    assert not valid(Edit("plus_minus", 2, line, line.replace("'/' +", "f'/' -")))
    numbers = "def f(a, b):\n    c = a + b\n    return c\n"
    assert Validator(numbers)(Edit("plus_minus", 2, "    c = a + b", "    c = a - b"))


class _ScriptedSlot:
    """A slot whose runs are scripted: the clean file passes; each edited run fails the examples
    the script gives next (a flaky example fails once, then passes)."""

    def __init__(self, source: str, failures: list[int]) -> None:
        self.source, self.failures, self.runs = source, failures, 0

    def read(self, relative: str) -> str:
        return self.source

    def run(self, relative: str, timeout: float, source: str | None = None) -> Proof:
        self.runs += 1
        failed = 0 if source is None else self.failures.pop(0)
        examples = tuple(
            ProofExample("f", n, "f()\n", "1\n", "2\n" if n < failed else "1\n", n >= failed)
            for n in range(10)
        )
        return Proof("ok", examples, "", 0.0)


def test_an_edit_must_fail_the_same_examples_twice_to_be_planted() -> None:
    source = 'def f(a, b):\n    """F.\n\n    >>> f(1, 2)\n    2\n    """\n    return a + b - 1\n'
    # The first edit fails one example, then none (a flaky example); the second fails 2, twice.
    slot = _ScriptedSlot(source, [1, 0, 2, 2])
    outcome = _try_file(slot, "m.py", 1, list(KINDS), 60, 12, threading.Event())  # type: ignore[arg-type]
    assert outcome.planted is not None and outcome.tried == 2 and slot.runs == 5
    assert [example["line"] for example in outcome.planted.failing] == [0, 1]


ASSIGNED_DOCS = '''\
"""Docs attached at import, as mpmath's function_docs.py does."""

besselj = r"""
Bessel function of the first kind.

    >>> double(2)
    4

Prose stays.
"""


class Holder:
    note = """
    >>> double(3)
    6
    """


def double(x):
    return 2 * x


double.__doc__ = f"""Twice x.

>>> double({1})
2
"""
message = "Type >>> to start; this line is not documentation."
'''


def test_examples_in_documentation_assigned_at_import_are_stripped_too() -> None:
    text = strip_examples(ASSIGNED_DOCS).text
    assert ">>> double" not in text and "\n    4\n" not in text and "    6\n" not in text
    assert "Prose stays." in text and "Bessel function of the first kind." in text
    assert 'message = "Type >>> to start; this line is not documentation."' in text
    compile(text, "audited.py", "exec")
