"""An ``enum`` or ``const`` beside a type or a bound: the stand-in answers only what both allow.

Before, ``{"type": "string", "enum": [1, 2]}`` was answered ``1`` with no check (the schema's
keywords were all ones the maker "honours", so its answer skipped validation): a rehearsal
handed the plan data its own schema refuses, which a real model's checked answer never is.
And ``{"type": "string", "enum": [1, "b", 2, 3, 4, 5, 6, 7, 8]}`` drew from all nine values,
so eight tries missed the one string about one time in three and the worker was refused.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planlang.standin import StandIn, UnsatisfiableSchema, value_for
from runtime.json_schema import schema_validator
from runtime.worker import build_messages, response_params


def _answer(schema: dict[str, Any], seed: int, style: str = "json_schema") -> Any:
    messages = build_messages("q", system=None, schema=schema, data=None)
    return StandIn(seed)("small", messages, **response_params(schema, style)).data


@pytest.mark.parametrize("schema", [
    {"type": "string", "enum": [1, 2]},
    {"type": "integer", "const": "a"},
    {"type": "object", "properties": {"k": {"type": "string", "enum": [1]}}, "required": ["k"]},
    {"type": "array", "items": {"type": "boolean", "const": 0}, "minItems": 1},
])  # fmt: skip
def test_a_listed_value_the_schema_refuses_is_never_answered(schema: dict[str, Any]) -> None:
    for seed in range(5):
        with pytest.raises(UnsatisfiableSchema, match="'type'"):
            value_for(schema, random.Random(seed))


def test_only_the_listed_values_the_other_keywords_allow_are_drawn() -> None:
    schema = {"type": "string", "enum": [1, "b", 2, 3, 4, 5, 6, 7, 8]}
    assert {_answer(schema, seed) for seed in range(60)} == {"b"}
    bounded = {
        "type": "object",
        "required": ["k"],
        "properties": {"k": {"type": "integer", "minimum": 5, "enum": [1, 2, 3, 9, 12]}},
    }
    assert {_answer(bounded, seed)["k"] for seed in range(60)} == {9, 12}  # fmt: skip


def test_an_enum_whose_siblings_refer_elsewhere_is_still_answered_validly() -> None:
    schema = {"$defs": {"s": {"type": "string"}}, "type": "object", "required": ["k"],
              "properties": {"k": {"$ref": "#/$defs/s", "enum": [1, "x"]}}}  # fmt: skip
    answers = set()
    for seed in range(30):
        try:
            answers.add(value_for(schema, random.Random(seed))["k"])
        except UnsatisfiableSchema:
            pass  # eight draws of 1 in a row: allowed, never a wrong answer
    assert answers == {"x"}


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-20, 20), st.text("abc", max_size=3),
                    st.floats(-5, 5, allow_nan=False))  # fmt: skip
SIBLINGS = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["string", "integer", "number", "boolean", "null"]),
    "minimum": st.integers(-10, 10), "maximum": st.integers(-10, 10),
    "maxLength": st.integers(0, 3), "title": st.just("t"),
})  # fmt: skip


@given(st.lists(SCALARS, min_size=1, max_size=8), SIBLINGS, st.integers(0, 2**32))
def test_an_answer_is_valid_and_a_schema_with_an_allowed_value_is_answered(
    enum: list[Any], siblings: dict[str, Any], seed: int
) -> None:
    schema = {**siblings, "enum": enum}
    check = schema_validator(schema)
    try:
        made = value_for(schema, random.Random(seed))
    except UnsatisfiableSchema:
        assert not any(check.is_valid(value) for value in enum), schema
    else:
        assert check.is_valid(made), (schema, made)
