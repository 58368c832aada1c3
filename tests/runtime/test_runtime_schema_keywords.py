"""``uniqueItems`` in linear time, equal to jsonschema's own verdict, and the watched validator
that a caller's ``tick`` can stop (runtime/schema_keywords.py, runtime/json_schema.py)."""

from __future__ import annotations

from typing import Any

import jsonschema._utils
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from runtime.json_schema import schema_validator, watched_validator
from runtime.schema_keywords import json_key

UNIQUE = {"type": "array", "uniqueItems": True}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, -1.0, 2.5])
    | st.sampled_from(["", "a", "1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner,
                                                                max_size=2),
    max_leaves=8,
)  # fmt: skip


@given(st.lists(json_values, max_size=6))
def test_unique_items_agrees_with_jsonschemas_own(items: list[Any]) -> None:
    """The verdict is jsonschema's, item for item: 1 and 1.0 are one number, true is not 1,
    [1] is [1.0], an object's keys have no order."""
    ours = schema_validator(UNIQUE).is_valid(items)
    theirs = Draft202012Validator(UNIQUE).is_valid(items)
    assert ours == theirs, items


@pytest.mark.parametrize(("items", "unique"), [
    ([1, 1.0], False), ([True, 1], True), ([False, 0], True), ([[1, True], [1, 1]], True),
    ([{"a": 1, "b": [1]}, {"b": [1.0], "a": 1}], False), ([None, None], False),
    ([{"a": 1}, {"a": 2}], True), (["1", 1], True),
])  # fmt: skip
def test_unique_items_cases(items: list[Any], unique: bool) -> None:
    assert schema_validator(UNIQUE).is_valid(items) is unique
    assert (json_key(items[0]) == json_key(items[1])) is not unique


def test_unique_items_of_objects_compares_no_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """Objects do not sort, so jsonschema compares every pair: 2,000 objects are 2 million
    calls of its ``equal`` (20,000 are 200 million, minutes of a host's CPU for one reply). A
    set of keys finds a repeat with none."""
    calls = []
    real = jsonschema._utils.equal
    monkeypatch.setattr(jsonschema._utils, "equal", lambda a, b: (calls.append(1), real(a, b))[1])
    items = [{"id": n, "tags": [n, str(n)]} for n in range(2000)]
    assert schema_validator(UNIQUE).is_valid(items)
    assert not schema_validator(UNIQUE).is_valid([*items, {"tags": [5, "5"], "id": 5}])
    assert len(calls) < 100, len(calls)


def test_unique_items_of_values_not_plain_json_falls_back_to_jsonschema() -> None:
    """An item with no key of its own (a set, only ever in a hand-made instance) is judged by
    jsonschema's own comparison, not refused or raised on."""
    validator = schema_validator(UNIQUE)
    assert validator.is_valid([{1, 2}, {3}])
    assert not validator.is_valid([{1, 2}, {2, 1}])


class _Stop(Exception):
    pass


def test_a_watched_validator_stops_when_its_tick_raises() -> None:
    """jsonschema evolves its validator at each item and property it looks into (``items``,
    ``contains``, ``properties``): a tick there sees a long check go on and may stop it."""
    seen = [0]

    def tick() -> None:
        seen[0] += 1
        if seen[0] > 500:
            raise _Stop

    schema = {"type": "array", "items": {"type": "integer"}, "contains": {"const": 3}}
    with pytest.raises(_Stop):
        watched_validator(schema, tick).is_valid(list(range(100_000)))
    assert seen[0] == 501
    counted = [0]
    calm = watched_validator(schema, lambda: counted.__setitem__(0, counted[0] + 1))
    assert calm.is_valid([1, 2, 3]) and not calm.is_valid([1, 2])
    assert counted[0] >= 3  # the items, and the contains check of each


def test_a_watched_validator_gives_the_same_errors() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string",
              "pattern": "^x"}}}, "required": ["a", "b"]}  # fmt: skip
    instance = {"a": ["xa", "y", 3]}
    plain = sorted(e.message for e in schema_validator(schema).iter_errors(instance))
    watched = sorted(
        e.message for e in watched_validator(schema, lambda: None).iter_errors(instance)
    )
    assert plain == watched and len(plain) == 3


# -- the cost of a pattern search, bounded (red team 18) -----------------------------------------

_WIDE = "(a|e)[a-z ]{1000}z"  # a program of about 2,000 instructions that leaves RE2's DFA


def test_a_search_past_its_cost_bound_is_refused_never_run() -> None:
    from runtime.linear_regex import SEARCH_MOST, MatchTooCostly, program_size, search

    size = program_size(_WIDE)
    assert not search(_WIDE, "a" * 1000)
    with pytest.raises(MatchTooCostly, match="too long to match"):
        search(_WIDE, "a" * (SEARCH_MOST // size + 1))
    assert search("^a+$", "a" * 1_000_000)  # a small program: a long text is fine


def test_a_pattern_check_too_costly_fails_the_answer_with_why() -> None:
    from runtime.linear_regex import SEARCH_MOST, program_size

    text = "a" * (SEARCH_MOST // program_size(_WIDE) + 1)
    [error] = schema_validator({"type": "string", "pattern": _WIDE}).iter_errors(text)
    assert "too long to match" in error.message


def test_many_keys_against_many_patterns_fail_the_answer_with_why() -> None:
    """Each key is short, but every key is searched against every pattern: their product is
    what a check costs, bounded as one search's is."""
    patterns = {f"^{c}(a|e)[a-z ]{{900}}z": True for c in "bcdfgh"}
    keys = {f"k{n:06d}" + "x" * 100: 1 for n in range(4000)}
    for schema in ({"type": "object", "patternProperties": patterns},
                   {"type": "object", "patternProperties": patterns,
                    "additionalProperties": False}):  # fmt: skip
        messages = [e.message for e in schema_validator(schema).iter_errors(keys)]
        assert any("too many to match against its 6 patterns" in m for m in messages), messages
    assert schema_validator({"type": "object", "patternProperties": patterns}).is_valid({"k": 1})


def test_a_schema_of_too_many_or_too_large_patterns_is_not_valid() -> None:
    """Checked before the metaschema compiles them: as many distinct patterns as are kept
    compiled, and a bound on their programs' instructions in all."""
    from jsonschema.exceptions import SchemaError

    from runtime.json_schema import INSTRUCTIONS_MOST, PATTERNS_MOST, check_schema

    many = {"type": "object", "patternProperties": {f"^k{n}$": True
                                                    for n in range(PATTERNS_MOST + 1)}}  # fmt: skip
    with pytest.raises(SchemaError, match=f"more than {PATTERNS_MOST:,} distinct patterns"):
        check_schema(many)
    fewer = {f"^k{n}$": True for n in range(PATTERNS_MOST)}
    check_schema({"type": "object", "patternProperties": fewer})
    large = {"anyOf": [{"type": "string", "pattern": f"^{n}" + r"\W{1000}"} for n in range(10)]}
    with pytest.raises(SchemaError, match=f"more than {INSTRUCTIONS_MOST:,} instructions"):
        check_schema(large)


def test_an_answer_nested_past_the_stack_is_a_problem_not_a_recursion_error() -> None:
    from runtime.worker import schema_problems

    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    problems = schema_problems(schema_validator({"items": {"$ref": "#"}, "maxItems": 0}), deep)
    assert problems == ["at (top level): the answer nests too deeply to be checked against "
                        "the schema"]  # fmt: skip
