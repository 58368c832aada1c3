"""A plan's text of a function (or any value that lives at an address) is the same in every run.

``repr(f)`` named ``f``'s address: a prompt holding it was another question on every rerun (the
ledger paid again), and a replay gave another result.
"""

from __future__ import annotations

import re

import pytest

from planlang import Sandbox

FUNCTION = "def g():\n    return 1\n"
TEXTS = [
    ("repr(g)", "<function g>"),
    ("str(g)", "<function g>"),
    ("f'{g}'", "<function g>"),
    ("f'{g!r}'", "<function g>"),
    ("f'{g!a}'", "<function g>"),
    ("f'{[g, 1, \"a\"]}'", "[<function g>, 1, 'a']"),
    ("'%s and %r' % (g, [g])", "<function g> and [<function g>]"),
    ("'%s' % g", "<function g>"),
    ("'%(k)s' % {'k': g}", "<function g>"),
    ("str({'k': (g,)})", "{'k': (<function g>,)}"),
    ("str(ValueError(g))", "<function g>"),
    ("repr(ValueError(g, 2))", "ValueError(<function g>, 2)"),
    ("str(map(len, []))", "<map object>"),
    ("str([[].append])", "[<built-in method append of list object>]"),
    ("repr(x for x in [1])", "<generator object <genexpr>>"),
    ("str(lambda: 1)", "<function <lambda>>"),
    ("str({1: reversed([1])})", "{1: <list_reverseiterator object>}"),
]


@pytest.mark.parametrize("mode", ["inprocess", "process"])
@pytest.mark.parametrize(("expression", "text"), TEXTS, ids=[e for e, _ in TEXTS])
def test_the_text_of_a_value_at_an_address_leaves_the_address_out(mode, expression, text) -> None:
    assert Sandbox(isolation=mode).run(f"{FUNCTION}result = {expression}") == text


@pytest.mark.parametrize("mode", ["inprocess", "process"])
def test_print_of_a_function_leaves_the_address_out(mode) -> None:
    box = Sandbox(isolation=mode)
    box.run(f"{FUNCTION}print(g, [g], 1)\nresult = 1")
    assert box.printed == ["<function g> [<function g>] 1"]


def test_plain_data_is_formatted_as_python_formats_it() -> None:
    """Texts that only look like an address are the plan's own: kept as they are; a cycle
    is cut as repr cuts it; a format spec a function refuses is refused as before."""
    box = Sandbox(isolation="inprocess")
    assert box.run("result = str(['<f at 0x1f>'])") == "['<f at 0x1f>']"
    assert box.run(f"{FUNCTION}a = [g]\na.append(a)\nresult = str(a)") == "[<function g>, [...]]"
    assert box.run(f"{FUNCTION}result = str([g, '<f at 0x1f>'])") == "[<function g>, '<f at 0x1f>']"
    with pytest.raises(Exception, match="unsupported format string"):
        box.run(f"{FUNCTION}result = f'{{g:>30}}'")


def test_the_same_plan_gives_the_same_text_in_two_runs() -> None:
    plan = f"{FUNCTION}fs = [lambda: i for i in range(50)]\nresult = f'{{fs}} {{g}}'"
    first, second = (Sandbox(isolation="process").run(plan) for _ in range(2))
    assert first == second
    assert not re.search(r"0x[0-9a-f]", first)
