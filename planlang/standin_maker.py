"""The stand-in's maker: candidate values built from the keywords of any JSON schema.

``standin_compiled`` builds the plain schemas most plans ask for faster; this reads every
other one (choices, ``$ref``, ``allOf``, bounds, patterns, ``uniqueItems``) and builds a value
that usually fits. The validator has the last word (``standin._made`` tries again, or says why
no answer fits).
"""

from __future__ import annotations

import json
import random
from copy import deepcopy
from functools import lru_cache
from typing import Any

from planlang.standin_merge import contradicted, merge_part, merged_nots
from planlang.standin_numbers import flipped_bound, integer, number, ordered, whole_count
from planlang.standin_pattern import pattern_candidates
from planlang.standin_size import (
    AnswerTooLarge,
    OutOfTime,
    UnsatisfiableSchema,
    fits,
    guess_kind,
    resolve_ref,
    spend,
    tick,
    value_size,
)
from planlang.standin_texts import FORMATS, WORDS, drawn_format, matches, plain_guesses
from runtime.json_schema import watched_validator
from runtime.linear_regex import MatchTooCostly, search
from runtime.schema_keywords import json_key

__all__ = ["DEEPEST", "SOFT", "Maker", "UnsatisfiableSchema", "listed"]

SOFT = 8  # levels (of data, $refs and choices) past which the maker makes the least it may
DEEPEST = 64  # levels past which a node answers None (its check then refuses it, saying where)
_ANNOTATIONS = frozenset({"enum", "title", "description", "default", "examples", "$schema",
                          "$id", "$comment"})  # fmt: skip


def listed(schema: dict[str, Any]) -> list[Any]:
    """The values of a schema's ``enum`` its other keywords allow (``{"type": "string",
    "enum": [1, "b"]}``: ``["b"]``), so a draw never picks one the check refuses; the whole
    list when none is allowed (the check then says why) or when the rest refers elsewhere."""
    enum = schema["enum"]
    if not isinstance(enum, list) or not enum:
        return enum
    return allowed_values(schema, enum) or enum


def allowed_values(schema: dict[str, Any], values: list[Any]) -> list[Any] | None:
    """Those of ``values`` the keywords of ``schema`` beside its enum and const allow; None
    where the rest refers elsewhere (its check is not this node's alone)."""
    if _ANNOTATIONS.issuperset(set(schema) - {"const"}):
        return values
    rest = {key: value for key, value in schema.items()
            if key not in _ANNOTATIONS and key != "const"}  # fmt: skip
    try:
        text = json.dumps(rest, sort_keys=True)
    except (TypeError, ValueError):
        return None
    if '"$ref"' in text or '"$dynamicRef"' in text:
        return None  # a reference resolves against the whole schema, not this node
    allowed = _allows(text)
    return [value for value in values if allowed(value)]


@lru_cache(maxsize=256)
def _allows(text: str) -> Any:
    check = watched_validator(json.loads(text), tick)  # stops at the plan's deadline

    def allowed(value: Any) -> bool:
        try:
            return bool(check.is_valid(value))
        except (OutOfTime, AnswerTooLarge):
            raise  # the plan's time is up: the build stops
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
        self.merged_ids: set[int] = set()  # theirs (a const there the other parts refuse)
        self.vary = 0  # repeats met: past none, a format answers its one sample
        self.wide = 0  # the try this is: past the first, a type list may answer null
        self.listed_memo: dict[int, tuple[dict[str, Any], list[Any]]] = {}  # ``_listed``

    def make(self, schema: Any, depth: int) -> Any:
        tick()  # a build of many nodes stops when its plan's time is up
        if schema is True or schema == {}:
            return self.rng.choice(WORDS)
        if schema is False or not isinstance(schema, dict) or depth > DEEPEST:
            return None
        if "const" in schema:  # before "$ref": a listed value is the answer, the check the rest
            if id(schema) in self.merged_ids and allowed_values(schema, [schema["const"]]) == []:
                raise UnsatisfiableSchema(_REFUSED_VALUES)  # parts met together: another way
            return self._fresh(schema["const"])
        if "enum" in schema:
            enum = self._listed(schema)
            if enum == []:
                raise UnsatisfiableSchema("no answer can satisfy the JSON schema: its enum "
                                          "lists no value")  # fmt: skip
            if (id(schema) in self.merged_ids and enum is schema["enum"]  # none kept, maybe
                    and allowed_values(schema, enum) == []):  # fmt: skip
                raise UnsatisfiableSchema(_REFUSED_VALUES)
            return self._fresh(self.rng.choice(enum)) if enum else None
        if "$ref" in schema:  # its siblings apply too (Draft 2020-12)
            return self.make(self._with(schema, "$ref", self.resolve(schema["$ref"])), depth + 1)
        for key in ("oneOf", "anyOf"):
            if key in schema and schema[key]:
                choices = [c for c in schema[key] if c is not False] or schema[key]
                branch = self.rng.choice(self._fitting(choices))
                return self.make(self._with(schema, key, branch), depth + 1)
        if "if" in schema and ("then" in schema or "else" in schema):
            return self._condition(schema, depth)
        if isinstance(schema.get("dependentSchemas"), dict):
            rest = {k: v for k, v in schema.items() if k != "dependentSchemas"}
            required = set(schema.get("required", []))
            parts: list[Any] = [rest]
            for key, dependent in schema["dependentSchemas"].items():
                if key in required or self.rng.random() < 0.5:  # the key made present, and so
                    parts += [{"required": [key]}, dependent]  # its schema met
            return self.make({"allOf": parts}, depth + 1)
        if "allOf" in schema:
            return self.make(self._merged(schema), depth + 1)
        flipped = flipped_bound(schema)
        if flipped is not None:  # not one bound: the bound the other way
            rest = {k: v for k, v in schema.items() if k != "not"}
            return self.make({"allOf": [rest, flipped]}, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            return self._of_kinds(schema, kind, depth)
        if kind is None:
            if "not" in schema and isinstance(schema["not"], dict) and "type" in schema["not"]:
                kind = _other_kind(schema["not"]["type"])
            else:
                kind = self._guess(schema)
            try:  # a guess, not the schema's word: keywords of other kinds do not bind it
                return getattr(self, f"_{kind}", self._null)(schema, depth)
            except UnsatisfiableSchema:  # the guessed kind has no answer: null, which no
                # keyword of another kind binds (a text was bound by the very lengths that
                # failed the guess); the check judges it
                return None if kind != "null" else self.rng.choice(WORDS)
        return getattr(self, f"_{kind}", self._null)(schema, depth)

    def _condition(self, schema: dict[str, Any], depth: int) -> Any:
        """An answer that meets the ``if`` and the ``then``, or one that misses the ``if``
        and meets the ``else`` (either may be absent: nothing more to meet); one drawn, the
        other where the first has no answer (an ``if`` the rest contradicts)."""
        rest = {k: v for k, v in schema.items() if k not in ("if", "then", "else")}
        met = [rest, schema["if"], schema.get("then", True)]
        missed = [rest, {"not": schema["if"]}, schema.get("else", True)]
        if "then" in schema:  # as drawn before, when an else alone was never drawn
            first, second = (met, missed) if self.rng.random() < 0.5 else (missed, met)
        else:
            first, second = (missed, met) if self.rng.random() < 0.5 else (met, missed)
        try:
            return self.make({"allOf": first}, depth + 1)
        except UnsatisfiableSchema:
            return self.make({"allOf": second}, depth + 1)

    def _listed(self, schema: dict[str, Any]) -> list[Any]:
        """``listed``, once a node: each draw checked every value again (3,000 values beside
        1,500 anyOf parts: 4.5 million checks a draw; red team 22)."""
        found = self.listed_memo.get(id(schema))
        if found is None or found[0] is not schema:
            found = self.listed_memo[id(schema)] = (schema, listed(schema))
        return found[1]

    def _fresh(self, value: Any) -> Any:
        """A listed value as the plan gets it: its own copy (a model's answer is a fresh
        parse; a plan that changed the schema's own const changed its schema), counted as
        made (a large const repeated passed the answer's bound: red team 22)."""
        if value is None or type(value) in (str, int, float, bool):
            return value
        spend(value_size(value))
        return deepcopy(value)

    def _with(self, schema: dict[str, Any], key: str, chosen: Any) -> Any:
        """``chosen`` (a ``$ref``'s target, a choice's branch) with the keywords beside
        ``key`` in ``schema``, which apply to the same value."""
        rest = {k: v for k, v in schema.items() if k != key and k not in _NOT_ASSERTIONS}
        return {"allOf": [rest, chosen]} if rest else chosen

    def _merged(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The parts of an ``allOf`` in one schema (``standin_merge``: of two bounds the
        tighter, properties met by both sides, required names joined). A new dict each level:
        the plan's schema is never changed."""
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        joined: dict[tuple[str, str], list[Any]] = {}  # a property's parts, one allOf for all
        nots: list[Any] = []
        seen: set[Any] = set()  # a part met twice merges as once: a ``$defs`` chain each
        for part in schema["allOf"]:  # naming the next twice was 2**levels parts
            tick()
            only_ref = isinstance(part, dict) and set(part) == {"$ref"}
            key = ("$ref", part["$ref"]) if only_ref and isinstance(part["$ref"], str) else id(part)
            if key in seen:
                continue
            seen.add(key)
            if only_ref:
                part = self.resolve(part["$ref"])
                if id(part) in seen:  # another name for a part already met
                    continue
                seen.add(id(part))
            if part is False:
                raise UnsatisfiableSchema("no answer can satisfy the JSON schema: an allOf "
                                          "holds the schema false")  # fmt: skip
            if not isinstance(part, dict):
                continue  # true: any value
            merge_part(merged, part, joined, nots)
        merged_nots(merged, nots)
        why = contradicted(merged)
        if why is not None:
            raise UnsatisfiableSchema(f"no answer can satisfy the JSON schema: {why}")
        self.kept.append(merged)  # its id stays its own while ``memo`` may hold it
        self.merged_ids.add(id(merged))
        return merged

    def _fitting(self, choices: list[Any]) -> list[Any]:
        """The choices the maker may build within ``ANSWER_MOST`` (all of them, usually)."""
        fitting = [c for c in choices if fits(c, self.root, self.memo)]
        if not fitting:
            raise AnswerTooLarge
        return fitting if len(fitting) < len(choices) else choices

    def _of_kinds(self, schema: dict[str, Any], named: list[Any], depth: int) -> Any:
        """A value of one of the kinds a ``type`` list names (a ``not: {type: ...}`` beside
        it bars some). Null is drawn only once another try or a repeated item asks for more
        than the others give (``wide``, ``vary``), or where none of them fits: every other
        try then answers null wherever it may (a ``not`` the maker does not read may bar all
        the rest), the others draw it as any kind. A kind with no answer (``minimum`` above
        ``maximum``) gives way to the others, null too."""
        allowed = _unbarred(schema, named)
        if not allowed:
            raise UnsatisfiableSchema(f"no answer can satisfy the JSON schema: its not bars "
                                      f"every type it names ({named})")  # fmt: skip
        preferred = (
            allowed if self.wide or self.vary else [k for k in allowed if k != "null"] or allowed
        )
        fitting = self._fitting_kinds(schema, preferred)
        if not fitting:
            fitting = self._fitting_kinds(schema, allowed)  # null, past ANSWER_MOST's others
            if not fitting:
                raise AnswerTooLarge
        if self.wide % 2 and not self.vary and "null" in fitting:
            return None  # the tries before may have missed for want of it
        kind = self.rng.choice(fitting)
        try:
            return getattr(self, f"_{kind}", self._null)(schema, depth)
        except UnsatisfiableSchema:
            for other in allowed:
                if other != kind and other in self._fitting_kinds(schema, [other]):
                    try:
                        return getattr(self, f"_{other}", self._null)(schema, depth)
                    except UnsatisfiableSchema:
                        continue
            raise

    def _fitting_kinds(self, schema: dict[str, Any], kinds: list[Any]) -> list[Any]:
        """The kinds the maker may build within ``ANSWER_MOST`` (all of them, usually)."""
        fitting = [k for k in kinds if type(k) is not str or fits(schema, self.root, self.memo, k)]
        return fitting if len(fitting) < len(kinds) else kinds

    def resolve(self, ref: Any) -> Any:
        node = resolve_ref(self.root, ref)
        if node is None and not (isinstance(ref, str) and ref.startswith("#")):
            raise UnsatisfiableSchema(f"the stand-in resolves only local $refs, not {ref!r}")
        return {} if node is None else node  # the schema's check refuses a $ref to nothing

    _guess = staticmethod(guess_kind)

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        required = list(dict.fromkeys(schema.get("required", [])))
        optional = [k for k in props if k not in required and props[k] is not False]
        if depth >= SOFT:  # deep down (a tree's $ref): the least, so a recursion ends
            chosen = required
        else:
            chosen = required + [k for k in optional if self.rng.random() < 0.5]
        most = whole_count(schema.get("maxProperties"))
        ordered(schema.get("minProperties", 0), most, "minProperties", "maxProperties")
        if most is not None and len(chosen) > most:
            chosen = chosen[: max(most, len(required))]  # the check says if required pass it
        least = whole_count(schema.get("minProperties")) or 0
        if len(chosen) < least:
            chosen += self._more_keys(schema, chosen, least - len(chosen))
        elif (
            self.vary
            and depth < SOFT
            and (most is None or len(chosen) < most)
            and (self.rng.random() < 0.5)
        ):  # a repeat met (uniqueItems): a name more, where one is allowed, makes another
            chosen += self._more_keys(schema, chosen, 1)
        spend(len(chosen))
        return {k: self.make(self._value_schema(schema, k), depth + 1) for k in chosen}

    def _value_schema(self, schema: dict[str, Any], key: str) -> Any:
        """What a property's value must meet: its own schema, and every ``patternProperties``
        its name matches; a name neither holds meets ``additionalProperties``."""
        props = schema.get("properties", {})
        matched = [sub for pattern, sub in (schema.get("patternProperties") or {}).items()
                   if matches(pattern, key)]  # fmt: skip
        if key in props:
            own = props[key]
        elif matched:
            own = True
        else:
            own = schema.get("additionalProperties", True)
        if own is False or False in matched:
            raise UnsatisfiableSchema(
                f"no answer can satisfy the JSON schema: its required property {key!r} is "
                "allowed no value" + ("" if key in props else " (additionalProperties)")
            )
        return {"allOf": [own, *matched]} if matched else own

    def _more_keys(self, schema: dict[str, Any], chosen: list[str], n: int) -> list[str]:
        """``n`` names more for ``minProperties``: unchosen properties first, then names a
        ``patternProperties`` pattern matches, then words (where other names are allowed)."""
        taken = set(chosen)
        props = schema.get("properties", {})
        more = [k for k in props if k not in taken and props[k] is not False][:n]
        taken.update(more)
        patterns = list(schema.get("patternProperties") or {})
        open_ = schema.get("additionalProperties", True) is not False
        for attempt in range(8 * n):
            if len(more) >= n:
                break
            if patterns and (not open_ or attempt % 2 == 0):
                pattern = self.rng.choice(patterns)
                names = [c for c in pattern_candidates(pattern, self.rng, 1, 64)
                         if matches(pattern, c)]  # fmt: skip
            else:
                names = [self.rng.choice(WORDS) + (str(attempt) if attempt else "")]
            if not open_ and not patterns:
                break
            for name in names:
                if name not in taken:
                    taken.add(name)
                    more.append(name)
                    break
        return more

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems", [])
        item_schema = schema.get("items", {})
        contains = schema.get("contains")
        need = 0 if contains is None else whole_count(schema.get("minContains", 1))
        low = max(whole_count(schema.get("minItems", 0)), len(prefix))
        high = whole_count(schema.get("maxItems", low + self.extra))
        ordered(low, high, "minItems", "maxItems")
        if item_schema is False:  # a tuple closed after its prefix
            if low > len(prefix):
                raise UnsatisfiableSchema(
                    f"no answer can satisfy the JSON schema: minItems {low} but no item is "
                    f"allowed past its {len(prefix)} prefixItems (items: false)"
                )
            return [self.make(p, depth + 1) for p in prefix]
        if need:
            low = max(low, min(len(prefix) + need, high))
        n = low if depth >= SOFT else self.rng.randint(low, max(low, min(high, low + self.extra)))
        spend(n)
        items = [self.make(p, depth + 1) for p in prefix]
        wanted = [{"allOf": [item_schema, contains]}] * min(need, n - len(items))
        if "maxContains" in schema and contains is not None:  # the rest kept out of contains
            item_schema = {"allOf": [item_schema, {"not": contains}]}
        if not schema.get("uniqueItems"):
            items += (self.make(sub, depth + 1) for sub in wanted)
            items += (self.make(item_schema, depth + 1) for _ in range(n - len(items)))
            return items
        # each item's key, equal exactly when the validator calls two items equal: a set finds
        # a repeat at once (a list compared each new item with all before it: 100,000 items
        # took 40 s; red team 17)
        seen = {json_key(item) for item in items}
        top = max((i for i in items if type(i) is int), default=None)
        for index in range(n - len(items)):
            sub = wanted[index] if index < len(wanted) else item_schema
            for _attempt in range(8):
                value = self.make(sub, depth + 1)
                key = json_key(value)
                if key not in seen:
                    break
                self.vary += 1  # a format's next answer is drawn, not its one sample
            else:
                if type(value) is int and top is not None and len(items) < low:
                    value, key = top + 1, json_key(top + 1)  # past the range drawn from
                else:
                    continue  # subtle: when no new distinct value turns up, stop short
            seen.add(key)
            items.append(value)
            if type(value) is int:
                top = value if top is None else max(top, value)
        return items

    def _string(self, schema: dict[str, Any], depth: int) -> str:
        least, most = whole_count(schema.get("minLength")), whole_count(schema.get("maxLength"))
        if schema.get("format") in FORMATS:
            for sample in self._formatted(schema["format"]):
                if (
                    (least is None or len(sample) >= least)
                    and (most is None or len(sample) <= most)
                    and ("pattern" not in schema or matches(schema["pattern"], sample))
                ):
                    return sample
        low = least if least is not None else 1 if most is None else min(1, most)
        high = most if most is not None else max(low, 24)
        ordered(schema.get("minLength", 0), high, "minLength", "maxLength")
        if "pattern" in schema:
            made = pattern_candidates(schema["pattern"], self.rng, low, most)
            for candidate in (*made, *plain_guesses(self.rng, low, high)):
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

    def _formatted(self, fmt: str) -> list[str]:
        """A format's texts to try: its one sample first (unless a distinct one is wanted),
        then a few drawn (for ``uniqueItems``, a ``pattern`` or a length beside it)."""
        first = [FORMATS[fmt]] if not self.vary else []
        return first + [drawn_format(fmt, self.rng) for _ in range(4)]

    def _integer(self, schema: dict[str, Any], depth: int) -> int:
        return integer(schema, self.rng)

    def _number(self, schema: dict[str, Any], depth: int) -> float | int:
        return number(schema, self.rng)

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None


_REFUSED_VALUES = (
    "no answer can satisfy the JSON schema: the values its const or enum lists "
    "are refused by the keywords beside them"
)
_NOT_ASSERTIONS = frozenset({"$defs", "definitions", "$id", "$schema", "$anchor",
                             "$dynamicAnchor", "$comment", "$vocabulary", "title",
                             "description", "default", "examples", "deprecated", "readOnly",
                             "writeOnly"})  # fmt: skip
_KIND_ORDER = ("integer", "boolean", "null", "string", "object", "array")


def _unbarred(schema: dict[str, Any], kinds: list[Any]) -> list[Any]:
    """The kinds of a ``type`` list a ``not: {type: ...}`` beside it leaves (a number's bars
    an integer too)."""
    negated = schema.get("not")
    if not isinstance(negated, dict) or set(negated) != {"type"}:
        return kinds
    named = negated["type"]
    barred = set(named) if isinstance(named, list) else {named}
    if "number" in barred:
        barred.add("integer")
    return [k for k in kinds if k not in barred]


def _other_kind(types: Any) -> str:
    """A kind a ``not: {type: ...}`` allows (an integer is a number too)."""
    barred = set(types) if isinstance(types, list) else {types}
    if "number" in barred:
        barred.add("integer")
    return next((k for k in _KIND_ORDER if k not in barred), "null")
