"""The stand-in's maker: candidate values built from the keywords of any JSON schema.

``standin_compiled`` builds the plain schemas most plans ask for faster; this reads every
other one (choices, ``$ref``, ``allOf``, bounds, patterns, ``uniqueItems``) and builds a value
that usually fits. The validator has the last word (``standin._made`` tries again, or says why
no answer fits).
"""

from __future__ import annotations

import json
import random
import string
from functools import lru_cache
from typing import Any

from planlang.standin_numbers import integer, number, ordered
from planlang.standin_pattern import pattern_candidates
from planlang.standin_size import (
    AnswerTooLarge,
    UnsatisfiableSchema,
    fits,
    guess_kind,
    resolve_ref,
    spend,
    tick,
)
from runtime.json_schema import schema_validator
from runtime.linear_regex import MatchTooCostly, search
from runtime.schema_keywords import json_key

__all__ = ["DEEPEST", "FORMATS", "SOFT", "Maker", "UnsatisfiableSchema", "WORDS", "listed"]

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
        ordered(low, high, "minItems", "maxItems")
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
        ordered(schema.get("minLength", 0), high, "minLength", "maxLength")
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
        return integer(schema, self.rng)

    def _number(self, schema: dict[str, Any], depth: int) -> float | int:
        return number(schema, self.rng)

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None


def _pattern_candidates(rng: random.Random, low: int, high: int) -> list[str]:
    n = max(low, 1)
    pool = [
        "a" * n, "1" * n, "A" * n, "x1", "a_b", "abc-123", "a.py", "src/a.py", "v1.0.0",
        "".join(rng.choice(string.ascii_lowercase) for _ in range(n)),
    ]  # fmt: skip
    return [c for c in pool if low <= len(c) <= max(high, low)]
