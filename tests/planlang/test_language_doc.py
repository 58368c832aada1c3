"""docs/LANGUAGE.md is the contract: it must name exactly what planlang/language.py allows."""

import re
from pathlib import Path

import pytest

from planlang import language as L

DOC = (Path(__file__).parents[2] / "docs" / "LANGUAGE.md").read_text()


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else None]


def _backticked(text: str) -> set[str]:
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", text))


def test_every_allowed_builtin_is_documented_and_nothing_more():
    section = _section("### Builtins")
    documented = _backticked(section.split("Differences from Python")[0])
    assert documented == set(L.ALLOWED_BUILTINS)


def test_every_forbidden_name_is_documented():
    section = _section("## Names")
    documented = _backticked(section.split("### Builtins")[0])
    assert set(L.FORBIDDEN_NAMES) <= documented


def test_every_forbidden_attribute_is_documented():
    section = _section("## Attributes")
    documented = _backticked(section.split("At run time")[0])
    assert set(L.FORBIDDEN_ATTRIBUTES) <= documented


@pytest.mark.parametrize(
    ("row", "names"),
    [
        ("| `str` |", L.STR_METHODS),
        ("| `list` |", L.LIST_METHODS),
        ("| `tuple` |", L.TUPLE_METHODS),
        ("| `dict` |", L.DICT_METHODS),
        ("| `set` |", L.SET_METHODS),
        ("| `frozenset` |", L.FROZENSET_METHODS),
        ("| host dict (read-only) |", L.READONLY_DICT_METHODS),
        ("| host list (read-only) |", L.READONLY_LIST_METHODS),
    ],
)
def test_attribute_table_rows_match_the_whitelist(row, names):
    line = next(line for line in DOC.splitlines() if line.startswith(row))
    cell = line.split("|")[2]
    documented = {name.strip().rstrip("\\*").strip() for name in cell.split(",")}
    assert documented == set(names)


def test_every_refused_construct_code_is_documented():
    for code, _why in L.REFUSED_CONSTRUCTS.values():
        assert code in DOC
