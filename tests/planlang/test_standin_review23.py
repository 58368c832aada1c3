"""Review 23, the stand-in's part, in general: neighbours of each defect the review found
(an escaped surrogate pair in a pattern, allOf bounds, a ``type`` list naming null, ``if``
without ``else``), each answer checked by the schema's own validator on several seeds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from planlang.standin import UnsatisfiableSchema, value_for
from runtime.json_schema import schema_validator


def _valid(schema: dict[str, Any], seeds: range = range(6)) -> list[Any]:
    answers = []
    for seed in seeds:
        value = value_for(schema, random.Random(seed))
        assert schema_validator(schema).is_valid(value), (schema, seed, value)
        answers.append(value)
    return answers


# -- an escaped surrogate pair is the one character it makes (as runtime.linear_regex reads it)


@pytest.mark.parametrize("pattern", [
    "^\\uD83D\\uDE00$",
    "^\\ud83d\\ude00$",  # lower-case hex
    "^a\\uD83D\\uDE00b$",
    "^(\\uD83D\\uDE00)+$",
    "^\\uD83D\\uDE00{2,3}$",  # the repeat is of the whole character
    "^(?:x|\\uD83D\\uDE00)$",
    "^[\\uD83D\\uDE00-\\uD83D\\uDE4F]+$",  # a class of pairs
    "^[a\\uD83D\\uDE00]$",
    "^\\uD800\\uDC00$",  # the first and the last astral characters
    "^\\uDBFF\\uDFFF$",
    "\\uD83D\\uDE00",  # unanchored
])  # fmt: skip
def test_a_surrogate_pair_in_a_pattern_is_one_character(pattern: str) -> None:
    _valid({"type": "string", "pattern": pattern})


def test_a_surrogate_pair_pattern_under_a_length() -> None:
    # one character to JSON Schema's length, as to the pattern
    answers = _valid({"type": "string", "pattern": "^(\\uD83D\\uDE00)*$", "minLength": 3,
                      "maxLength": 3})  # fmt: skip
    assert all(len(a) == 3 for a in answers)


def test_an_escaped_backslash_before_u_is_not_a_pair() -> None:
    # ``\\\\uD83D`` is a backslash and the letters uD83D, then the lone \\uDE00
    from planlang.standin_pattern import _readable

    assert _readable("^\\\\uD83D\\uDE00$") == "^\\\\uD83D\\uDE00$"


# -- allOf: of two bounds the tighter, whichever part sets it ---------------------------------

# (kind, keyword, a loose value, a tight value): each bound keyword
_BOUNDS = [
    ("string", "maxLength", 20, 2),
    ("string", "minLength", 0, 15),
    ("array", "maxItems", 9, 1),
    ("array", "minItems", 0, 7),
    ("object", "maxProperties", 9, 1),
    ("object", "minProperties", 0, 3),
    ("integer", "minimum", 0, 1000),
    ("integer", "maximum", 1000, -5),
    ("integer", "exclusiveMinimum", 0, 990),
    ("integer", "exclusiveMaximum", 1000, -3),
    ("number", "minimum", -1.5, 500.25),
    ("number", "maximum", 700, -2.5),
    ("number", "exclusiveMinimum", 0, 400.5),
    ("number", "exclusiveMaximum", 900, 0.5),
]
_TYPED = {"array": {"items": {"type": "integer"}},
          "object": {"additionalProperties": {"type": "boolean"}}}  # fmt: skip


def _allof_cases() -> list[Any]:
    cases = []
    for kind, key, loose, tight in _BOUNDS:
        base = {"type": kind, **_TYPED.get(kind, {})}
        cases += [
            {"allOf": [{**base, key: loose}, {key: tight}]},
            {"allOf": [{**base, key: tight}, {key: loose}]},
            {**base, key: loose, "allOf": [{key: tight}]},  # the schema's own bound beside
            {"allOf": [base, {key: loose}, {"allOf": [{key: tight}]}]},  # a nested allOf
            {"allOf": [{key: loose}, {**base, key: tight}, {key: loose}]},
        ]
    return cases


@pytest.mark.parametrize("schema", _allof_cases())
def test_allof_meets_the_tighter_of_each_bound(schema: dict[str, Any]) -> None:
    _valid(schema)


@pytest.mark.parametrize("schema", [
    # both bounds of a range narrowed, one by each part, to a single value
    {"allOf": [{"type": "integer", "minimum": 0, "maximum": 1000}, {"minimum": 1000}]},
    {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 0}, {"maximum": 50}]},
    {"allOf": [{"type": "string", "minLength": 3, "maxLength": 20}, {"maxLength": 3}]},
    {"allOf": [{"type": "array", "minItems": 2, "maxItems": 9}, {"maxItems": 2}]},
    # a bound and its exclusive form from different parts
    {"allOf": [{"type": "integer", "minimum": 10}, {"exclusiveMinimum": 20}, {"maximum": 21}]},
    {"allOf": [{"type": "number", "maximum": 1}, {"exclusiveMaximum": 0.5}, {"minimum": 0}]},
    # a not of one bound in a part, the bound the other way
    {"allOf": [{"type": "integer", "maximum": 100}, {"not": {"minimum": 5}}]},
    {"allOf": [{"type": "integer"}, {"not": {"minimum": 5}}, {"not": {"maximum": 0}}]},
    # types, enums, consts and steps of two parts
    {"allOf": [{"type": ["string", "integer"]}, {"type": ["integer", "boolean"]}]},
    {"allOf": [{"type": "number"}, {"type": "integer"}, {"minimum": 2, "maximum": 3}]},
    {"allOf": [{"enum": [1, 2, 3, "a"]}, {"enum": ["a", 3, None]}, {"type": "integer"}]},
    {"allOf": [{"type": "integer", "multipleOf": 4}, {"multipleOf": 6}, {"minimum": 1}]},
    {"allOf": [{"type": "number", "multipleOf": 0.5}, {"multipleOf": 0.75},
               {"minimum": 1, "maximum": 2}]},
    {"allOf": [{"type": "integer", "multipleOf": 3}, {"multipleOf": 1.5},
               {"minimum": 1, "maximum": 4}]},
    # items, prefixItems, uniqueItems and properties of two parts
    {"allOf": [{"type": "array", "items": {"type": "integer", "maximum": 50}, "minItems": 3},
               {"items": {"minimum": 45}}, {"uniqueItems": True}]},
    {"allOf": [{"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 2},
               {"prefixItems": [{"minimum": 7, "maximum": 7}, {"const": "x"}]}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string", "maxLength": 9}},
                "required": ["a"]},
               {"properties": {"a": {"minLength": 9}}, "required": ["b"]},
               {"properties": {"b": {"type": "integer", "minimum": 3, "maximum": 3}}}]},
    {"allOf": [{"type": "object", "patternProperties": {"^x": {"maximum": 1}}},
               {"patternProperties": {"^x": {"type": "integer", "minimum": 1}},
                "required": ["xa"]}]},
    # two choices, each made in turn
    {"allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]},
               {"anyOf": [{"type": "integer", "minimum": 3, "maximum": 3}, {"type": "null"}]}]},
    {"allOf": [{"oneOf": [{"const": 1}, {"const": 2}]}, {"anyOf": [{"const": 2}]}]},
    {"$defs": {"big": {"minimum": 100}, "int": {"type": "integer"}},
     "allOf": [{"$ref": "#/$defs/int", "maximum": 200}, {"$ref": "#/$defs/big"},
               {"$ref": "#/$defs/int", "minimum": 150}]},
    {"allOf": [{"type": "integer", "if": {"minimum": 0}, "then": {"maximum": 10}},
               {"if": {"maximum": 5}, "then": {"minimum": 5}, "else": {"minimum": 8}}]},
])  # fmt: skip
def test_allof_parts_that_narrow_each_other(schema: dict[str, Any]) -> None:
    _valid(schema)


@pytest.mark.parametrize("schema", [
    {"allOf": [{"type": "string"}, {"type": "integer"}]},
    {"allOf": [{"const": 1}, {"const": 2}]},
    {"allOf": [{"type": "integer", "maximum": 3}, {"minimum": 4}]},
    {"allOf": [{"type": "string", "maxLength": 2}, {"minLength": 3}]},
])  # fmt: skip
def test_allof_parts_that_contradict_are_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(UnsatisfiableSchema, match="no answer can satisfy"):
        value_for(schema, random.Random(0))
