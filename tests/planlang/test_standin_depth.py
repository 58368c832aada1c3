"""Deep schemas: the stand-in answers a recursive or deeply nested schema with valid data.

Before, the maker answered ``None`` for any node deeper than 12 levels: a recursive tree
schema (``$ref`` to itself) was refused in about one run in five, a plain object nested past
12 levels was answered with ``null`` inside and that answer was not validated (its keywords
were all ones the maker "honours"), so a rehearsal handed the plan data its own schema
refuses; an ``allOf`` chain 13 deep was refused. Now past 8 levels the maker makes the least
the schema allows (required properties, ``minItems`` items), so a recursion ends, and past 64
levels its answer is checked and refused, never handed on invalid.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from planlang.standin import StandIn, UnsatisfiableSchema, value_for
from runtime.json_schema import schema_validator
from runtime.worker import build_messages, response_params

_TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "required": ["name", "children"],
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
        }
    },
    "$ref": "#/$defs/node",
}


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "required": ["k"], "properties": {"k": schema}}
    return schema


def _answer(schema: dict[str, Any], seed: int) -> Any:
    messages = build_messages("q", system=None, schema=schema, data=None)
    return StandIn(seed)("small", messages, **response_params(schema, "json_schema")).data


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return schema_validator(schema).is_valid(value)


def test_a_recursive_tree_schema_is_answered_validly_on_every_seed() -> None:
    for seed in range(30):
        answer = _answer(_TREE, seed)
        assert _valid(_TREE, answer), (seed, answer)


@pytest.mark.parametrize("levels", [13, 40, 63])
def test_a_plain_object_nested_deep_is_answered_validly(levels: int) -> None:
    schema = _nested(levels)
    for seed in range(5):
        answer = value_for(schema, random.Random(seed))
        assert _valid(schema, answer), (levels, seed)
        assert _valid(schema, _answer(schema, seed)), (levels, seed)


def test_an_all_of_chain_deeper_than_twelve_is_answered() -> None:
    schema: dict[str, Any] = {"type": "integer", "minimum": 3}
    for _ in range(20):
        schema = {"allOf": [schema]}
    for seed in range(5):
        answer = value_for(schema, random.Random(seed))
        assert isinstance(answer, int) and answer >= 3


def test_past_the_deepest_level_the_answer_is_refused_never_invalid() -> None:
    schema = _nested(70)
    for seed in range(3):
        with pytest.raises(UnsatisfiableSchema):
            value_for(schema, random.Random(seed))
