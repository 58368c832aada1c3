"""The keywords whose ``jsonschema`` implementation is not linear in the answer, made so.

A plan's schema and a model's answer are an adversary's. ``pattern``, ``patternProperties``
and, through them, ``additionalProperties`` match by ``linear_regex`` (RE2), not Python's
backtracking ``re``. ``uniqueItems`` compares each item with every other when the items do not
sort (objects, or ``true`` beside ``1``): 20,000 objects are 200 million comparisons. Here each
item is reduced to a hashable key that is equal exactly when ``jsonschema`` calls two items
equal (``1`` and ``1.0`` are one number, ``true`` is not ``1``, an object's keys have no order),
and a set finds a repeat. The messages are ``jsonschema``'s, word for word: a repair turn lists
them to a model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from .linear_regex import SEARCH_MOST, MatchTooCostly, program_size, search

__all__ = ["LINEAR_KEYWORDS", "json_key"]


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "string"):
        return
    try:
        if not search(pattern, instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")
    except MatchTooCostly as error:  # the answer fails, saying why: never searched for long
        yield ValidationError(str(error))


def _keys_too_costly(keys: Any, patterns: Any) -> ValidationError | None:
    """An object's keys, each searched against each pattern: refused, with why, when their
    characters times the patterns' program sizes pass ``SEARCH_MOST`` (each search alone may
    be short: 10,000 keys against 256 patterns)."""
    if not patterns:
        return None
    characters = sum(len(key) for key in keys if isinstance(key, str))
    instructions = sum(program_size(pattern) for pattern in patterns)
    if characters * instructions <= SEARCH_MOST:
        return None
    return ValidationError(
        f"the object's keys ({characters:,} characters) are too many to match against its "
        f"{len(patterns):,} patterns in time ({instructions:,} instructions; the two "
        f"multiplied may be at most {SEARCH_MOST:,})"
    )


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    costly = _keys_too_costly(instance, patterns)
    if costly is not None:
        yield costly
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    costly = _keys_too_costly([key for key in instance if key not in named], patterns)
    if costly is not None:
        yield costly
        return
    extras = {key for key in instance
              if key not in named and not any(search(p, key) for p in patterns)}  # fmt: skip
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        ordered = sorted(extras, key=str)
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in ordered)
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            joined = ", ".join(repr(each) for each in ordered)
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} "
                                  "unexpected)")  # fmt: skip


_JSONSCHEMAS_UNIQUE = Draft202012Validator.VALIDATORS["uniqueItems"]
_JSONSCHEMAS_MULTIPLE = Draft202012Validator.VALIDATORS["multipleOf"]


def _multiple_of(validator: Any, step: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``multipleOf``, and its verdict where it raised: a float step beside an
    int past a float's range (``10**400 / 0.5``: OverflowError before its own fallback), or an
    answer of ``1e400`` (read as infinity) or NaN, which is a multiple of nothing."""
    if not validator.is_type(instance, "number"):
        return
    try:
        yield from _JSONSCHEMAS_MULTIPLE(validator, step, instance, schema)
        return
    except (OverflowError, ValueError):  # raised before it yields: nothing was said yet
        pass
    try:
        failed = (Fraction(instance) / Fraction(step)).denominator != 1
    except (OverflowError, ValueError, ZeroDivisionError):  # infinity, NaN
        failed = True
    if failed:
        yield ValidationError(f"{instance!r} is not a multiple of {step}")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not unique or not validator.is_type(instance, "array"):
        return
    try:
        seen: set[Any] = set()
        for item in instance:
            key = json_key(item)
            if key in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(key)
    except (TypeError, RecursionError):  # an item not plain JSON, or nested past the stack
        yield from _JSONSCHEMAS_UNIQUE(validator, unique, instance, schema)


def json_key(value: Any) -> Any:
    """A hashable key, equal for two values exactly when ``jsonschema``'s ``equal`` holds."""
    if value is True or value is False:
        return ("b", value)  # never equal to the number 1 or 0
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, Mapping):
        return ("o", frozenset((name, json_key(item)) for name, item in value.items()))
    if isinstance(value, Sequence):
        return ("a", tuple(json_key(item) for item in value))
    return ("v", value)  # numbers (1 == 1.0, as jsonschema has it), None; TypeError if unhashable


LINEAR_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
    "multipleOf": _multiple_of,
}
