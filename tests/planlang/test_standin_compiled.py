"""The stand-in's compiled makers draw exactly as its maker does, or leave the schema to it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planlang import standin
from planlang.standin import StandIn, UnsatisfiableSchema, value_for
from planlang.standin_compiled import compile_maker, plain
from planlang.standin_maker import Maker as _Maker

RULES = standin._RULES

bounds = st.one_of(st.none(), st.integers(-5, 30), st.floats(-5, 30, allow_nan=False),
                   st.booleans())  # fmt: skip


def _with(schema: dict[str, Any], **maybe: Any) -> dict[str, Any]:
    return {**schema, **{k: v for k, v in maybe.items() if v is not None}}


leaves = st.one_of(
    st.builds(lambda lo, hi: _with({"type": "integer"}, minimum=lo, maximum=hi), bounds, bounds),
    st.builds(lambda lo, hi: _with({"type": "number"}, minimum=lo, maximum=hi), bounds, bounds),
    st.builds(lambda lo, hi: _with({"type": "string"}, minLength=lo, maxLength=hi), bounds, bounds),
    st.sampled_from([{"type": "boolean"}, {"type": "null"}, {}, True, False, {"type": "thing"},
                     {"type": "guess"}, {"minimum": 2}, {"type": ["integer", "null"]},
                     {"type": ["null"]}, {"type": []}, {"format": "date"}, {"const": "k"},
                     {"const": [1]}, {"enum": []}, {"enum": [[1], 2]}, {"type": None},
                     {"pattern": "^a$", "type": "string"}, {"multipleOf": 2}]),
    st.builds(lambda xs: {"enum": xs}, st.lists(st.one_of(st.integers(), st.text(max_size=3)),
                                                min_size=1, max_size=4)),
)  # fmt: skip


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    arrays = st.builds(lambda item, lo, hi: _with({"type": "array", "items": item},
                                                  minItems=lo, maxItems=hi),
                       children, bounds, bounds)  # fmt: skip
    objects = st.dictionaries(st.sampled_from("abcdef"), children, max_size=4).flatmap(
        lambda props: st.builds(
            lambda required, typed: {**({"type": "object"} if typed else {}),
                                     "properties": props, "required": required},
            st.lists(st.sampled_from(sorted(props) + ["z"]), max_size=4) if props
            else st.just([]), st.booleans()))  # fmt: skip
    return st.one_of(arrays, objects, st.builds(lambda s: [s, s], children))


schemas = st.recursive(leaves, _extend, max_leaves=10)


def _maker(schema: Any, seed: int) -> tuple[str, Any, float]:
    rng = random.Random(seed)
    try:
        value = _Maker(schema, rng, 4).make(schema, depth=0)
    except Exception as error:  # noqa: BLE001 - the kind of failure is what is compared
        return "raised", type(error).__name__, 0.0
    return "made", value, rng.random()


@settings(max_examples=400)
@given(schema=schemas, seed=st.integers(0, 2**32))
def test_a_compiled_maker_draws_what_the_maker_draws(schema: Any, seed: int) -> None:
    expected = _maker(schema, seed)
    compiled = compile_maker(schema, 4, RULES)
    if compiled is None:
        return  # the maker answers it, as before
    rng = random.Random(seed)
    value = compiled(rng)
    assert ("made", value, rng.random()) == expected  # the same value and the same draws after
    assert repr(value) == repr(expected[1])  # 1 and 1.0, True and 1 told apart


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/a", "$defs": {"a": {"type": "integer"}}},
        {"anyOf": [{"type": "integer"}]},
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        {"type": "string", "pattern": "^a$"},
        {"type": "string", "format": "date"},
        {"type": "integer", "multipleOf": 3},
        {"type": "integer", "exclusiveMinimum": 0},
        {"const": {"a": 1}},
        {"type": "integer", "minimum": 5, "maximum": 1},
        {"type": "array", "minItems": 3, "maxItems": 1},
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": -1}}},
        {"type": "unknown"},
    ],
)  # fmt: skip
def test_what_the_maker_may_stop_on_or_reads_more_of_is_left_to_it(schema: Any) -> None:
    assert compile_maker(schema, 4, RULES) is None


def test_only_plain_json_shares_a_compiled_maker() -> None:
    assert plain({"type": "object", "properties": {"a": {"enum": [1, "x", None, 2.5]}}})
    for odd in ({"enum": (1, 2)}, {1: "a"}, {"minimum": float("inf")}, {"a": {1, 2}}):
        assert not plain(odd)


def test_a_tuple_in_a_schema_answers_as_the_maker_does() -> None:
    schema = {"type": ("integer", "null"), "minimum": 0, "maximum": 5}  # no list: not a choice
    for seed in range(5):
        rng, again = random.Random(seed), random.Random(seed)
        assert value_for(schema, rng) == _Maker(schema, again, 4).make(schema, 0)


def test_a_schema_changed_after_its_first_answer_is_answered_as_it_is_now() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"enum": ["x"]}},
                              "required": ["a"]}  # fmt: skip
    messages = [{"role": "user", "content": "q"}]

    def ask() -> Any:
        params = {"response_format": {"type": "json_schema",
                                      "json_schema": {"name": "a", "schema": schema}}}  # fmt: skip
        return StandIn(1)("m", messages, **params).data

    assert ask() == {"a": "x"}
    schema["properties"]["a"]["enum"][0] = "y"
    assert ask() == {"a": "y"}
    schema["properties"]["a"]["enum"][0] = "x"
    assert ask() == {"a": "x"}  # the first text's maker kept its own copy


def test_an_unsatisfiable_schema_is_still_said_to_be_one() -> None:
    with pytest.raises(UnsatisfiableSchema, match="minimum above maximum"):
        value_for({"type": "integer", "minimum": 5, "maximum": 1}, random.Random(0))


plain_schemas = schemas.filter(lambda s: isinstance(s, dict) and plain(s))


@given(schema=plain_schemas, prompt=st.text(), system=st.none() | st.text(),
       name=st.text(max_size=8), model=st.text(max_size=8))  # fmt: skip
def test_the_seed_text_is_json_dumps_of_the_question(
    schema: dict[str, Any], prompt: str, system: str | None, name: str, model: str
) -> None:
    import json

    from planlang.standin_compiled import asked_text, plain_entry, seed_text
    from runtime.worker import build_messages

    messages = build_messages(prompt, system=system, schema=schema, data=None)
    params = {"response_format": {"type": "json_schema",
                                  "json_schema": {"name": name, "schema": schema}}}  # fmt: skip
    entry = plain_entry(schema, 4, RULES)
    expected = json.dumps([model, messages, params], sort_keys=True, default=str)
    assert asked_text([model, messages, params]) == expected
    assert seed_text(model, messages, params, schema, entry) == expected
    other = {"response_format": {"type": "json_object"}}  # not the spliced form: the whole text
    assert seed_text(model, messages, other, schema, entry) == json.dumps(
        [model, messages, other], sort_keys=True, default=str
    )


def test_schemas_told_apart_only_by_number_kind_or_size_keep_their_own_makers() -> None:
    """A compiled maker is found by the schema's text in its own key order (orjson's, or
    json.dumps's for an int past 64 bits, which orjson declines): 3 and 3.0, and an int too
    large for orjson, each answer as the maker does."""
    for schema in ({"type": "integer", "minimum": 0, "maximum": 3},
                   {"type": "integer", "minimum": 0, "maximum": 3.0},
                   {"type": "integer", "minimum": 2**70, "maximum": 2**70 + 9}):  # fmt: skip
        for seed in range(4):
            rng, again = random.Random(seed), random.Random(seed)
            made = value_for(schema, rng)
            assert repr(made) == repr(_Maker(schema, again, 4).make(schema, 0))
