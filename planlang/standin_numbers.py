"""The numbers the stand-in answers: drawn within a schema's bounds, exclusive ones included,
a multiple of its ``multipleOf``, also where a bound is past a float's range (``10**400``: an
integer then, exactly) or infinite; a bound no number passes is said to make the schema
unsatisfiable, in words a message can show (``shown``: never thousands of digits)."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

from planlang.standin_size import UnsatisfiableSchema

__all__ = [
    "bounds",
    "flipped_bound",
    "integer",
    "number",
    "ordered",
    "rounded",
    "shown",
    "uniform",
    "whole_count",
]


def integer(schema: dict[str, Any], rng: random.Random) -> int:
    """An integer ``schema`` allows: drawn between its bounds, a multiple of its step."""
    low, high = bounds(schema, integer=True)
    step = schema.get("multipleOf", 1)
    if not (_float_range(low) and _float_range(high)):
        return _whole_between(rng, low, high, schema.get("multipleOf"), schema)
    value = rng.randint(low, high)
    if isinstance(step, int) and step > 1:
        value = (value // step) * step
        if value < low:
            value += step
    elif type(step) is float and step > 0 and _float_range(value):
        return _whole_multiple(value, step, low, high)
    return value


def number(schema: dict[str, Any], rng: random.Random) -> float | int:
    """A number ``schema`` allows, to three places where that stays in its range."""
    low, high = bounds(schema, integer=False)
    step = schema.get("multipleOf")
    if not (_float_range(low) and _float_range(high)):  # an integer is a number too
        return _whole_between(rng, math.ceil(low), math.floor(high), step, schema)
    if isinstance(step, int | float) and step > 0:
        try:
            first, last = low / step, high / step
        except OverflowError:  # ints whose quotient is past a float's range
            return _whole_between(rng, math.ceil(low), math.floor(high), step, schema)
        if math.isfinite(first) and math.isfinite(last):
            k = rng.randint(math.ceil(first), max(math.ceil(first), math.floor(last)))
            return k * step
        if low <= 0 <= high:
            return 0  # a multiple of every step
        raise UnsatisfiableSchema(
            f"the stand-in finds no multiple of {shown(step)} (multipleOf) between "
            f"{shown(low)} and {shown(high)}: the quotient is past a float's range"
        )
    return rounded(uniform(rng, low, high), low, high)


def _whole_between(rng: random.Random, low: int, high: int, step: Any,
                   schema: dict[str, Any]) -> int:  # fmt: skip
    """A number between bounds past a float's range: an integer, a multiple of
    ``multipleOf``. A float step is an exact fraction p/q, whose integer multiples are the
    multiples of p; a side the schema leaves open reaches the first of them."""
    whole = step
    if type(step) is float and math.isfinite(step) and step > 0:
        whole = Fraction(step).numerator
    if whole is None or (type(whole) is int and whole > 0):
        whole = whole or 1
        first, last = -(-low // whole), high // whole
        if first > last and not _BELOW.intersection(schema):
            last = first  # no upper bound: the first multiple past the lower
        elif first > last and not _ABOVE.intersection(schema):
            first = last
        if first <= last:
            return rng.randint(first, last) * whole
    raise UnsatisfiableSchema(
        f"the stand-in finds no number between {shown(low)} and {shown(high)}"
        + (f" that is a multiple of {shown(step)} (multipleOf)" if step is not None else "")
    )


def ordered(low: Any, high: Any, low_name: str, high_name: str) -> None:
    if isinstance(low, int | float) and isinstance(high, int | float) and high < low:
        raise UnsatisfiableSchema(
            f"no answer can satisfy the JSON schema: {low_name} {shown(low)} is above "
            f"{high_name} {shown(high)}"
        )


def bounds(schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
    """The least and greatest value the makers pick a number between (finite, ordered): a
    range of 100 from the bound given, from 0 with none."""
    minimum, maximum = _bound(schema, "minimum", False), _bound(schema, "maximum", True)
    above = _bound(schema, "exclusiveMinimum", False)
    below = _bound(schema, "exclusiveMaximum", True)
    low = minimum if minimum is not None else 0 if maximum is None else maximum - 100
    high = maximum if maximum is not None else low + 100
    if above is not None:
        past = _past(above, integer, up=True)
        low = past if minimum is None else max(minimum, past)
        if maximum is None and below is None and high < low:
            high = low + 100  # bounded below only: the range starts there
    if below is not None:
        before = _past(below, integer, up=False)
        high = before if maximum is None else min(maximum, before)
        if minimum is None and above is None and high < low:
            low = high - 100  # bounded above only: the range ends there
    if integer:
        low, high = math.ceil(low), math.floor(high)
    elif high < low and (above is not None or below is not None):
        # an open range narrower than the gaps (above 0, below 0.0005): its middle
        least = max(v for v in (minimum, above) if v is not None) if (
            minimum is not None or above is not None) else None  # fmt: skip
        most = min(v for v in (maximum, below) if v is not None) if (
            maximum is not None or below is not None) else None  # fmt: skip
        if least is not None and most is not None and least < most:
            low = high = least / 2 + most / 2
    if high < low:
        raise UnsatisfiableSchema(
            f"no answer can satisfy the JSON schema: no {'integer' if integer else 'number'} "
            f"is at least {shown(low)} and at most {shown(high)} (minimum above maximum)"
        )
    return low, high


def _whole_multiple(near: int, step: float, low: int, high: int) -> int:
    """An integer within bounds that jsonschema calls a multiple of the float ``step`` (its
    quotient a whole float: 5 of 2.5, 1 of 0.1), the first such from ``near`` up, then down;
    ``near`` itself when none is close (the validator then says so)."""
    quotient = near / step
    if not math.isfinite(quotient):  # a step of 1e-300: no whole multiple near in a float
        return near
    start = round(quotient)
    for k in (*range(start, start + 64), *range(start - 1, start - 64, -1)):
        value = k * step
        if value.is_integer() and low <= value <= high:
            whole = int(value)
            if (whole / step).is_integer():
                return whole
    return near


def rounded(value: float, low: float, high: float) -> float:
    """``value`` to three places, as the makers give numbers, unless that leaves its range
    (0.0005 between 0 and 0.001 would round to 0.001, which ``exclusiveMaximum`` refuses)."""
    short = round(value, 3)
    return short if low <= short <= high else value


def _past(bound: Any, integer: bool, *, up: bool) -> Any:
    """The first value the makers take beyond an exclusive bound: for an integer the next
    whole number (above 1.5: 2), for a number 0.001 beyond it (1 past a float's range)."""
    if integer:
        return math.floor(bound) + 1 if up else math.ceil(bound) - 1
    gap = 1e-3 if _float_range(bound) else 1
    return bound + gap if up else bound - gap


def uniform(rng: random.Random, low: float, high: float) -> float:
    """``rng.uniform(low, high)``, one draw, also where ``high - low`` is past a float's range
    (-1e308 to 1e308: uniform's ``low + (high - low) * r`` was infinite)."""
    if math.isfinite(high - low):
        return rng.uniform(low, high)
    r = rng.random()
    return low * (1 - r) + high * r


def _float_range(value: Any) -> bool:
    """Whether a number is within a float's range (an int of 10**400 is not)."""
    return type(value) is float or -_FLOAT_MOST < value < _FLOAT_MOST


_FLOAT_MOST = 2**1023  # ints at or past it do not all convert to a float
_BELOW = frozenset({"maximum", "exclusiveMaximum"})  # the keywords that bound a number above
_ABOVE = frozenset({"minimum", "exclusiveMinimum"})


def shown(value: Any) -> str:
    """A number as a message shows it: ``:g``, or an integer past a float's range by its
    size (``:g`` of it raised OverflowError, and its digits may be thousands)."""
    if _float_range(value):
        return f"{value:g}"
    return f"{'-' if value < 0 else ''}about 10**{int(math.log10(abs(value)))}"


def _bound(schema: dict[str, Any], name: str, upper: bool) -> Any:
    """A bound's number, or None where it bounds nothing: absent, NaN (no number compares
    below or above it), or infinite on the side every number passes. An infinity no number
    passes makes the schema unsatisfiable, said so (``math.ceil`` of it was an OverflowError)."""
    value = schema.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None  # the schema's check refuses a bound that is not a number
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) or (value > 0) == upper:
            return None
        raise UnsatisfiableSchema(f"no answer can satisfy the JSON schema: its {name} is "
                                  f"{value}, which no number passes")  # fmt: skip
    return value


_FLIPPED = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
            "exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}  # fmt: skip
# a count's bound the other way, one past it (not at least 3 characters: at most 2)
_COUNTS = {"minLength": ("maxLength", -1), "maxLength": ("minLength", 1),
           "minItems": ("maxItems", -1), "maxItems": ("minItems", 1),
           "minProperties": ("maxProperties", -1),
           "maxProperties": ("minProperties", 1)}  # fmt: skip
_COUNTED = {"Length": "string", "Items": "array", "Properties": "object"}


def flipped_bound(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The bound a ``not`` of one bound leaves, with the kind it bounds (``not: {minimum:
    0}``: a number below 0; ``not: {minLength: 3}``: a string of at most 2 characters), if
    that is what it is and it bounds this schema's own kind; None for any other ``not``
    (``not`` of a range is either side of it: the check judges what the kind's maker
    makes)."""
    negated = schema.get("not")
    if not isinstance(negated, dict):
        return None
    named = [k for k in negated if k in _FLIPPED or k in _COUNTS]
    if len(named) != 1 or set(negated) - {named[0], "type"}:
        return None
    if "type" in negated and negated["type"] != schema.get("type"):
        return None  # not (a string, and at least 5): every integer passes it
    key, bound = named[0], negated[named[0]]
    if key in _FLIPPED:  # a value of another kind meets the bound, so fails its not
        return {"type": "number", _FLIPPED[key]: bound}
    count = whole_count(bound)
    if type(count) is not int:
        return None  # not a count: the schema's check refuses it
    other, step = _COUNTS[key]
    return {"type": _COUNTED[key[3:]], other: count + step}


def whole_count(value: Any) -> Any:
    """A length or count as an int: Draft 2020-12 calls 3.0 an integer (a slice of 3.0 was a
    TypeError)."""
    return int(value) if type(value) is float and value.is_integer() else value
