"""Review 23, the stand-in's part, in general: neighbours of each defect the review found
(an escaped surrogate pair in a pattern, allOf bounds, a ``type`` list naming null, ``if``
without ``else``), each answer checked by the schema's own validator on several seeds."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- a type list naming null: null is an answer where the other kinds give none or too few ---

_KINDS = ["string", "integer", "number", "boolean", "object", "array"]
_NO_ANSWER = {"string": {"minLength": 5, "maxLength": 2}, "integer": {"minimum": 5, "maximum": 3},
              "number": {"minimum": 5, "maximum": 3}, "array": {"minItems": 3, "maxItems": 1},
              "object": {"minProperties": 3, "maxProperties": 1}}  # fmt: skip


@st.composite
def _nullable(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    """A schema whose type list names null among other kinds, some of them barred (by a not,
    or by bounds no value of theirs meets), and how many distinct values it has at most."""
    others = draw(st.lists(st.sampled_from(_KINDS), unique=True, max_size=4))
    kinds = [*others]
    kinds.insert(draw(st.integers(0, len(others))), "null")
    schema: dict[str, Any] = {"type": kinds}
    barred = draw(st.lists(st.sampled_from(others), unique=True)) if others else []
    if barred:
        schema["not"] = {"type": barred[0] if len(barred) == 1 else barred}
    for kind in draw(st.lists(st.sampled_from(sorted(_NO_ANSWER)), unique=True)):
        schema.update(_NO_ANSWER[kind])
    left = [k for k in others if k not in barred and not ("number" in barred and k == "integer")
            and not set(_NO_ANSWER.get(k, {})) <= set(schema)]  # fmt: skip
    many = 1 + sum(2 if k == "boolean" else 5 for k in left)
    return schema, many


@settings(derandomize=True, max_examples=150, deadline=None, database=None)
@given(_nullable(), st.sampled_from(["alone", "items", "property", "allOf"]), st.integers(1, 5),
       st.integers(0, 2**16))  # fmt: skip
def test_a_type_list_naming_null_is_answered(case: tuple[dict[str, Any], int], where: str,
                                             count: int, seed: int) -> None:  # fmt: skip
    node, many = case
    if where == "items":  # as many distinct items as the kinds left have values, at most
        schema = {"type": "array", "items": node, "uniqueItems": True,
                  "minItems": min(count, many)}  # fmt: skip
    elif where == "property":
        schema = {"type": "object", "properties": {"a": node}, "required": ["a"]}
    elif where == "allOf":
        schema = {"allOf": [{"type": node["type"]}, node]}
    else:
        schema = node
    value = value_for(schema, random.Random(seed))
    assert schema_validator(schema).is_valid(value), (schema, value)


@pytest.mark.parametrize("schema", [
    {"type": "array", "items": {"type": ["boolean", "null"]}, "uniqueItems": True, "minItems": 3},
    {"type": "array", "items": {"type": ["null", "boolean"]}, "uniqueItems": True, "minItems": 3},
    {"type": "array", "items": {"type": ["null"]}, "uniqueItems": True, "minItems": 1},
    {"type": "array", "items": {"enum": [True, False, None]}, "uniqueItems": True,
     "minItems": 3},
    {"type": ["string", "null"], "not": {"type": "string"}},
    {"type": ["null", "string"], "not": {"type": "string"}},
    {"type": ["integer", "null", "string"], "not": {"type": ["integer", "string"]}},
    {"type": ["integer", "null"], "not": {"type": "number"}},  # an integer is a number
    {"type": ["integer", "null"], "minimum": 5, "maximum": 3},
    {"type": ["null", "array"], "minItems": 3, "maxItems": 1},
    {"type": ["array", "null"], "minItems": 2_000_000},  # past what an answer holds: null
    {"type": "object", "properties": {"a": {"type": ["object", "null"], "required": ["x"],
                                            "properties": {"x": False}}}, "required": ["a"]},
    {"type": ["string", "null"], "not": {"type": "string", "minLength": 0}},  # the check's word
])  # fmt: skip
def test_null_of_a_type_list(schema: dict[str, Any]) -> None:
    _valid(schema, seeds=range(20))


def test_null_is_not_drawn_where_another_kind_answers() -> None:
    # a nullable field still answers its kind on a first try, as before
    answers = _valid({"type": ["integer", "null"], "minimum": 0, "maximum": 9}, seeds=range(20))
    assert None not in answers


def test_a_type_list_of_kinds_all_barred_is_refused() -> None:
    with pytest.raises(UnsatisfiableSchema, match="bars every type"):
        value_for({"type": ["string", "integer"], "not": {"type": ["number", "string"]}},
                  random.Random(0))  # fmt: skip


# -- if, then, else: an answer meets the if and the then, or misses the if and meets the else

_RESTS = [{"type": "integer"}, {"type": "integer", "maximum": 3},
          {"type": "integer", "minimum": 10},
          {"type": "number"}, {"type": "string"}, {}, {"type": ["integer", "null"]}]  # fmt: skip
_IFS = [{"minimum": 5}, {"maximum": 5}, {"exclusiveMinimum": 5}, {"type": "integer"},
        {"type": "string"}, {"const": 7}, {"minLength": 3}, {"type": "integer", "minimum": 0},
        True, False]  # fmt: skip
_THENS = [{"maximum": 3}, {"multipleOf": 2}, {"minimum": 100}, {"type": "null"}, False, True]
_ELSES = [{"minimum": 100}, {"maximum": -100}, {"type": "null"}, {"maxLength": 1}, False, True]
# values enough to tell whether a schema above has an answer at all
_CANDIDATES = [*range(-120, 121), 0.5, 4.5, 5.5, -0.5, 100.5, -100.5, "", "a", "abcd", None, True,
               False, {}, []]  # fmt: skip


def _answerable(schema: dict[str, Any]) -> bool:
    check = schema_validator(schema)
    return any(check.is_valid(value) for value in _CANDIDATES)


@settings(derandomize=True, max_examples=250, deadline=None, database=None)
@given(st.sampled_from(_RESTS), st.sampled_from(_IFS), st.none() | st.sampled_from(_THENS),
       st.none() | st.sampled_from(_ELSES), st.sampled_from(["alone", "property", "allOf"]),
       st.integers(0, 2**16))  # fmt: skip
def test_if_then_else_is_answered(rest: dict[str, Any], if_: Any, then: Any, else_: Any,
                                  where: str, seed: int) -> None:  # fmt: skip
    node: dict[str, Any] = {**rest, "if": if_}
    if then is not None:
        node["then"] = then
    if else_ is not None:
        node["else"] = else_
    if not _answerable(node):
        return  # no answer among the candidates: not the stand-in's to find one
    if where == "property":
        schema: dict[str, Any] = {"type": "object", "properties": {"a": node}, "required": ["a"]}
    elif where == "allOf":
        schema = {"allOf": [rest, {k: v for k, v in node.items() if k not in rest}]}
    else:
        schema = node
    value = value_for(schema, random.Random(seed))
    assert schema_validator(schema).is_valid(value), (schema, value)


@pytest.mark.parametrize("schema", [
    {"type": "integer", "if": {"minimum": 5}, "then": {"maximum": 3}},  # only below 5
    {"type": "integer", "if": {"maximum": 5}, "then": {"minimum": 6}},  # only above 5
    {"type": "integer", "if": {"minimum": 5}, "then": False},
    {"type": "integer", "if": True, "else": {"minimum": 3}},  # the if always met: any integer
    {"type": "integer", "if": False, "then": {"minimum": 3}},  # never met: any integer
    {"type": "integer", "maximum": 3, "if": {"minimum": 5}, "then": False},
    {"type": "integer", "minimum": 10, "if": {"minimum": 5}, "else": False},  # always met
    {"type": "integer", "if": {"minimum": 5}, "then": {"maximum": 3}, "else": {"maximum": -50}},
    {"type": "integer", "if": {"minimum": 5}, "else": False},  # at least 5
    {"type": "string", "if": {"minLength": 3}, "then": {"maxLength": 2}},  # shorter than 3
    {"if": {"type": "string"}, "then": False},  # anything but a string
    {"type": "string", "if": {"maxLength": 3}, "then": False},  # longer than 3
    {"type": "array", "if": {"minItems": 2}, "then": False},  # at most one item
    {"type": "array", "if": {"maxItems": 2}, "then": False, "items": {"type": "integer"}},
    {"type": "object", "if": {"minProperties": 1}, "then": False},  # {} alone
    {"type": "object", "if": {"maxProperties": 1}, "then": False},
    {"type": "string", "if": {"minLength": 0}, "else": {"const": 1}},  # always met
    {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}}, "required": ["kind"],
     "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]},
     "else": {"required": ["y"]}},
])  # fmt: skip
def test_a_condition_the_answer_must_miss_or_meet(schema: dict[str, Any]) -> None:
    _valid(schema, seeds=range(20))


# -- allOf, drawn: bounds of one kind spread over parts in any order --------------------------

_KIND_BOUNDS = {
    "integer": (["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
                [*range(-100, 101)]),
    "number": (["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
               [x / 2 for x in range(-200, 201)]),
    "string": (["minLength", "maxLength"], ["a" * n for n in range(13)]),
    "array": (["minItems", "maxItems"], [[0] * n for n in range(13)]),
    "object": (["minProperties", "maxProperties"],
               [{str(i): 0 for i in range(n)} for n in range(13)]),
}  # fmt: skip


@st.composite
def _spread_bounds(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    kind = draw(st.sampled_from(sorted(_KIND_BOUNDS)))
    keys, candidates = _KIND_BOUNDS[kind]
    numeric = kind in ("integer", "number")
    parts: list[dict[str, Any]] = [{"type": kind}]
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(keys))
        if key == "multipleOf":
            value: Any = draw(st.integers(1, 6))
        elif numeric:
            value = draw(st.integers(-90, 90))
        else:
            value = draw(st.integers(0, 10))
        parts.insert(draw(st.integers(0, len(parts))), {key: value})
    if draw(st.booleans()):  # some parts nested
        parts = [parts[0], {"allOf": parts[1:]}]
    return {"allOf": parts}, candidates


@settings(derandomize=True, max_examples=200, deadline=None, database=None)
@given(_spread_bounds(), st.integers(0, 2**16))
def test_allof_of_drawn_bounds_is_answered(case: tuple[dict[str, Any], list[Any]],
                                           seed: int) -> None:  # fmt: skip
    schema, candidates = case
    check = schema_validator(schema)
    if not any(check.is_valid(value) for value in candidates):
        return  # no answer (minimum above maximum): refused, which another test shows
    value = value_for(schema, random.Random(seed))
    assert check.is_valid(value), (schema, value)


def _chain(parts, end: dict, levels: int = 30) -> dict:
    defs = {f"d{i}": {"allOf": parts(f"#/$defs/d{i + 1}")} for i in range(levels)}
    return {"$defs": {**defs, f"d{levels}": end}, "$ref": "#/$defs/d0"}


_NONE = {"type": "integer", "minimum": 5, "maximum": 3}


@pytest.mark.parametrize("schema", [
    _chain(lambda ref: [{"$ref": ref}, {"$ref": ref}], _NONE),
    _chain(lambda ref: [{"allOf": [{"$ref": ref}]}, {"allOf": [{"$ref": ref}]}], _NONE),
    _chain(lambda ref: [{"$ref": ref, "title": "a"}, {"$ref": ref, "title": "b"}], _NONE),
], ids=["refs", "nested-allof", "refs-with-siblings"])  # fmt: skip
@pytest.mark.parametrize("fanned", [False, True], ids=["direct", "parallel"])
def test_an_allof_chain_naming_each_level_twice_is_read_in_linear_time(schema, fanned) -> None:
    """Merging an allOf copied a part met twice twice: 30 $defs each naming the next twice
    were 2**30 parts to merge, past any limit (a 2 s plan still running at 40 s, its deadline
    read only between parts' nodes). A part met twice merges once, and the merge reads the
    plan's clock: the chain's end, no integer at least 5 and at most 3, is found at once."""
    import planlang
    from planlang.sandbox.limits import Limits
    from runtime import Settings

    call = f"agent('x', schema={schema!r})"
    plan = f"r = parallel([lambda: {call}])\n" if fanned else f"r = {call}\n"
    report = planlang.price(plan + "result = 1\n", settings=Settings(), seeds=1,
                            limits=Limits(seconds=60), isolation="inprocess")  # fmt: skip
    messages = [p.message for p in report.problems]
    assert messages and not any("time limit" in m for m in messages), messages
