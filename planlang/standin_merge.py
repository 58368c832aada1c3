"""An ``allOf`` read as one schema, for the stand-in's maker to build from.

Every part holds of the one value, so a keyword two parts set is the two together: of two
bounds the tighter (``maxLength`` 20 and 2: 2; ``minimum`` 0 and 1000: 1000), of two types
the kinds both name, of two enums the values both list, of two steps their least common
multiple, a property's (and an item's) schemas all met. A keyword with no such rule (a
``pattern``, a ``format``) is the first part's; a choice (``anyOf``, ``$ref``, ``if``) the
maker reads before merging is kept for the next level (``allOf`` inside the merged schema),
where its own choice is made. The validator has the last word: a merge that reads a part
otherwise only costs a try.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from planlang.standin_numbers import flipped_bound
from planlang.standin_size import UnsatisfiableSchema
from runtime.schema_keywords import json_key

__all__ = ["LOWER", "UPPER", "contradicted", "merge_part"]

LOWER = frozenset({"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"})
UPPER = frozenset({"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"})
# read (and taken out) by the maker before it merges an allOf: a second one waits a level
_LATER = ("$ref", "oneOf", "anyOf", "dependentSchemas")
_CONDITION = ("if", "then", "else")
_JOINED = ("properties", "patternProperties")  # by name, each name's schemas all met
_SCHEMAS = ("items", "propertyNames")  # one schema each, both met


def merge_part(merged: dict[str, Any], part: dict[str, Any],
               joined: dict[tuple[str, str], list[Any]], nots: list[Any]) -> None:  # fmt: skip
    """``part`` (one allOf part, a dict) merged into ``merged`` in place. ``joined`` holds
    each property's parts met so far (one allOf for all of them: 70 parts were 70 levels
    deep), ``nots`` every ``not`` met (``merged_nots`` reads them once all parts are in)."""
    if "if" in part:
        condition = {k: part[k] for k in _CONDITION if k in part}
        if "if" in merged:
            _later(merged, condition)
        else:
            merged.update(condition)
    for k, v in part.items():
        if k in _CONDITION:
            continue  # ``then`` and ``else`` with their ``if`` (alone they assert nothing)
        if k not in merged and k not in _JOINED and k not in ("allOf", "not"):
            merged[k] = v
        elif k in _JOINED and isinstance(v, dict):
            _join(merged, k, v, joined)
        elif k == "required" and isinstance(v, list):
            merged["required"] = [*merged.get("required", []), *v]
        elif k == "allOf" and isinstance(v, list):
            _later(merged, *v)
        elif k == "not":
            nots.append(v)
        elif k in _LATER:
            _later(merged, {k: v})
        else:
            merged[k] = _both(k, merged[k], v)


def merged_nots(merged: dict[str, Any], nots: list[Any]) -> None:
    """The ``not``s of all parts: one of one bound is the bound the other way, met as a bound
    (``not: {minimum: 5}``: below 5); the rest, one ``not`` of them all (``anyOf``)."""
    if "not" in merged:
        nots = [merged.pop("not"), *nots]
    kept: list[Any] = []
    kinds: list[Any] = []  # ``not: {type: ...}`` of them all: not any of their kinds
    for negated in nots:
        if isinstance(negated, dict) and set(negated) == {"type"}:
            named = negated["type"]
            kinds += [k for k in (named if isinstance(named, list) else [named])
                      if k not in kinds]  # fmt: skip
            continue
        flipped = flipped_bound({"not": negated, **{k: merged[k] for k in ("type",)
                                                    if k in merged}})  # fmt: skip
        if flipped is None:
            kept.append(negated)
            continue
        for k, v in flipped.items():
            merged[k] = _both(k, merged[k], v) if k in merged else v
    if kinds:
        kept.insert(0, {"type": kinds[0] if len(kinds) == 1 else kinds})
    if len(kept) == 1:
        merged["not"] = kept[0]
    elif kept:
        merged["not"] = {"anyOf": kept}


def _later(merged: dict[str, Any], *parts: Any) -> None:
    """``parts`` for the next level's allOf: ``merged``'s own list (``_merged`` leaves the
    schema's out), grown in place (a copy each time was quadratic in the parts)."""
    later = merged.get("allOf")
    if later is None:
        merged["allOf"] = list(parts)
    else:
        later.extend(parts)


def _join(merged: dict[str, Any], key: str, v: dict[str, Any],
          joined: dict[tuple[str, str], list[Any]]) -> None:  # fmt: skip
    mine = merged.get(key)
    props = dict(mine) if isinstance(mine, dict) else {}
    for name, sub in v.items():
        if (key, name) in joined:
            joined[key, name].append(sub)
        elif name in props:  # met by both
            joined[key, name] = [props[name], sub]
            props[name] = {"allOf": joined[key, name]}
        else:
            props[name] = sub
    merged[key] = props


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _both(key: str, first: Any, second: Any) -> Any:
    """What ``key`` is when one part says ``first`` and another ``second``."""
    if key in LOWER or key in UPPER:
        if not (_number(first) and _number(second)):
            return first  # not a bound: the schema's check refuses it
        if first != first or second != second:  # NaN bounds nothing
            return second if first != first else first
        return max(first, second) if key in LOWER else min(first, second)
    if key == "type":
        return _kinds(first, second)
    if key == "enum" and isinstance(first, list) and isinstance(second, list):
        listed = {json_key(value) for value in second}
        return [value for value in first if json_key(value) in listed]
    if key == "const" and json_key(first) != json_key(second):
        raise UnsatisfiableSchema("no answer can satisfy the JSON schema: an allOf holds two "
                                  "different consts")  # fmt: skip
    if key == "uniqueItems":
        return first or second
    if key == "multipleOf" and _number(first) and _number(second):
        return _common_multiple(first, second)
    if key == "prefixItems" and isinstance(first, list) and isinstance(second, list):
        longer = first if len(first) >= len(second) else second
        return [_schemas(a, b) for a, b in zip(first, second, strict=False)] + longer[
            min(len(first), len(second)) :
        ]
    if key in _SCHEMAS:
        return _schemas(first, second)
    return first


def _schemas(first: Any, second: Any) -> Any:
    """Two schemas one value meets."""
    if not (isinstance(first, dict | bool) and isinstance(second, dict | bool)):
        return first  # not a schema (an old list of items): the schema's check reads it
    if first is False or second is False:
        return False
    if first is True or first == {}:
        return second
    if second is True or second == {} or first == second:
        return first
    return {"allOf": [first, second]}


_NUMBER = "number"


def _kinds(first: Any, second: Any) -> Any:
    """The kinds two ``type`` keywords both allow (an integer is a number too), in the first's
    order; none is an unsatisfiable schema."""
    one = first if isinstance(first, list) else [first]
    other = second if isinstance(second, list) else [second]
    if not all(isinstance(k, str) for k in [*one, *other]):
        return first  # not a type: the schema's check refuses it
    both = [k for k in one if k in other or (k == "integer" and _NUMBER in other)]
    both += [k for k in other if k == "integer" and _NUMBER in one and k not in both]
    if not both:
        raise UnsatisfiableSchema(
            f"no answer can satisfy the JSON schema: an allOf asks for a value of type "
            f"{first} and of type {second}"
        )
    return both[0] if len(both) == 1 else both


def _common_multiple(first: int | float, second: int | float) -> int | float:
    """The least common multiple of two steps (exactly, as fractions), or the first where it
    is no number (a step of 0 or below: the schema's check refuses it)."""
    if first <= 0 or second <= 0:
        return first
    if type(first) is int and type(second) is int:
        return math.lcm(first, second)
    if not all(type(x) is int or math.isfinite(x) for x in (first, second)):
        return first
    a, b = _fraction(first), _fraction(second)
    common = Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))
    try:
        return int(common) if common.denominator == 1 else float(common)
    except OverflowError:
        return first


def _fraction(step: int | float) -> Fraction:
    """A step as the fraction it is written as (0.1: 1/10, not the float's binary value)."""
    exact = Fraction(step)
    short = exact.limit_denominator(10**9)
    return short if float(short) == step else exact


_COUNTS = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems"),
           "object": ("minProperties", "maxProperties")}  # fmt: skip


def contradicted(merged: dict[str, Any]) -> str | None:
    """Why the merged bounds leave no value of the one kind ``merged`` allows, or None: found
    where the parts meet, not at the leaf a deeper allOf ends in (each ``if`` of a chain tried
    both ways reached the leaf before it failed: 2**N builds, review 24). A bound of another
    kind binds nothing, so only a schema of one kind (or of number and integer) is judged."""
    kind = merged.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if kinds <= {"integer", "number"} and kinds:
        low, high = merged.get("minimum"), merged.get("maximum")
        xlow, xhigh = merged.get("exclusiveMinimum"), merged.get("exclusiveMaximum")
        numbers = [b for b in (low, high, xlow, xhigh) if b is not None]
        if all(type(b) in (int, float) for b in numbers):
            lows = [(b, False) for b in (low,) if b is not None] + [
                (b, True) for b in (xlow,) if b is not None
            ]
            highs = [(b, False) for b in (high,) if b is not None] + [
                (b, True) for b in (xhigh,) if b is not None
            ]
            for lo, lo_open in lows:
                for hi, hi_open in highs:
                    if lo > hi or (lo == hi and (lo_open or hi_open)):
                        return f"no number is both at least {lo} and at most {hi}, its parts met"
        return None
    if len(kinds) == 1:
        pair = _COUNTS.get(next(iter(kinds)))  # type: ignore[arg-type]
        if pair is not None:
            lo, hi = merged.get(pair[0]), merged.get(pair[1])
            if type(lo) is int and type(hi) is int and lo > hi:
                return f"{pair[0]} {lo} is above {pair[1]} {hi} where its parts meet"
    return None
