"""planlang.strategies: specs, the fake host, and what the generators promise."""

from __future__ import annotations

import ast
import random

import jsonschema
import pytest
from hypothesis import find, given, settings

import planlang
from planlang import language as L
from planlang.strategies import (
    DEFAULT_HOST_WORDS,
    EXCLUDABLE_FEATURES,
    PLANTED_CONSTRUCTS,
    HostWordMisuse,
    HostWordSpec,
    Param,
    fake_host,
    fake_values,
    near_misses,
    plans,
)
from planlang.strategies.near_miss import _VARIANTS, plant
from planlang.strategies.spec import ANY, FLOAT, INT, STR, normalize_host_words, type_of_schema

SEARCH = HostWordSpec(
    "search",
    (Param("query", "str"), Param("limit", "int", keyword=True, required=False)),
    returns={"type": "array", "items": {"type": "string"}},
)
BASE_PLAN = [["n1 = 1"], ["for i2 in range(3):", "    n1 += i2"], ["result = {'n1': n1}"]]


# -- specs -----------------------------------------------------------------------------------


def test_specs_come_from_plain_dicts_or_objects_and_names_must_be_clean() -> None:
    words = normalize_host_words(
        {"search": {"params": [{"name": "query", "kind": "str"}], "returns": {"type": "string"}}}
    )
    assert words["search"].params == (Param("query", "str"),)
    assert normalize_host_words([SEARCH]) == {"search": SEARCH}
    with pytest.raises(ValueError, match="_hidden"):
        HostWordSpec("_hidden")
    with pytest.raises(ValueError, match="'blob'"):
        Param("x", "blob")
    with pytest.raises(ValueError, match="unknown keys"):
        HostWordSpec.from_dict("w", {"return": {}})
    with pytest.raises(ValueError, match="same name"):
        normalize_host_words([SEARCH, SEARCH])


def test_schemas_become_the_types_plans_may_assume() -> None:
    assert type_of_schema({"type": "integer"}) == INT
    assert type_of_schema({"enum": ["a", "b"]}) == STR
    assert type_of_schema({"type": "array", "items": {"type": "number"}}) == ("list", FLOAT)
    record = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert type_of_schema(record) == ("rec", (("a", STR, True),))
    assert type_of_schema({"type": "object", "additionalProperties": {"type": "integer"}}) == (
        "map",
        INT,
    )
    assert type_of_schema({"anyOf": [{"type": "string"}, {"type": "null"}]}) == ANY


# -- the fake host ---------------------------------------------------------------------------


def test_fake_host_answers_valid_data_repeatably_per_seed() -> None:
    schema = DEFAULT_HOST_WORDS["agent"].params[1].choices[0]
    first = fake_host(DEFAULT_HOST_WORDS, seed=3)
    answers = [first["agent"]("q", schema=schema) for _ in range(5)]
    for answer in answers:
        jsonschema.validate(answer, schema)
    again = fake_host(DEFAULT_HOST_WORDS, seed=3)
    assert [again["agent"]("q", schema=schema) for _ in range(5)] == answers
    assert [call.word for call in first.calls] == ["agent"] * 5


def test_fake_host_refuses_arguments_its_spec_does_not_allow() -> None:
    host = fake_host([SEARCH])
    assert isinstance(host["search"]("cats", limit=3), list)
    with pytest.raises(HostWordMisuse, match="does not match"):
        host["search"](42)
    with pytest.raises(HostWordMisuse, match="missing the argument 'query'"):
        host["search"]()
    with pytest.raises(HostWordMisuse, match="unexpected argument 'top'"):
        host["search"]("cats", top=1)
    with pytest.raises(HostWordMisuse, match="not valid"):
        fake_host(DEFAULT_HOST_WORDS)["agent"]("q", schema={"type": 12})


def test_fake_parallel_calls_each_thunk_and_returns_their_results() -> None:
    host = fake_host(DEFAULT_HOST_WORDS)
    assert host["parallel"]([lambda: 1, lambda: "two"]) == [1, "two"]
    with pytest.raises(HostWordMisuse, match="list of callables"):
        host["parallel"]([1])


# -- plans -----------------------------------------------------------------------------------


def _called_names(source: str) -> set[str]:
    tree = ast.parse(source)
    return {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }


def _defined_names(source: str) -> set[str]:
    tree = ast.parse(source)
    names = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    return names | {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


@given(plans([SEARCH], values={"inputs": {"type": "array", "items": {"type": "integer"}}}))
def test_plans_call_only_builtins_their_own_functions_and_the_given_words(source: str) -> None:
    called = _called_names(source)
    allowed = L.ALLOWED_BUILTINS | _defined_names(source) | {"search"}
    assert called <= allowed, called - allowed
    assert source.splitlines()[-1].startswith("result = ")


@settings(max_examples=50)
@given(plans({}, exclude=EXCLUDABLE_FEATURES, max_statements=8))
def test_excluded_features_are_not_generated(source: str) -> None:
    tree = ast.parse(source)
    kinds = {type(n) for n in ast.walk(tree)}
    assert not kinds & {ast.While, ast.FunctionDef, ast.NamedExpr, ast.JoinedStr}
    targets = [n.target for n in ast.walk(tree) if isinstance(n, ast.For | ast.comprehension)]
    targets += [t for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets]
    assert not any(isinstance(t, ast.Tuple) for t in targets)


def test_bad_arguments_are_refused_with_their_value() -> None:
    with pytest.raises(ValueError, match="'goto'"):
        plans(exclude=("goto",))
    with pytest.raises(ValueError, match="-1"):
        plans(max_statements=-1)
    with pytest.raises(ValueError, match="'teleport'"):
        near_misses(constructs=("teleport",))
    with pytest.raises(ValueError, match="both host words and host values"):
        plans([SEARCH], values={"search": {"type": "string"}})


def test_a_plan_wanted_for_a_host_call_shrinks_to_the_call_and_its_use() -> None:
    minimal = find(
        plans(DEFAULT_HOST_WORDS),
        lambda source: "agent(" in source,
        settings=settings(database=None, derandomize=True, max_examples=500),
    )
    statements = [line for line in minimal.splitlines() if not line.startswith("SCHEMA_")]
    assert len(statements) <= 3, minimal
    assert planlang.check(minimal).ok


def test_host_values_are_generated_from_their_schemas() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    values = fake_values({"inputs": schema}, seed=1)
    jsonschema.validate(values["inputs"], schema)
    assert fake_values({"inputs": schema}, seed=1) == values


# -- near misses -----------------------------------------------------------------------------


@pytest.mark.parametrize("construct", PLANTED_CONSTRUCTS)
def test_every_variant_of_every_construct_is_refused_where_it_is_planted(construct: str) -> None:
    for variant in range(len(_VARIANTS[construct])):
        for position in range(len(BASE_PLAN)):
            miss = plant(BASE_PLAN, construct, position, variant)
            result = planlang.check(miss.source)
            lines = {p.line for p in result.problems}
            planted = set(range(miss.line, miss.end_line + 1))
            assert lines and lines <= planted and lines & planted, (miss.snippet, lines)


def test_the_plan_around_a_near_miss_is_valid() -> None:
    for position in range(len(BASE_PLAN)):
        miss = plant(BASE_PLAN, "import", position, 0)
        without = [line for line in miss.source.splitlines() if line != miss.snippet]
        assert planlang.check("\n".join(without) + "\n").ok
        assert miss.source.splitlines()[-1].startswith("result = ")


@settings(max_examples=50)
@given(near_misses([SEARCH], constructs=("class",)))
def test_near_misses_plant_only_the_chosen_constructs(miss: object) -> None:
    assert miss.construct == "class"
    assert "class Planted" in miss.source


def test_the_fake_host_is_seeded_by_its_seed_not_by_global_random() -> None:
    random.seed(1)
    a = fake_host([SEARCH], seed=9)["search"]("q")
    random.seed(2)
    assert fake_host([SEARCH], seed=9)["search"]("q") == a
    assert all(isinstance(x, str) for x in a)
