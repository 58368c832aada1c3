"""A schema's ``$ref`` either resolves within it or the schema is refused, and a schema that
applies itself to the same value with no step into it between is refused: ``{"$ref": "#"}``
recursed without end in the stand-in and in jsonschema (a RecursionError as the worker's
failure, REDTEAM14's note)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema.exceptions import SchemaError

from runtime.json_schema import check_schema, schema_validator
from runtime.worker import checker_for

NEVER_ENDS = "applies itself to the same value"

REFUSED = [
    ({"$ref": "#"}, NEVER_ENDS, "the top level"),
    ({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}},
      "$ref": "#/$defs/a"}, NEVER_ENDS, "$defs"),
    ({"anyOf": [{"type": "string"}, {"$ref": "#"}]}, NEVER_ENDS, "the top level"),
    ({"properties": {"a": {"not": {"$ref": "#/properties/a"}}}}, NEVER_ENDS, "properties/a"),
    ({"if": {"$ref": "#"}}, NEVER_ENDS, "the top level"),
    ({"dependentSchemas": {"a": {"$ref": "#"}}}, NEVER_ENDS, "the top level"),
    ({"properties": {"a": {"$ref": "#/$defs/nope"}}}, "names nothing", "properties/a"),
    ({"$ref": "https://example.com/s.json"}, "names nothing", "the top level"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "why", "where"), REFUSED)
def test_a_schema_that_never_ends_or_names_nothing_is_refused(
    schema: dict[str, Any], why: str, where: str
) -> None:
    with pytest.raises(SchemaError, match=why) as refused:
        check_schema(schema)
    assert f"(at {where}" in refused.value.message
    with pytest.raises(ValueError, match="not valid"):  # a worker's schema: the worker fails
        checker_for(schema)


TREE = {"type": "object", "properties": {"name": {"type": "string"},
        "kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["name"]}  # fmt: skip
ACCEPTED = [
    (TREE, {"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}]},
     {"name": "a", "kids": [{"kids": []}]}),
    ({"$defs": {"x": {"$anchor": "word", "type": "string"}}, "$ref": "#word"}, "w", 1),
    ({"$id": "https://example.com/root", "$defs": {"s": {"$id": "sub", "$defs": {
      "t": {"type": "string"}}, "$ref": "#/$defs/t"}}, "$ref": "sub"}, "w", 1),
    ({"properties": {"not": {"type": "string"}, "allOf": {"$ref": "#/properties/not"}}},
     {"not": "a", "allOf": "b"}, {"allOf": 1}),
    ({"const": {"$ref": "#"}}, {"$ref": "#"}, {"$ref": "x"}),  # data, not a schema
    ({"type": "object", "properties": {"next": {"$ref": "#"}}}, {"next": {"next": {}}},
     {"next": 1}),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "fits", "does_not"), ACCEPTED)
def test_recursive_and_referring_schemas_that_end_are_accepted_and_applied(
    schema: dict[str, Any], fits: Any, does_not: Any
) -> None:
    """Recursion through a step into the value (a property, an item) ends with the value; an
    anchor, a nested ``$id``, properties named like keywords, data that looks like a schema."""
    check_schema(schema)
    assert list(schema_validator(schema).iter_errors(fits)) == []
    assert list(schema_validator(schema).iter_errors(does_not)) != []


def test_the_stand_in_says_why_it_has_no_answer_for_a_schema_that_never_ends() -> None:
    import planlang
    from runtime import Settings

    report = planlang.price('r = agent("q", schema={"$ref": "#"})\nresult = r\n',
                            settings=Settings(), seeds=1)  # fmt: skip
    (problem,) = report.problems
    assert (problem.kind, problem.line) == ("worker", 1)
    assert NEVER_ENDS in problem.message and "RecursionError" not in problem.message


# -- a $ref into data: the metaschema never saw what it names as a schema ------------------

NOT_SCHEMAS = [{"pattern": 5}, {"patternProperties": 5}, {"required": 5},
               {"properties": {"a": 5}}, {"minLength": "x"}, {"type": "nope"},
               {"items": {"enum": 3}}]  # fmt: skip


@pytest.mark.parametrize("data", NOT_SCHEMAS, ids=str)
@pytest.mark.parametrize("holder", ["const", "enum", "default", "examples", "x-note"])
def test_a_ref_to_data_that_is_not_a_schema_is_refused_at_the_check(data: Any, holder: str) -> None:
    """Each of these was accepted, then raised from jsonschema (TypeError, AttributeError,
    UnknownType) as each answer was validated: a worker's failure after it paid the model."""
    held = [data] if holder in ("enum", "examples") else data
    ref = f"#/$defs/d/{holder}" + ("/0" if holder in ("enum", "examples") else "")
    schema = {"type": "object", "$defs": {"d": {holder: held}}, "allOf": [{"$ref": ref}]}
    with pytest.raises(SchemaError, match="names a value that is not a schema") as refused:
        check_schema(schema)
    assert "(at allOf/0, in it at " in str(refused.value)


KEYWORDS = ["type", "pattern", "patternProperties", "properties", "required", "items",
            "minLength", "maximum", "enum", "const", "allOf", "not",
            "additionalProperties"]  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "string", "^a", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]),
                                                                inner, max_size=2),
    max_leaves=6,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(data=st.dictionaries(st.sampled_from(KEYWORDS), JSON, max_size=3),
       answers=st.lists(JSON, min_size=1, max_size=4))  # fmt: skip
def test_a_schema_the_check_accepts_only_ever_says_valid_or_why_not(
    data: dict[str, Any], answers: list[Any]
) -> None:
    """Whatever a `$ref` names: a schema the check lets through validates every answer
    without raising (a worker treats any other exception as its own failure)."""
    schema = {"$defs": {"d": {"const": data}}, "anyOf": [{"$ref": "#/$defs/d/const"}]}
    try:
        check_schema(schema)
    except SchemaError:
        return
    validator = schema_validator(schema)
    for answer in answers:
        for error in validator.iter_errors(answer):
            assert isinstance(error.message, str)


# -- review16 ------------------------------------------------------------------------------


def _anchor_chain(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for i in reversed(range(depth)):
        node = {"$anchor": f"a{i}", "properties": {"x": {"type": "integer"}, "n": node}}
    return {
        "$defs": {"chain": node},
        "properties": {f"p{i}": {"$ref": f"#a{i}"} for i in range(depth)},
    }


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each value ``_check_target`` checks, in order."""
    import runtime.json_schema as json_schema

    seen: list[Any] = []
    original = json_schema._check_target

    def counted(target: Any, *rest: Any) -> None:
        seen.append(target)
        original(target, *rest)

    monkeypatch.setattr(json_schema, "_check_target", counted)
    return seen


def test_a_ref_to_a_schema_the_metaschema_checked_is_not_checked_again(
    checked: list[Any],
) -> None:
    """Each $ref's target was checked again, whole: a chain of anchors, each one referenced,
    made the check quadratic (4.1 s for 36 KB, 15.8 s for 72 KB)."""
    check_schema(_anchor_chain(40))
    assert checked == []


def test_refs_into_nested_data_check_each_value_once(checked: list[Any]) -> None:
    """Targets within data, one inside the other's schema positions: the outer one's check
    covers the inner, whatever order the refs come in."""
    inner: dict[str, Any] = {"type": "string"}
    data: dict[str, Any] = {"properties": {"a": {"properties": {"b": inner}}}}
    at = "#/$defs/d/const"
    schema = {"$defs": {"d": {"const": data}},
              "allOf": [{"$ref": f"{at}/properties/a/properties/b"},
                        {"$ref": f"{at}/properties/a"}, {"$ref": at}]}  # fmt: skip
    check_schema(schema)
    assert checked == [data]


def test_a_nested_relative_id_reached_through_a_ref_resolves_once() -> None:
    """Its base was taken twice (``.../b/b/s``): a valid schema jsonschema applies was refused."""
    schema = {"$id": "http://e.com/a/root",
              "$defs": {"s": {"$id": "b/s", "$defs": {"t": {"type": "string"}},
                              "$ref": "#/$defs/t"}},
              "properties": {"p": {"$ref": "b/s"}}}  # fmt: skip
    check_schema(schema)
    assert [e.message for e in schema_validator(schema).iter_errors({"p": 5})] == [
        "5 is not of type 'string'"
    ]


@pytest.mark.parametrize("extends", [5, {"pattern": 5}])
def test_a_subresource_referencing_cannot_follow_is_a_schema_error(extends: Any) -> None:
    """referencing's crawl raised TypeError or AttributeError (a worker catches SchemaError)."""
    schema = {"$defs": {"d": {"$schema": "http://json-schema.org/draft-03/schema#",
                              "extends": extends}},
              "properties": {"a": {"$ref": "#/$defs/d"}}}  # fmt: skip
    with pytest.raises(SchemaError, match="cannot be followed"):
        check_schema(schema)


def test_a_schema_nested_past_the_checkers_recursion_is_a_schema_error() -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(300):
        node = {"properties": {"n": node}}
    with pytest.raises(SchemaError, match="nests too deeply"):
        check_schema(node)


# -- a schema that repeats itself: its written-out size, not its objects, is bounded ------


def _doubled(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"anyOf": [node, node]}  # one object twice: 2**levels leaves written out
    return {"type": "object", "properties": {"a": node}}


def test_a_schema_that_holds_one_object_twice_at_each_level_is_refused_before_any_walk() -> None:
    """A plan's 20 lines made a schema a million values long as text: pricing it froze the
    host for minutes (16 levels: 56 s in-process; 18: 235 s, past a 60 s limit)."""
    with pytest.raises(SchemaError, match="too large: more than 10,000 values written out"):
        check_schema(_doubled(40))  # 2**40: refused in time bounded by the limit


def test_a_schema_that_holds_itself_is_refused_by_its_size() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema  # without end: deeper than any schema may nest
    with pytest.raises(SchemaError, match="nests too deeply"):
        check_schema(schema)


def test_a_worker_with_a_doubled_schema_fails_before_its_text_is_made() -> None:
    from runtime import LLM, Ledger, Reply, Run

    asked: list[Any] = []

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        asked.append(messages)
        return Reply(text='{"a": "x"}')

    run = Run("doubled", llm=LLM(Ledger(":memory:"), client=client))
    assert run.run_sync(lambda r: r.agent("q", schema=_doubled(40))) is None
    [record] = run.threads
    assert record.status == "failed" and "too large" in str(record.error)
    assert asked == []  # no credit spent for a call that could not be made


def test_a_schema_of_ordinary_size_with_a_shared_part_is_accepted() -> None:
    check_schema(_doubled(10))  # 1,024 leaves: within the bound


def test_a_workers_data_of_shared_lists_fails_before_its_text_is_made() -> None:
    """30 shared lists are 2**30 values as text: json.dumps of it held the host for good
    in-process (under isolation the codec's walk bound refused it)."""
    from runtime import LLM, Ledger, Reply, Run

    asked: list[Any] = []

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        asked.append(messages)
        return Reply(text="ok")

    data: list[Any] = ["x"]
    for _ in range(30):
        data = [data, data]
    run = Run("shared", llm=LLM(Ledger(":memory:"), client=client))
    assert run.run_sync(lambda r: [r.agent("q", data=data), r.agent("q", data=[1, 2])]) == [
        None,
        "ok",
    ]
    first = run.threads[0]
    assert first.status == "failed" and "data is too large" in str(first.error)
    assert len(asked) == 1
