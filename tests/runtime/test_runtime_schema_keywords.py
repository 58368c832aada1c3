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
