"""Fuzz round 21 of the stand-in: schemas it answered invalidly, raised a Python error on, or
refused though they have plain valid instances. Every test here failed when it was written;
each passes once the stand-in answers such a schema validly (or refuses a truly unsatisfiable
one with ``UnsatisfiableSchema``). Seeds are fixed, so each failure is repeatable.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planlang.standin import StandIn, UnsatisfiableSchema, value_for
from runtime.json_schema import schema_validator
from runtime.worker import build_messages, response_params

SEEDS = range(12)


def _answer(schema: dict[str, Any], seed: int) -> Any:
    """The full path a worker takes: the stand-in client, the runtime's own messages."""
    messages = build_messages("q", system=None, schema=schema, data=None)
    return StandIn(seed)("small", messages, **response_params(schema, "json_schema")).data


def _valid(schema: dict[str, Any], seeds: Any = SEEDS) -> None:
    """Every seed answers, and every answer is valid (a fresh copy of the schema each call)."""
    check = schema_validator(copy.deepcopy(schema))
    for seed in seeds:
        value = value_for(copy.deepcopy(schema), random.Random(seed))
        assert check.is_valid(value), (seed, value)


def _never_invalid(schema: dict[str, Any], seeds: Any = SEEDS) -> None:
    """Unsatisfiable: each seed refuses with ``UnsatisfiableSchema``, never an answer."""
    for seed in seeds:
        with pytest.raises(UnsatisfiableSchema):
            value = value_for(copy.deepcopy(schema), random.Random(seed))
            print("answered", value)


# 1. Invalid data handed on (the "exact" fast path skips validation) -----------------------


def test_required_key_outside_properties_meets_additional_properties_schema() -> None:
    # answered {"a": "merge"}: the word ignores additionalProperties {"type": "integer"}
    schema = {"type": "object", "additionalProperties": {"type": "integer"}, "required": ["a"]}
    _valid(schema)
    for seed in range(3):
        assert schema_validator(schema).is_valid(_answer(schema, seed))


def test_required_key_forbidden_by_additional_properties_false_is_refused() -> None:
    # answered {"b": "node"}, which additionalProperties: false refuses (no answer exists)
    _never_invalid({"type": "object", "properties": {"a": {"type": "string"}},
                    "required": ["b"], "additionalProperties": False})  # fmt: skip


def test_a_false_property_schema_is_left_out() -> None:
    # answered {"a": None} about half the time; {} is valid
    _valid({"type": "object", "properties": {"a": False}})


def test_a_required_false_property_is_refused() -> None:
    # answered {"a": None}; no answer exists
    _never_invalid({"type": "object", "properties": {"a": False}, "required": ["a"]})


def test_items_false_answers_the_empty_array() -> None:
    # answered [None, None]; [] is valid
    _valid({"type": "array", "items": False})


def test_items_false_with_min_items_is_refused() -> None:
    # answered [None, None, None, None]; no answer exists
    _never_invalid({"type": "array", "items": False, "minItems": 1})


def test_an_empty_enum_is_refused() -> None:
    # answered None, unchecked
    _never_invalid({"enum": []})


def test_const_outside_enum_is_refused() -> None:
    # answered 1, unchecked; no answer exists
    _never_invalid({"const": 1, "enum": [2]})


@pytest.mark.parametrize("schema", [
    {"type": "string", "maxLength": 0},
    {"type": "object", "properties": {"code": {"type": "string", "maxLength": 0}},
     "required": ["code"]},
    {"type": ["string", "null"], "maxLength": 0},
])  # fmt: skip
def test_max_length_zero_answers_the_empty_text(schema: dict[str, Any]) -> None:
    # answered "node bravo index queue": the default minLength 1 is above maxLength 0, so the
    # text was not cut at all
    _valid(schema)


def test_all_of_does_not_change_the_plans_schema() -> None:
    # Maker.make's allOf merge updated the schema's own "properties" dict in place: the
    # plan's schema lost its const (and a real model is then asked the changed schema)
    schema = {"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"],
              "allOf": [{"properties": {"a": {"type": "integer"}}}]}  # fmt: skip
    before = copy.deepcopy(schema)
    try:
        value = value_for(schema, random.Random(0))
    except UnsatisfiableSchema:
        value = None
    assert schema == before
    assert value == {"a": 1}


def test_all_of_keeps_the_outer_property_schema() -> None:
    # the merged property {"type": "string"} replaced {"enum": ["x", "y"]}: refused, though
    # {"a": "x"} is valid
    _valid({"type": "object", "properties": {"a": {"enum": ["x", "y"]}}, "required": ["a"],
            "allOf": [{"properties": {"a": {"type": "string"}}}]})  # fmt: skip


def test_an_answer_does_not_share_the_schemas_const() -> None:
    # the answer was the schema's own const object: a plan that changes its answer changed
    # its schema (a model's answer is a fresh parse)
    schema = {"type": "object", "properties": {"cfg": {"const": {"tags": ["a"]}}},
              "required": ["cfg"]}  # fmt: skip
    answer = _answer(schema, 0)
    answer["cfg"]["tags"].append("b")
    assert schema["properties"]["cfg"]["const"] == {"tags": ["a"]}


# 2. A Python error, not UnsatisfiableSchema ---------------------------------------------


@pytest.mark.parametrize("schema", [
    {"type": "string", "maxLength": 3.0},  # TypeError: slice indices must be integers
    {"type": "string", "minLength": 2.0, "maxLength": 5.0},
    {"maxLength": 2.0},
    {"type": "string", "minLength": 2.0, "pattern": "^[a-z]+$"},  # can't multiply sequence
])  # fmt: skip
def test_whole_float_lengths_are_lengths(schema: dict[str, Any]) -> None:
    # 3.0 is an integer to Draft 2020-12 (and to the metaschema check): a valid schema
    _valid(schema)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(low=st.integers(0, 5), extra=st.integers(0, 5), pattern=st.booleans())
def test_whole_float_lengths_never_raise(low: int, extra: int, pattern: bool) -> None:
    schema: dict[str, Any] = {"type": "string", "minLength": float(low),
                              "maxLength": float(low + extra)}  # fmt: skip
    if pattern:
        schema["pattern"] = "^[a-z]*$"
    try:
        value = value_for(schema, random.Random(0))
    except UnsatisfiableSchema:
        return
    assert schema_validator(schema).is_valid(value)


# 3. Refused, though plain valid instances exist ------------------------------------------


def test_a_tuple_closed_by_items_false() -> None:
    # ["a", 1] is valid; the maker drew 2..6 items, the ones past the prefix None, so some
    # seeds (6 here) missed in all 8 tries
    _valid({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "items": False}, seeds=range(20))  # fmt: skip


@pytest.mark.parametrize("fmt", ["uuid", "email", "date-time", "uri"])
def test_unique_items_of_a_format(fmt: str) -> None:
    # a format answers one fixed text, so two distinct items never come
    _valid({"type": "array", "uniqueItems": True, "minItems": 2,
            "items": {"type": "string", "format": fmt}})  # fmt: skip


def test_unique_integers_past_the_default_range() -> None:
    # integers are drawn from 0..100: 101 distinct ones never come ([0, ..., 100] is valid);
    # at minItems 200,000 the eight tries took 16 s of CPU before refusing
    _valid({"type": "array", "uniqueItems": True, "minItems": 101,
            "items": {"type": "integer"}}, seeds=range(2))  # fmt: skip


@pytest.mark.parametrize("schema", [
    {"type": "string", "format": "uri", "pattern": "^https://github\\.com/"},
    {"type": "string", "format": "ipv4", "pattern": "^10\\."},
    {"type": "string", "format": "date-time", "minLength": 25},
])  # fmt: skip
def test_a_format_beside_a_pattern_or_length(schema: dict[str, Any]) -> None:
    # the format's fixed sample ignores the pattern: "https://github.com/o/r" is valid
    _valid(schema)


@pytest.mark.parametrize("schema", [
    # shared properties beside a oneOf / anyOf of requirements (an OpenAPI shape)
    {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
     "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"},
                                      "phone": {"type": "string"}},
     "required": ["name"], "anyOf": [{"required": ["email"]}, {"required": ["phone"]}]},
    {"type": "null", "oneOf": [True]},
    {"anyOf": [{}], "allOf": [{"type": "null"}]},
])  # fmt: skip
def test_a_choice_keeps_its_siblings(schema: dict[str, Any]) -> None:
    # the maker built the chosen branch alone: {"a": ...} without "id"
    _valid(schema)


def test_a_ref_keeps_its_siblings() -> None:
    # 2020-12 applies $ref and its siblings both; the maker built the target alone
    _valid(
        {
            "$defs": {"base": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "$ref": "#/$defs/base",
            "properties": {"b": {"const": 1}},
            "required": ["b"],
        }
    )


def test_if_then_else() -> None:
    # {"country": "US", "postal_code": "12345"} is valid
    _valid(
        {
            "type": "object",
            "properties": {"country": {"enum": ["US", "CA"]}, "postal_code": {"type": "string"}},
            "required": ["country", "postal_code"],
            "if": {"properties": {"country": {"const": "US"}}},
            "then": {"properties": {"postal_code": {"pattern": "^[0-9]{5}$"}}},
            "else": {"properties": {"postal_code": {"pattern": "^[A-Z][0-9][A-Z] [0-9]$"}}},
        }
    )


def test_dependent_schemas() -> None:
    # {"a": "x", "b": 1} is valid
    _valid({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
            "dependentSchemas": {"a": {"required": ["b"],
                                       "properties": {"b": {"type": "integer"}}}}})  # fmt: skip


@pytest.mark.parametrize("schema", [
    {"type": "object", "minProperties": 1},
    {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1},
    {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "minProperties": 1},
    {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}, "required": ["abc"]},
    {"type": "object", "properties": {"x": {"type": "string"}},
     "patternProperties": {"^y": {"type": "integer"}}, "additionalProperties": False,
     "required": ["y1"]},
])  # fmt: skip
def test_objects_with_keys_beyond_properties(schema: dict[str, Any]) -> None:
    # {"k": "v"}, {"x-a": "v"}, {"abc": 1}, {"y1": 1} are valid
    _valid(schema)


def test_max_properties_zero_with_optional_properties() -> None:
    # {} is valid; the maker kept each optional property half the time (refused 14 seeds of 20)
    _valid(
        {
            "type": "object",
            "maxProperties": 0,
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string"},
                "c": {"type": "string"},
                "d": {"type": "string"},
            },
        },
        seeds=range(20),
    )


@pytest.mark.parametrize("schema", [
    {"type": "array", "contains": {"type": "integer"}},
    {"type": "array", "items": {"type": "string"}, "contains": {"const": "main"}},
    {"type": "array", "maxContains": 1, "contains": {"type": "string"}, "minItems": 3},
])  # fmt: skip
def test_contains(schema: dict[str, Any]) -> None:
    # [1], ["main"], ["a", 1, 2] are valid
    _valid(schema)


@pytest.mark.parametrize("schema", [
    {"type": "integer", "not": {"minimum": 0}},
    {"not": {"type": "string"}},
])  # fmt: skip
def test_not(schema: dict[str, Any]) -> None:
    # -1 and 1 are valid
    _valid(schema)


@pytest.mark.parametrize("schema", [
    {"$defs": {"a": {"$anchor": "foo", "type": "integer"}}, "$ref": "#foo"},
    {"$defs": {"a b": {"type": "integer"}}, "$ref": "#/$defs/a%20b"},
    {"$id": "https://example.com/root", "$defs": {"a": {"type": "integer"}},
     "$ref": "https://example.com/root#/$defs/a"},
])  # fmt: skip
def test_refs_the_validator_resolves(schema: dict[str, Any]) -> None:
    # an anchor, a percent-encoded pointer, the schema's own $id: 1 (or [1]) is valid
    _valid(schema)


def test_a_ref_to_a_nested_id_is_refused_saying_the_stand_in_cannot_follow_it() -> None:
    # a known limit: a $ref naming an $id inside the schema ("item") is resolved by the
    # validator, not by the stand-in, which says so rather than answer wrongly
    schema = {"$id": "https://example.com/root",
              "$defs": {"a": {"$id": "item", "type": "integer"}},
              "type": "array", "items": {"$ref": "item"}, "minItems": 1}  # fmt: skip
    with pytest.raises(UnsatisfiableSchema, match="resolves only local \\$refs, not 'item'"):
        value_for(schema, random.Random(0))


@pytest.mark.parametrize("pattern", ["^[\\u0041-\\u005A]+$", "^[^\\u0000-\\u001f]*$"])
def test_ecma_unicode_escapes_in_patterns(pattern: str) -> None:
    # ECMA-262 reads \\uXXXX; RE2 does not, so the schema was called "not valid" (naming
    # backreferences): "AB" is valid
    _valid({"type": "string", "pattern": pattern}, seeds=range(3))


@pytest.mark.parametrize("schema", [
    {"minimum": 5, "maximum": 1},
    {"required": ["a"], "additionalProperties": False},
])  # fmt: skip
def test_an_untyped_schema_is_not_called_unsatisfiable(schema: dict[str, Any]) -> None:
    # with no type, "x" (or null) is valid; the stand-in said "no answer can satisfy the JSON
    # schema" (or failed its 8 tries) because it guessed one kind
    _valid(schema, seeds=range(3))
