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
from collections.abc import Callable
from functools import lru_cache
from itertools import islice
from typing import Any

from jsonschema.exceptions import SchemaError

from planlang.sandbox.inprocess import current_meter
from planlang.standin_compiled import Entry, Make, Rules, plain_entry, seed_text
from planlang.standin_maker import DEEPEST, Maker
from planlang.standin_numbers import bounds
from planlang.standin_size import (
    ANSWER_MOST,
    AnswerTooLarge,
    OutOfTime,
    UnsatisfiableSchema,
    budget,
    least_size,
    tick,
    tick_chunk,
)
from planlang.standin_texts import WORDS
from runtime import ClientError, Reply
from runtime.canonical import same_as_dumps
from runtime.json_schema import Validator, check_schema, watched_validator

__all__ = ["StandIn", "UnsatisfiableSchema", "value_for"]

_TRIES = 8
# A schema's cache key, and an answer's text: json.dumps's text, made faster.
_schema_text = same_as_dumps(sort_keys=True)
_answer_text = same_as_dumps(ensure_ascii=False)  # json.dumps(data, ensure_ascii=False)


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
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
            data = None
        else:
            meter = current_meter()  # the plan's that asks, on the thread that serves it
            deadline = None if meter is None else meter.deadline
            try:
                data = _value(schema, rng, self.max_extra_items, entry, deadline)
            except OutOfTime:
                raise ClientError(
                    f"the stand-in stopped making its answer at the plan's time limit "
                    f"(seconds={meter.limits.seconds:g})"
                    if meter is not None
                    else "the stand-in stopped making its answer at its time limit"
                ) from None
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


def value_for(schema: dict[str, Any], rng: random.Random, *, max_extra_items: int = 4,
              deadline: float | None = None) -> Any:  # fmt: skip
    """A value valid under ``schema``, or ``UnsatisfiableSchema`` saying why there is none;
    ``OutOfTime`` once ``time.monotonic()`` passes ``deadline``: by default that of the plan
    whose call this thread serves (``current_meter()``; none outside a plan)."""
    if deadline is None:
        meter = current_meter()
        deadline = None if meter is None else meter.deadline
    entry = plain_entry(schema, max_extra_items, _RULES)
    return _value(schema, rng, max_extra_items, entry, deadline)


def _value(schema: dict[str, Any], rng: random.Random, extra: int, entry: Entry | None,
           deadline: float | None = None) -> Any:  # fmt: skip
    """``value_for``, with the schema's ``plain_entry`` made already."""
    if least_size(schema) > ANSWER_MOST:
        raise _too_large()
    try:
        with budget(deadline):  # and any other build stops there too, as it is made
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
    maker: Maker | None = None
    if compiled is not None:
        make: Make = compiled
    else:
        maker = Maker(schema, rng, extra)
        make = lambda rng: maker.make(schema, depth=0)  # noqa: E731
    if _exact(key):  # the maker honours every keyword used: no need to validate its output
        return make(rng)
    last: list[str] = []
    refused: list[str] = []
    for tried in range(_TRIES):
        tick_chunk()  # each try may be long: none starts past the plan's deadline
        if maker is not None:
            maker.wide = tried  # past the first try, a type list may answer null
        try:
            value = make(rng)
        except UnsatisfiableSchema as why:  # a drawn branch the rest contradicts: another try
            refused.append(str(why))
            last = [str(why)]
            continue
        except AnswerTooLarge:
            if not tried:
                raise
            raise UnsatisfiableSchema(  # the tries together, not one answer, passed the bound
                f"no answer the stand-in made satisfies the JSON schema ({'; '.join(last)}), "
                f"and its {tried + 1} tries together passed {ANSWER_MOST:,} items or "
                "characters"
            ) from None
        try:  # the first three errors: every item of a million may fail
            errors = list(islice(validator.iter_errors(value), 3))
        except RecursionError:  # jsonschema recurses into the answer (a deep const)
            raise UnsatisfiableSchema(
                "the stand-in's answer nests too deeply to be checked against the JSON schema"
            ) from None
        if not errors:
            return value
        last = [_where(e) for e in errors]
    if len(refused) == _TRIES and len(set(refused)) == 1:  # each try met one contradiction
        raise UnsatisfiableSchema(refused[0])
    raise UnsatisfiableSchema(  # not proved unsatisfiable: the stand-in's tries all failed
        f"the stand-in made no answer that satisfies the JSON schema in {_TRIES} tries: "
        f"{'; '.join(last)}"
    )


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Validator:
    """Checking a schema costs milliseconds; a plan asks the same few schemas many times."""
    schema = json.loads(schema_json)
    try:
        check_schema(schema)
    except SchemaError as error:
        raise UnsatisfiableSchema(f"the JSON schema is not valid: {error.message}") from None
    return watched_validator(schema, tick)  # a check of a million items stops in time too


# Keywords the maker always satisfies exactly (with consistent bounds, checked below).
_EXACT_KEYWORDS = frozenset({
    "type", "properties", "required", "items", "enum", "const", "title", "description",
    "additionalProperties", "default", "examples", "$schema", "$id",
    "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
})  # fmt: skip
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema", "$id"})
# Which bound keywords belong to which type ("minimum" on a number is not exact: rounding).
_SIZE = {"array": "Items", "string": "Length", "integer": "imum", None: "-", "object": "-",
         "boolean": "-", "null": "-", "number": "-"}  # fmt: skip


@lru_cache(maxsize=512)
def _exact(schema_json: str) -> bool:
    """True when every keyword in the schema is one the maker honours by construction."""

    def walk(node: Any, depth: int = 0) -> bool:
        if isinstance(node, bool):
            return node  # false: the maker leaves such a property out, or says no answer has it
        if depth > DEEPEST:
            return False  # the maker answers None down there: its check must say so
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
        if {"enum", "const"} & set(node) and set(node) - _ANNOTATIONS - {"enum", "const"}:
            return False  # the maker picks a listed value as is: a type or bound may refuse it
        if {"enum", "const"} <= set(node) or node.get("enum") == []:
            return False  # a const the enum may not list; an enum of nothing
        if "additionalProperties" in node and not set(node.get("required", [])) <= set(
            node.get("properties", {})
        ):
            return False  # a required name outside properties meets additionalProperties
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
        return all(walk(child, depth + 1) for child in children)

    return walk(json.loads(schema_json))


def _where(error: Any) -> str:
    """A stable description of a failed keyword (no sample values, so problems dedupe)."""
    path = "/".join(str(p) for p in error.absolute_schema_path) or "(root)"
    return f"'{error.validator}' at schema path {path}"


_RULES = Rules(WORDS, Maker._guess, bounds)  # what the compiled makers share with Maker
