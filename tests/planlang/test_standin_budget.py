"""The stand-in builds no answer past what a model's reply holds, whatever the schema's form
(REDTEAM17): a choice among kinds or branches is made only among those it can build within
``ANSWER_MOST``, a ``$ref`` and a node without a type are counted as the makers build them,
and every build stops at the bound as it is made. Counting is linear in the schema."""

from __future__ import annotations

import random
from typing import Any

import pytest

from planlang import standin_size
from planlang.standin import UnsatisfiableSchema, value_for
from runtime.json_schema import schema_validator


def _nested(levels: int, item: dict[str, Any]) -> dict[str, Any]:
    schema = item
    for _ in range(levels):
        schema = {"type": "array", "minItems": 300, "items": schema}
    return schema


HUGE = _nested(3, {"type": "integer"})  # every answer holds 27 million items


@pytest.mark.parametrize(
    "schema",
    [
        {"anyOf": [HUGE, {"type": "string"}]},
        {"oneOf": [{"type": "string"}, HUGE]},
        {**HUGE, "type": ["array", "string"]},  # a plain schema: the compiled maker
        {"$defs": {"big": HUGE}, "anyOf": [{"$ref": "#/$defs/big"}, {"type": "integer"}]},
    ],
    ids=["anyOf", "oneOf", "type-list", "ref"],
)
def test_a_choice_is_made_among_what_fits(schema: dict[str, Any]) -> None:
    validator = schema_validator(schema)
    for seed in range(30):
        value = value_for(schema, random.Random(seed))
        assert not isinstance(value, list), f"seed {seed} built the huge branch"
        assert validator.is_valid(value)


@pytest.mark.parametrize(
    "schema",
    [
        {"anyOf": [HUGE]},
        {"minItems": 300, "items": {"minItems": 300, "items": {"minItems": 300, "items": {}}}},
        {"$defs": {"a": HUGE}, "$ref": "#/$defs/a"},
        {**HUGE, "type": ["array"]},
    ],
    ids=["one-choice", "untyped", "ref", "one-kind-list"],
)
def test_a_schema_whose_every_build_is_too_large_is_refused_at_once(
    schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    spent: list[int] = []
    real = standin_size.spend
    monkeypatch.setattr("planlang.standin_maker.spend", lambda n: (spent.append(n), real(n)))
    with pytest.raises(UnsatisfiableSchema, match="past what a model's reply holds"):
        value_for(schema, random.Random(0))
    assert not spent, "it began building an answer it then refused"


def test_a_build_that_grows_past_the_bound_by_its_choices_stops_there() -> None:
    """Each item is an array of 2,000 or an int, chosen as it is built: the least answer is
    small, but about half a million items are drawn for 1,000 arrays. The build stops at the
    bound, refused; what it made is never past the bound by more than one array's draw."""
    inner = {"anyOf": [{"type": "array", "minItems": 2000, "items": {"type": "integer"}},
                       {"type": "integer"}]}  # fmt: skip
    schema = {"type": "array", "minItems": 1000, "items": _nested(0, inner)}
    schema = {"type": "array", "minItems": 2, "items": schema}
    assert standin_size.least_size(schema) < standin_size.ANSWER_MOST
    lowest: list[int] = []
    real = standin_size.spend

    def spend(n: int) -> None:
        try:
            real(n)
        finally:
            lowest.append(standin_size._BUDGET.left)  # type: ignore[arg-type]

    for seed in range(3):
        lowest.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("planlang.standin_maker.spend", spend)
            patch.setattr("planlang.standin_compiled.spend", spend)
            with pytest.raises(UnsatisfiableSchema, match="past what a model's reply holds"):
                value_for(schema, random.Random(seed))
        assert min(lowest) > -2004  # one array's draw past it, at most
    assert standin_size._BUDGET.left is None  # no budget left behind on this thread


def test_least_size_counts_each_node_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty definitions, each choosing the next twice: 2**40 paths, 80 nodes."""
    defs = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
            for i in range(40)}  # fmt: skip
    defs["d40"] = {"type": "string", "minLength": 7}
    schema = {"$defs": defs, "$ref": "#/$defs/d0"}
    counted: list[Any] = []
    real = standin_size._Count._least

    def counting(self: Any, node: Any, depth: int, kind: Any) -> int:
        counted.append(node)
        return real(self, node, depth, kind)

    monkeypatch.setattr(standin_size._Count, "_least", counting)
    assert standin_size.least_size(schema) >= 1
    assert len(counted) <= 2 * 41 + 1
    assert len({id(node) for node in counted}) == len(counted)
