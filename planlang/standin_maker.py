"""The stand-in's maker: candidate values built from the keywords of any JSON schema.

``standin_compiled`` builds the plain schemas most plans ask for faster; this reads every
other one (choices, ``$ref``, ``allOf``, bounds, patterns, ``uniqueItems``) and builds a value
that usually fits. The validator has the last word (``standin._made`` tries again, or says why
no answer fits).
"""

from __future__ import annotations

import json
import math
import random
import string
from fractions import Fraction
from functools import lru_cache
from typing import Any

from planlang.standin_pattern import pattern_candidates
from planlang.standin_size import AnswerTooLarge, fits, guess_kind, resolve_ref, spend, tick
from runtime.json_schema import schema_validator
from runtime.linear_regex import MatchTooCostly, search
from runtime.schema_keywords import json_key

__all__ = ["FORMATS", "Maker", "UnsatisfiableSchema", "WORDS", "bounds", "rounded", "uniform"]

WORDS = (
    "alpha bravo cache delta edge frame graph heap index join key loop merge node order path "
    "queue range shard token union value weight"
).split()
FORMATS = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "worker@example.com",
    "uri": "https://example.com/a",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
}


class UnsatisfiableSchema(ValueError):
    """No value the stand-in can make satisfies this schema (or the schema is invalid)."""


SOFT = 8  # levels (of data, $refs and choices) past which the maker makes the least it may
DEEPEST = 64  # levels past which a node answers None (its check then refuses it, saying where)
_ANNOTATIONS = frozenset({"enum", "title", "description", "default", "examples", "$schema",
                          "$id", "$comment"})  # fmt: skip


def listed(schema: dict[str, Any]) -> list[Any]:
    """The values of a schema's ``enum`` its other keywords allow (``{"type": "string",
    "enum": [1, "b"]}``: ``["b"]``), so a draw never picks one the check refuses; the whole
    list when none is allowed (the check then says why) or when the rest refers elsewhere."""
    enum = schema["enum"]
    if not isinstance(enum, list) or not enum or _ANNOTATIONS.issuperset(schema):
        return enum
    rest = {key: value for key, value in schema.items() if key not in _ANNOTATIONS}
    try:
        text = json.dumps(rest, sort_keys=True)
    except (TypeError, ValueError):
        return enum
    if '"$ref"' in text or '"$dynamicRef"' in text:
        return enum  # a reference resolves against the whole schema, not this node
    allowed = _allows(text)
    kept = [value for value in enum if allowed(value)]
    return kept or enum


@lru_cache(maxsize=256)
def _allows(text: str) -> Any:
    check = schema_validator(json.loads(text))

    def allowed(value: Any) -> bool:
        try:
            return bool(check.is_valid(value))
        except Exception:  # noqa: BLE001 - a value the check cannot judge is not dropped
            return True

    return allowed


class Maker:
    """Builds candidate values from the keywords of a schema; the validator has the last word."""

    def __init__(self, root: dict[str, Any], rng: random.Random, extra: int):
        self.root = root
        self.rng = rng
        self.extra = extra
        self.memo: dict[Any, int] = {}  # least sizes of its schema's nodes (``fits``)
        self.kept: list[dict[str, Any]] = []  # the nodes it made itself (``allOf`` merged)

    def make(self, schema: Any, depth: int) -> Any:
        tick()  # a build of many nodes stops when its plan's time is up
        if schema is True or schema == {}:
            return self.rng.choice(WORDS)
        if schema is False or not isinstance(schema, dict) or depth > DEEPEST:
            return None
        if "const" in schema:  # before "$ref": a listed value is the answer, the check the rest
            return schema["const"]
        if "enum" in schema:
            enum = listed(schema)
            return self.rng.choice(enum) if enum else None
        if "$ref" in schema:
            return self.make(self.resolve(schema["$ref"]), depth + 1)
        for key in ("oneOf", "anyOf"):
            if key in schema and schema[key]:
                return self.make(self.rng.choice(self._fitting(schema[key])), depth + 1)
        if "allOf" in schema:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = (
                    self.resolve(part["$ref"])
                    if isinstance(part, dict) and "$ref" in part
                    else part
                )
                if part is False:
                    raise UnsatisfiableSchema("no answer can satisfy the JSON schema: an allOf "
                                              "holds the schema false")  # fmt: skip
                if not isinstance(part, dict):
                    continue  # true: any value
                for k, v in part.items():
                    if k == "properties":
                        merged.setdefault("properties", {}).update(v)
                    elif k == "required":
                        merged["required"] = [*merged.get("required", []), *v]
                    else:
                        merged.setdefault(k, v)
            self.kept.append(merged)  # its id stays its own while ``memo`` may hold it
            return self.make(merged, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or kind
            kind = self.rng.choice(self._fitting_kinds(schema, kinds))
        if kind is None:
            kind = self._guess(schema)
        return getattr(self, f"_{kind}", self._null)(schema, depth)

    def _fitting(self, choices: list[Any]) -> list[Any]:
        """The choices the maker may build within ``ANSWER_MOST`` (all of them, usually)."""
        fitting = [c for c in choices if fits(c, self.root, self.memo)]
        if not fitting:
            raise AnswerTooLarge
        return fitting if len(fitting) < len(choices) else choices

    def _fitting_kinds(self, schema: dict[str, Any], kinds: list[Any]) -> list[Any]:
        fitting = [k for k in kinds if type(k) is not str or fits(schema, self.root, self.memo, k)]
        if not fitting:
            raise AnswerTooLarge
        return fitting if len(fitting) < len(kinds) else kinds

    def resolve(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UnsatisfiableSchema(f"the stand-in resolves only local $refs, not {ref!r}")
        node = resolve_ref(self.root, ref)
        return {} if node is None else node  # the schema's check refuses a $ref to nothing

    _guess = staticmethod(guess_kind)

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        required = list(dict.fromkeys(schema.get("required", [])))
        optional = [k for k in props if k not in required]
        if depth >= SOFT:  # deep down (a tree's $ref): the least, so a recursion ends
            chosen = required
        else:
            chosen = required + [k for k in optional if self.rng.random() < 0.5]
        spend(len(chosen))
        return {k: self.make(props.get(k, {}), depth + 1) for k in chosen}

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems", [])
        low = max(schema.get("minItems", 0), len(prefix))
        high = schema.get("maxItems", low + self.extra)
        _ordered(low, high, "minItems", "maxItems")
        n = low if depth >= SOFT else self.rng.randint(low, max(low, min(high, low + self.extra)))
        spend(n)
        items = [self.make(p, depth + 1) for p in prefix]
        item_schema = schema.get("items", {})
        if not schema.get("uniqueItems"):
            items += (self.make(item_schema, depth + 1) for _ in range(n - len(items)))
            return items
        # each item's key, equal exactly when the validator calls two items equal: a set finds
        # a repeat at once (a list compared each new item with all before it: 100,000 items
        # took 40 s; red team 17)
        seen = {json_key(item) for item in items}
        for _ in range(n - len(items)):
            for _attempt in range(8):
                value = self.make(item_schema, depth + 1)
                key = json_key(value)
                if key not in seen:
                    seen.add(key)
                    items.append(value)
                    break
            # subtle: when no new distinct value turns up, stop short rather than repeat one
        return items

    def _string(self, schema: dict[str, Any], depth: int) -> str:
        if schema.get("format") in FORMATS:
            return FORMATS[schema["format"]]
        low = schema.get("minLength", 1)
        high = schema.get("maxLength", max(low, 24))
        _ordered(schema.get("minLength", 0), high, "minLength", "maxLength")
        if "pattern" in schema:
            made = pattern_candidates(schema["pattern"], self.rng, low, schema.get("maxLength"))
            for candidate in (*made, *_pattern_candidates(self.rng, low, high)):
                try:
                    if search(schema["pattern"], candidate):
                        return candidate
                except MatchTooCostly:  # a long candidate against a large pattern: not tried
                    continue
        spend(low if type(low) is int and low > 0 else 1)
        text = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 4)))
        parts, size = [text], len(text)
        while size < low:  # joined once: ``+=`` grew the text in quadratic time (REDTEAM14)
            word = self.rng.choice(WORDS)
            parts.append(word)
            size += 1 + len(word)
        text = " ".join(parts)
        return text[:high] if high >= low else text

    def _integer(self, schema: dict[str, Any], depth: int) -> int:
        low, high = bounds(schema, integer=True)
        step = schema.get("multipleOf", 1)
        if not (_float_range(low) and _float_range(high)):
            return self._whole_between(low, high, schema.get("multipleOf"), schema)
        value = self.rng.randint(low, high)
        if isinstance(step, int) and step > 1:
            value = (value // step) * step
            if value < low:
                value += step
        elif type(step) is float and step > 0 and _float_range(value):
            return _whole_multiple(value, step, low, high)
        return value

    def _number(self, schema: dict[str, Any], depth: int) -> float | int:
        low, high = bounds(schema, integer=False)
        step = schema.get("multipleOf")
        if not (_float_range(low) and _float_range(high)):  # an integer is a number too
            return self._whole_between(math.ceil(low), math.floor(high), step, schema)
        if isinstance(step, int | float) and step > 0:
            try:
                first, last = low / step, high / step
            except OverflowError:  # ints whose quotient is past a float's range
                return self._whole_between(math.ceil(low), math.floor(high), step, schema)
            if math.isfinite(first) and math.isfinite(last):
                k = self.rng.randint(math.ceil(first), max(math.ceil(first), math.floor(last)))
                return k * step
            if low <= 0 <= high:
                return 0  # a multiple of every step
            raise UnsatisfiableSchema(
                f"the stand-in finds no multiple of {shown(step)} (multipleOf) between "
                f"{shown(low)} and {shown(high)}: the quotient is past a float's range"
            )
        return rounded(uniform(self.rng, low, high), low, high)

    def _whole_between(self, low: int, high: int, step: Any, schema: dict[str, Any]) -> int:
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
                return self.rng.randint(first, last) * whole
        raise UnsatisfiableSchema(
            f"the stand-in finds no number between {shown(low)} and {shown(high)}"
            + (f" that is a multiple of {shown(step)} (multipleOf)" if step is not None else "")
        )

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None


def _ordered(low: Any, high: Any, low_name: str, high_name: str) -> None:
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


def _pattern_candidates(rng: random.Random, low: int, high: int) -> list[str]:
    n = max(low, 1)
    pool = [
        "a" * n, "1" * n, "A" * n, "x1", "a_b", "abc-123", "a.py", "src/a.py", "v1.0.0",
        "".join(rng.choice(string.ascii_lowercase) for _ in range(n)),
    ]  # fmt: skip
    return [c for c in pool if low <= len(c) <= max(high, low)]
