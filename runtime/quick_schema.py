"""A quick "valid" for the plain schemas workers use, so an answer that fits skips jsonschema.

Validating a small answer with ``jsonschema`` walks a new validator object per node: tens of
microseconds for a two-field object, a large share of a free (stand-in) call. Most worker schemas
use only a few keywords (type, properties, required, items, bounds, string enums), so each such
schema is compiled once into a function that answers True only when ``jsonschema`` would find no
error. Anything else (False: an answer that does not fit; None: a schema using another keyword)
goes to ``jsonschema``, which alone writes the problems a repair turn lists.

The keywords compiled follow Draft 2020-12 as ``jsonschema`` applies them: each constrains only
instances of its own type (``minLength`` says nothing about a number), ``integer`` takes a
float with no fraction, and neither ``integer`` nor ``number`` takes a bool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Quick", "compile_quick"]

Quick = Callable[[Any], bool]

# Keywords that never make an instance invalid.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
_COMPILED = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum",
    "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
}) | _ANNOTATIONS  # fmt: skip
_KINDS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) is int or type(v) is float,
}


def compile_quick(schema: Any) -> Quick | None:
    """A function of a parsed JSON answer: True when it certainly fits ``schema`` (a schema
    ``check_schema`` accepted). None when the schema uses a keyword not compiled here."""
    if schema is True or schema == {}:
        return lambda value: True
    if type(schema) is not dict or not set(schema) <= _COMPILED:
        return None
    tests: list[Quick] = []
    kind = schema.get("type")
    if kind is not None:
        if type(kind) is not str or kind not in _KINDS:
            return None
        tests.append(_KINDS[kind])
    if "enum" in schema:
        options = schema["enum"]
        if type(options) is not list or not all(type(o) is str for o in options):
            return None  # jsonschema's equality tells 1 from True: left to it
        allowed = frozenset(options)
        tests.append(lambda v: type(v) is str and v in allowed)
    for part in (_object, _array, _string, _number):
        test = part(schema)
        if test is _UNCOMPILED:
            return None
        if test is not None:
            tests.append(test)
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda value: first(value) and second(value)
    return lambda value: all(test(value) for test in tests)


def _uncompiled(value: Any) -> bool:
    return False


_UNCOMPILED: Quick = _uncompiled  # a part of the schema this module does not compile


def _object(schema: dict[str, Any]) -> Quick | None:
    """The object keywords' test: None when the schema uses none of them."""
    if not {"properties", "required", "additionalProperties"} & set(schema):
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if type(props) is not dict or type(required) is not list or type(extra) is not bool:
        return _UNCOMPILED
    children: dict[str, Quick] = {}
    for name, sub in props.items():
        child = compile_quick(sub)
        if child is None:
            return _UNCOMPILED
        children[name] = child
    needed = tuple(required)
    closed = not extra

    def test(value: Any) -> bool:
        if type(value) is not dict:
            return True
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            child = children.get(name)
            if child is None:
                if closed:
                    return False
            elif not child(item):
                return False
        return True

    return test


def _array(schema: dict[str, Any]) -> Quick | None:
    if not {"items", "minItems", "maxItems"} & set(schema):
        return None
    item = compile_quick(schema.get("items", True))
    if item is None:
        return _UNCOMPILED
    low, high = schema.get("minItems", 0), schema.get("maxItems")

    def test(value: Any) -> bool:
        if type(value) is not list:
            return True
        if len(value) < low or (high is not None and len(value) > high):
            return False
        for element in value:
            if not item(element):
                return False
        return True

    return test


def _string(schema: dict[str, Any]) -> Quick | None:
    if "minLength" not in schema and "maxLength" not in schema:
        return None
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    return lambda v: type(v) is not str or (low <= len(v) and (high is None or len(v) <= high))


def _number(schema: dict[str, Any]) -> Quick | None:
    if "minimum" not in schema and "maximum" not in schema:
        return None
    low, high = schema.get("minimum"), schema.get("maximum")

    def test(value: Any) -> bool:
        if type(value) is not int and type(value) is not float:
            return True  # bools too: jsonschema's minimum leaves them alone
        # a comparison with nan is False either way: nan goes to jsonschema
        return (low is None or value >= low) and (high is None or value <= high)

    return test
