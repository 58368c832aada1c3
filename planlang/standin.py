"""The stand-in model: free answers that satisfy any JSON schema a plan asks for.

A rehearsal runs a plan against this instead of a real model, so the plan's code paths are
exercised with data of the right shape (objects with their required fields, arrays of varying
length, bounded numbers, enums, nested schemas) at no cost. Answers are seeded by the seed and by
the question itself, so a rehearsal is repeatable whatever order the workers run in.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from jsonschema.exceptions import SchemaError

from planlang.standin_compiled import Entry, Make, Rules, plain_entry, seed_text
from planlang.standin_size import (
    ANSWER_MOST,
    AnswerTooLarge,
    budget,
    fits,
    guess_kind,
    least_size,
    spend,
)
from runtime import Reply
from runtime.canonical import same_as_dumps
from runtime.json_schema import Validator, check_schema, schema_validator
from runtime.linear_regex import search

__all__ = ["StandIn", "UnsatisfiableSchema", "value_for"]

_WORDS = (
    "alpha bravo cache delta edge frame graph heap index join key loop merge node order path "
    "queue range shard token union value weight"
).split()
_FORMATS = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "worker@example.com",
    "uri": "https://example.com/a",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
}
_TRIES = 8
# A schema's cache key, and an answer's text: json.dumps's text, made faster.
_schema_text = same_as_dumps(sort_keys=True)
_answer_text = same_as_dumps(ensure_ascii=False)  # json.dumps(data, ensure_ascii=False)


class UnsatisfiableSchema(ValueError):
    """No value the stand-in can make satisfies this schema (or the schema is invalid)."""


class StandIn:
    """A client (``model, messages, **params -> Reply``) that answers for free."""

    def __init__(
        self,
        seed: int = 0,
        *,
        max_extra_items: int = 4,
        on_call: Callable[[], None] | None = None,
    ):
        self.seed = seed
        self.max_extra_items = max_extra_items
        self.on_call = on_call  # e.g. a rehearsal's virtual clock

    def __repr__(self) -> str:
        return f"StandIn(seed={self.seed})"

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        if self.on_call is not None:
            self.on_call()
        schema = schema_of(messages, params)
        entry = None if schema is None else plain_entry(schema, self.max_extra_items, _RULES)
        asked = seed_text(model, messages, params, schema, entry)
        digest = hashlib.sha256(f"{self.seed}:{asked}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        if schema is None:
            text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))
            data = None
        else:
            data = _value(schema, rng, self.max_extra_items, entry)
            text = _answer_text(data)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
        return Reply(
            text=text,
            data=data,
            prompt_tokens=max(1, prompt_chars // 4),
            completion_tokens=max(1, len(text) // 4),
            model=model,
        )


def schema_of(messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a call asks for: from ``response_format``, else from the system text."""
    fmt = params.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        schema = fmt["json_schema"].get("schema")
        if isinstance(schema, dict):
            return schema
    for message in messages:
        content = str(message.get("content", ""))
        marker = "JSON schema:\n"
        if message.get("role") == "system" and marker in content:
            try:
                schema = json.loads(content.split(marker, 1)[1])
            except json.JSONDecodeError:
                continue
            if isinstance(schema, dict):
                return schema
    return None


def value_for(schema: dict[str, Any], rng: random.Random, *, max_extra_items: int = 4) -> Any:
    """A value valid under ``schema``, or ``UnsatisfiableSchema`` saying why there is none."""
    return _value(schema, rng, max_extra_items, plain_entry(schema, max_extra_items, _RULES))


def _value(schema: dict[str, Any], rng: random.Random, extra: int, entry: Entry | None) -> Any:
    """``value_for``, with the schema's ``plain_entry`` made already."""
    if least_size(schema) > ANSWER_MOST:
        raise _too_large()
    try:
        with budget():  # and any other build stops there too, as it is made
            return _made(schema, rng, extra, entry)
    except AnswerTooLarge:
        raise _too_large() from None


def _too_large() -> UnsatisfiableSchema:
    return UnsatisfiableSchema(
        f"the JSON schema asks for an answer of more than {ANSWER_MOST:,} items or "
        "characters, past what a model's reply holds; the stand-in makes none"
    )


def _made(schema: dict[str, Any], rng: random.Random, extra: int, entry: Entry | None) -> Any:
    compiled, key = entry if entry is not None else (None, _schema_text(schema))
    validator = _validator(key)
    if compiled is not None:
        make: Make = compiled
    else:
        maker = _Maker(schema, rng, extra)
        make = lambda rng: maker.make(schema, depth=0)  # noqa: E731
    if _exact(key):  # the maker honours every keyword used: no need to validate its output
        return make(rng)
    last: list[str] = []
    for _ in range(_TRIES):
        value = make(rng)
        errors = list(validator.iter_errors(value))
        if not errors:
            return value
        last = [_where(e) for e in errors[:3]]
    raise UnsatisfiableSchema(
        "no answer can satisfy the JSON schema (the stand-in tried "
        f"{_TRIES} times): {'; '.join(last)}"
    )


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Validator:
    """Checking a schema costs milliseconds; a plan asks the same few schemas many times."""
    schema = json.loads(schema_json)
    try:
        check_schema(schema)
    except SchemaError as error:
        raise UnsatisfiableSchema(f"the JSON schema is not valid: {error.message}") from None
    return schema_validator(schema)


# Keywords the maker always satisfies exactly (with consistent bounds, checked below).
_EXACT_KEYWORDS = frozenset({
    "type", "properties", "required", "items", "enum", "const", "title", "description",
    "additionalProperties", "default", "examples", "$schema", "$id",
    "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
})  # fmt: skip
# Which bound keywords belong to which type ("minimum" on a number is not exact: rounding).
_SIZE = {"array": "Items", "string": "Length", "integer": "imum", None: "-", "object": "-",
         "boolean": "-", "null": "-", "number": "-"}  # fmt: skip


@lru_cache(maxsize=512)
def _exact(schema_json: str) -> bool:
    """True when every keyword in the schema is one the maker honours by construction."""

    def walk(node: Any) -> bool:
        if isinstance(node, bool):
            return True
        if not isinstance(node, dict) or not set(node) <= _EXACT_KEYWORDS:
            return False
        if node.get("additionalProperties") is False and "properties" not in node:
            return False
        kinds = node.get("type")
        if isinstance(kinds, list) or kinds not in (
            None,
            "object",
            "array",
            "string",
            "boolean",
            "null",
            "integer",
            "number",
        ):
            return False
        if kinds is None and not ({"enum", "const"} & set(node)):
            return False
        suffix = _SIZE[kinds]
        low = node.get(f"min{suffix}", 0)
        high = node.get(f"max{suffix}", max(low, 0))
        bounds = {f"min{suffix}", f"max{suffix}"}
        if set(node) & {"minItems", "maxItems", "minLength", "maxLength", "minimum",
                        "maximum"} - bounds:  # fmt: skip
            return False  # a bound that does not belong to this type
        if low > high or (kinds != "integer" and low < 0):
            return False
        children = list(node.get("properties", {}).values())
        if isinstance(node.get("items"), dict):
            children.append(node["items"])
        return all(walk(child) for child in children)

    return walk(json.loads(schema_json))


def _where(error: Any) -> str:
    """A stable description of a failed keyword (no sample values, so problems dedupe)."""
    path = "/".join(str(p) for p in error.absolute_schema_path) or "(root)"
    return f"'{error.validator}' at schema path {path}"


class _Maker:
    """Builds candidate values from the keywords of a schema; the validator has the last word."""

    def __init__(self, root: dict[str, Any], rng: random.Random, extra: int):
        self.root = root
        self.rng = rng
        self.extra = extra
        self.memo: dict[Any, int] = {}  # least sizes of its schema's nodes (``fits``)
        self.kept: list[dict[str, Any]] = []  # the nodes it made itself (``allOf`` merged)

    def make(self, schema: Any, depth: int) -> Any:
        if schema is True or schema == {}:
            return self.rng.choice(_WORDS)
        if schema is False or not isinstance(schema, dict) or depth > 12:
            return None
        if "$ref" in schema:
            return self.make(self.resolve(schema["$ref"]), depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"]) if schema["enum"] else None
        for key in ("oneOf", "anyOf"):
            if key in schema and schema[key]:
                return self.make(self.rng.choice(self._fitting(schema[key])), depth + 1)
        if "allOf" in schema:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part["$ref"]) if "$ref" in part else part
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

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise UnsatisfiableSchema(f"the stand-in resolves only local $refs, not {ref!r}")
        node: Any = self.root
        for part in ref.lstrip("#").strip("/").split("/"):
            if not part:
                continue
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {})
        return node

    _guess = staticmethod(guess_kind)

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        required = list(dict.fromkeys(schema.get("required", [])))
        optional = [k for k in props if k not in required]
        chosen = required + [k for k in optional if self.rng.random() < 0.5]
        spend(len(chosen))
        return {k: self.make(props.get(k, {}), depth + 1) for k in chosen}

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems", [])
        low = max(schema.get("minItems", 0), len(prefix))
        high = schema.get("maxItems", low + self.extra)
        _ordered(low, high, "minItems", "maxItems")
        n = self.rng.randint(low, max(low, min(high, low + self.extra)))
        spend(n)
        items = [self.make(p, depth + 1) for p in prefix]
        item_schema = schema.get("items", {})
        seen: list[Any] = list(items)
        unique = bool(schema.get("uniqueItems"))
        for _ in range(n - len(items)):
            for _attempt in range(8):
                value = self.make(item_schema, depth + 1)
                if not unique or value not in seen:
                    seen.append(value)
                    items.append(value)
                    break
            # subtle: when no new distinct value turns up, stop short rather than repeat one
        return items

    def _string(self, schema: dict[str, Any], depth: int) -> str:
        if schema.get("format") in _FORMATS:
            return _FORMATS[schema["format"]]
        low = schema.get("minLength", 1)
        high = schema.get("maxLength", max(low, 24))
        _ordered(schema.get("minLength", 0), high, "minLength", "maxLength")
        if "pattern" in schema:
            for candidate in _pattern_candidates(self.rng, low, high):
                if search(schema["pattern"], candidate):
                    return candidate
        spend(low if type(low) is int and low > 0 else 1)
        text = " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 4)))
        parts, size = [text], len(text)
        while size < low:  # joined once: ``+=`` grew the text in quadratic time (REDTEAM14)
            word = self.rng.choice(_WORDS)
            parts.append(word)
            size += 1 + len(word)
        text = " ".join(parts)
        return text[:high] if high >= low else text

    def _integer(self, schema: dict[str, Any], depth: int) -> int:
        low, high = _bounds(schema, integer=True)
        step = schema.get("multipleOf", 1)
        value = self.rng.randint(low, high)
        if isinstance(step, int) and step > 1:
            value = (value // step) * step
            if value < low:
                value += step
        return value

    def _number(self, schema: dict[str, Any], depth: int) -> float:
        low, high = _bounds(schema, integer=False)
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and step > 0:
            import math

            k = self.rng.randint(
                math.ceil(low / step), max(math.ceil(low / step), math.floor(high / step))
            )
            return k * step
        return round(self.rng.uniform(low, high), 3)

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None


def _ordered(low: Any, high: Any, low_name: str, high_name: str) -> None:
    if isinstance(low, int | float) and isinstance(high, int | float) and high < low:
        raise UnsatisfiableSchema(
            f"no answer can satisfy the JSON schema: {low_name} {low:g} is above "
            f"{high_name} {high:g}"
        )


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
    low = schema.get("minimum", 0 if "maximum" not in schema else schema["maximum"] - 100)
    high = schema.get("maximum", low + 100)
    if "exclusiveMinimum" in schema:
        low = schema["exclusiveMinimum"] + (1 if integer else 1e-3)
    if "exclusiveMaximum" in schema:
        high = schema["exclusiveMaximum"] - (1 if integer else 1e-3)
    if integer:
        import math

        low, high = math.ceil(low), math.floor(high)
    if high < low:
        raise UnsatisfiableSchema(
            f"no answer can satisfy the JSON schema: no {'integer' if integer else 'number'} "
            f"is at least {low:g} and at most {high:g} (minimum above maximum)"
        )
    return low, high


_RULES = Rules(_WORDS, _Maker._guess, _bounds)  # what the compiled makers share with _Maker


def _pattern_candidates(rng: random.Random, low: int, high: int) -> list[str]:
    n = max(low, 1)
    pool = [
        "a" * n, "1" * n, "A" * n, "x1", "a_b", "abc-123", "a.py", "src/a.py", "v1.0.0",
        "".join(rng.choice(string.ascii_lowercase) for _ in range(n)),
    ]  # fmt: skip
    return [c for c in pool if low <= len(c) <= max(high, low)]
