"""The quick yes of runtime.quick_schema never says an answer fits when jsonschema says not."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from runtime.quick_schema import compile_quick
from runtime.worker import converse, validator_for

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5) | st.text(max_size=4)
    | st.sampled_from([1.0, 2.5, float("nan"), float("inf"), "a", "bb"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


def _schemas(depth: int = 2) -> st.SearchStrategy[Any]:
    leaf: dict[str, st.SearchStrategy[Any]] = {
        "type": st.sampled_from(["object", "array", "string", "boolean", "null", "integer",
                                 "number"]),  # fmt: skip
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
        "minimum": st.integers(-3, 3) | st.floats(-3, 3), "maximum": st.integers(-3, 3),
        "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3),
        "enum": st.lists(st.sampled_from(["a", "bb", ""]), min_size=1, max_size=3),
        "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True),
        "additionalProperties": st.booleans(),
        "title": st.just("t"),
    }  # fmt: skip
    if depth > 0:
        leaf["properties"] = st.dictionaries(st.sampled_from(["a", "b"]), _schemas(depth - 1),
                                             max_size=2)  # fmt: skip
        leaf["items"] = _schemas(depth - 1)
    return st.fixed_dictionaries({}, optional=leaf) | st.just(True)


@given(_schemas(), _json)
def test_a_quick_yes_is_a_jsonschema_yes(schema: Any, value: Any) -> None:
    quick = compile_quick(schema)
    assert quick is not None  # every keyword drawn here is compiled
    valid = not list(Draft202012Validator(schema).iter_errors(value))
    if quick(value):
        assert valid, (schema, value)
    elif valid:  # only nan and infinity may be left to jsonschema
        assert "nan" in repr(value) or "inf" in repr(value), (schema, value)


def test_schemas_with_other_keywords_go_to_jsonschema() -> None:
    assert compile_quick({"type": "string", "pattern": "^a"}) is None
    assert compile_quick({"properties": {"a": {"$ref": "#/$defs/x"}}}) is None
    assert compile_quick({"type": ["string", "null"]}) is None
    assert compile_quick({"enum": [1, True]}) is None  # jsonschema tells 1 from True
    assert compile_quick({"items": False}) is None


def test_a_bool_is_not_a_number_nor_bounded() -> None:
    assert compile_quick({"type": "integer"})(True) is False  # type: ignore[misc]
    assert compile_quick({"type": "integer"})(3.0) is True  # type: ignore[misc]
    assert compile_quick({"minimum": 5})(True) is True  # type: ignore[misc]


def test_an_answer_that_does_not_fit_still_gets_jsonschemas_problems() -> None:
    """The repair turn lists jsonschema's words, whether or not the schema compiles."""
    from runtime.records import WorkerRecord
    from runtime.reply import Reply

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    validator_for(schema)
    answers = iter(['{"n": "x"}', '{"n": 2}'])
    seen: list[list[dict[str, Any]]] = []

    def chat(messages: list[dict[str, Any]]) -> Reply:
        seen.append(messages)
        return Reply(text=next(answers))

    record = WorkerRecord(1, None, None, "m", "main", "ask")
    record.messages.append({"role": "user", "content": "ask"})
    value = converse(chat, record, schema=schema, check=None, max_repairs=1, max_checks=0)
    assert value == {"n": 2}
    assert "at n: 'x' is not of type 'integer'" in seen[1][-1]["content"]
