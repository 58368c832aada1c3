"""The stand-in's edges (red team 17): number bounds that are infinite, NaN or exclusive only,
``$ref``s into arrays, ``allOf`` of boolean schemas, a ``multipleOf`` past a float's range, and
the plan's deadline, which stops a long build or check of an answer."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from planlang.standin import StandIn, UnsatisfiableSchema, value_for
from planlang.standin_size import OutOfTime, resolve_ref
from runtime import Reply
from runtime.json_schema import schema_validator


def _answers(schema: dict[str, Any], seeds: int = 20) -> list[Any]:
    made = [value_for(schema, random.Random(seed)) for seed in range(seeds)]
    validator = schema_validator(schema)
    for value in made:
        assert validator.is_valid(value), (schema, value)
    return made


@pytest.mark.parametrize("schema", [
    {"type": "integer", "exclusiveMinimum": 500},
    {"type": "integer", "exclusiveMaximum": -500},
    {"type": "number", "exclusiveMinimum": 1e6},
    {"type": "integer", "minimum": 10, "exclusiveMinimum": 0, "maximum": 12},
    {"type": "integer", "minimum": float("nan")},
    {"type": "integer", "maximum": float("inf"), "minimum": float("-inf")},
    {"type": "number", "exclusiveMinimum": float("-inf"), "exclusiveMaximum": float("nan")},
    {"type": "number", "multipleOf": 1e-300},
    {"type": "number", "multipleOf": 1e-300, "minimum": -1e300, "maximum": 1e300},
], ids=["exclusive-min-only", "exclusive-max-only", "number-exclusive-min", "both-mins",
        "nan-min", "infinite-sides", "number-nan-inf", "tiny-step", "tiny-step-wide"])  # fmt: skip
def test_bounds_that_leave_answers_get_valid_ones(schema: dict[str, Any]) -> None:
    """A NaN bound and an infinity every number passes bound nothing (jsonschema's verdict
    too); an exclusive bound alone is a range that starts (or ends) there, not an error."""
    _answers(schema)


@pytest.mark.parametrize(("schema", "said"), [
    ({"type": "integer", "exclusiveMinimum": float("inf")}, "exclusiveMinimum is inf"),
    ({"type": "integer", "minimum": float("inf")}, "minimum is inf"),
    ({"type": "number", "maximum": float("-inf")}, "maximum is -inf"),
    ({"type": "number", "multipleOf": 1e-300, "minimum": 1e300}, "no multiple of 1e-300"),
    ({"allOf": [False, {"type": "string"}]}, "allOf holds the schema false"),
])  # fmt: skip
def test_bounds_no_number_passes_are_refused_with_why(schema: dict[str, Any], said: str) -> None:
    with pytest.raises(UnsatisfiableSchema, match=said):
        value_for(schema, random.Random(0))


def test_a_ref_steps_into_arrays_by_index() -> None:
    schema = {"allOf": [{"type": "integer", "minimum": 3, "maximum": 3}], "$ref": "#/allOf/0"}
    assert resolve_ref(schema, "#/allOf/0") == schema["allOf"][0]
    assert resolve_ref(schema, "#/allOf/1") is None and resolve_ref(schema, "#/allOf/x") is None
    assert resolve_ref(schema, "other.json#/a") is None
    assert set(_answers(schema)) == {3}
    assert all(isinstance(v, str) for v in _answers({"allOf": [True, {"type": "string"}]}))


def test_unique_items_are_unique_as_jsonschema_judges_them() -> None:
    """``true`` and ``1`` are two items; ``1`` and ``1.0`` one."""
    schema = {"type": "array", "minItems": 3, "maxItems": 3, "uniqueItems": True,
              "items": {"enum": [1, True, 1.0, "1"]}}  # fmt: skip
    for value in _answers(schema):
        assert len(value) == 3


def test_a_deadline_passed_stops_a_large_build_and_check() -> None:
    """An answer of 300,000 items with a keyword the maker does not follow (``contains``) is
    built and then checked by the validator: with the deadline passed, both stop within a
    few thousand items (OutOfTime), whichever the answer's maker is."""
    contains = {"type": "array", "minItems": 300_000, "maxItems": 300_000,
                "contains": {"type": "integer"}, "items": {"type": "integer"}}  # fmt: skip
    plain = {"type": "array", "minItems": 300_000, "maxItems": 300_000,
             "items": {"type": "integer"}}  # fmt: skip
    for schema in (contains, plain):
        with pytest.raises(OutOfTime):
            value_for(schema, random.Random(1), deadline=time.monotonic() - 1)
        assert len(value_for(schema, random.Random(1))) == 300_000  # no deadline: made


def test_a_small_answer_is_made_whatever_the_deadline() -> None:
    """The clock is read every thousand steps of a build: a small answer of a schema the maker
    honours exactly (no validation, so no try to start) never looks at it. A schema that is
    validated reads it before each try (the next test's)."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert value_for(schema, random.Random(1), deadline=time.monotonic() - 1) == value_for(
        schema, random.Random(1)
    )


def test_a_validated_schema_starts_no_try_past_the_deadline() -> None:
    schema = {"type": "string", "pattern": "^a"}  # validated: pattern is not exact
    with pytest.raises(OutOfTime):
        value_for(schema, random.Random(1), deadline=time.monotonic() - 1)
    assert value_for(schema, random.Random(1)).startswith("a")


def test_the_stand_in_reads_its_plans_deadline_from_the_meter() -> None:
    """Called outside any plan, the stand-in has no deadline; under a plan's meter it has the
    meter's (the worker then fails, saying why)."""
    from planlang.sandbox import inprocess
    from planlang.sandbox.limits import Limits, Meter
    from runtime import ClientError

    schema = {"type": "array", "minItems": 200_000, "maxItems": 200_000,
              "contains": {"type": "integer"}, "items": {"type": "integer"}}  # fmt: skip
    params = {"response_format": {"type": "json_schema",
                                  "json_schema": {"name": "a", "schema": schema}}}  # fmt: skip
    assert isinstance(StandIn(1)("m", [{"role": "user", "content": "q"}], **params), Reply)
    meter = Meter(Limits(seconds=1))
    meter.deadline = time.monotonic() - 1
    previous, inprocess._running.meter = inprocess._running.meter, meter
    try:
        with pytest.raises(ClientError, match=r"stopped making its answer at the plan's time "
                           r"limit \(seconds=1\)"):  # fmt: skip
            StandIn(1)("m", [{"role": "user", "content": "q2"}], **params)
    finally:
        inprocess._running.meter = previous


def test_tries_that_together_pass_the_bound_say_so_not_that_one_answer_does() -> None:
    """One answer of 600,000 characters fits; two tries at it do not. The refusal names the
    keyword the tries failed and the tries' sum, not "the schema asks for more than"."""
    schema = {"type": "string", "minLength": 600_000, "pattern": r"^\p{Greek}"}  # not built
    with pytest.raises(UnsatisfiableSchema, match=r"'pattern' at schema path pattern\), and its "
                       r"2 tries together passed 1,000,000"):  # fmt: skip
        value_for(schema, random.Random(0))


@pytest.mark.parametrize("step", [2.5, 0.1, 0.3, 7.25, 1e-300])
def test_an_integer_with_a_float_multiple_of_is_answered(step: float) -> None:
    """jsonschema calls an integer a multiple of a float step when its quotient is a whole
    float (5 of 2.5, 1 of 0.1): the stand-in finds one near its draw."""
    _answers({"type": "integer", "multipleOf": step})


@pytest.mark.parametrize("schema", [
    {"type": "number", "minimum": 10**400, "multipleOf": 0.5},
    {"type": "number", "minimum": 10**400, "multipleOf": 0.1},
    {"type": "number", "maximum": -(10**400), "multipleOf": 0.25},
    {"type": "integer", "minimum": 10**400, "multipleOf": 0.5},
    {"type": "integer", "exclusiveMinimum": 10**400, "multipleOf": 7.0},
    {"type": "integer", "minimum": 10**400, "maximum": 10**400 + 10, "multipleOf": 2.5},
])  # fmt: skip
def test_a_bound_past_a_floats_range_with_a_float_multiple_of_is_answered(
    schema: dict[str, Any],
) -> None:
    """A float step is an exact fraction p/q (0.5 is 1/2, 0.1 is 3602879701896397/2**55); the
    integers among its multiples are the multiples of p, and 10**400 (or the first multiple
    of p past it, when no bound above is set) is one. It was refused: "finds no number between
    about 10**400 and about 10**400 that is a multiple of 0.5"."""
    validator = schema_validator(schema)
    for seed in range(3):
        value = value_for(schema, random.Random(seed))
        assert type(value) is int and validator.is_valid(value), (schema, seed)


def test_a_range_past_a_floats_range_with_no_multiple_in_it_is_still_refused() -> None:
    schema = {"type": "integer", "minimum": 10**400, "maximum": 10**400 + 1, "multipleOf": 0.1}
    with pytest.raises(UnsatisfiableSchema, match=r"multiple of 0\.1 \(multipleOf\)"):
        value_for(schema, random.Random(0))
