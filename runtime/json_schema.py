"""JSON schemas (Draft 2020-12) checked and applied with their patterns matched in linear time.

``jsonschema`` matches ``pattern``, ``patternProperties`` (and, through them,
``additionalProperties``) with Python's backtracking ``re``; a plan's schema and a model's
answer are an adversary's, so here those keywords match by ``linear_regex`` (RE2), and the
check refuses a pattern RE2 cannot match (``format: regex`` of the metaschema, which
``jsonschema`` checks with ``re.compile``). ``unevaluatedProperties`` finds the properties a
``patternProperties`` evaluated inside ``jsonschema`` itself, with ``re``: a schema naming both
is refused. A schema that applies itself to the same value with no step into it between
(``{"$ref": "#"}``, two ``$defs`` whose ``allOf`` name each other) recurses without end in any
validator, and a ``$ref`` that names nothing the schema holds fails every answer: both are
refused here, where the plan's line is still known. Everything else is ``jsonschema``'s own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import attrs
import referencing
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from .canonical import written_too_large
from .linear_regex import PatternError, compiled, program_size
from .schema_keywords import LINEAR_KEYWORDS

__all__ = ["INSTRUCTIONS_MOST", "PATTERNS_MOST", "SCHEMA_MOST", "Validator", "check_schema",
           "check_size", "on_steps", "schema_validator",
           "watched_validator"]  # fmt: skip

FORMAT_CHECKER = FormatChecker(list(Draft202012Validator.FORMAT_CHECKER.checkers))


@FORMAT_CHECKER.checks("regex", raises=PatternError)
def _is_pattern(instance: object) -> bool:
    if isinstance(instance, str):
        compiled(instance)
    return True


# The most values a schema may hold written out (a value it holds twice counts twice): a plan
# can build a schema that holds one object twice at each of 20 levels, a million values as
# text, in 20 lines; every walk of it (its text, the metaschema, the stand-in) is that long.
# The metaschema's check alone takes about 0.1 ms a value (1 s at this bound, anyOf dense).
SCHEMA_MOST = 10_000


def check_size(schema: Any) -> None:
    """Raise ``SchemaError`` for a schema of more than ``SCHEMA_MOST`` values written out (a
    cycle among them too; a text weighs one more each 16 characters), or nested past
    256 levels (``DEEPEST``); in time bounded by that number, whatever the schema holds."""
    wrong = written_too_large(schema, SCHEMA_MOST)
    if wrong is not None:
        raise SchemaError(f"the schema {wrong}")


def check_schema(schema: Any) -> None:
    """Raise ``SchemaError`` for a schema that is too large, not valid Draft 2020-12, names a
    pattern RE2 does not match, or pairs ``unevaluatedProperties`` with ``patternProperties``."""
    check_size(schema)
    try:
        _check(schema)
    except RecursionError:  # jsonschema's metaschema check recurses (about 120 levels here)
        raise SchemaError("the schema nests too deeply to be checked") from None


def _check(schema: Any) -> None:
    _bound_patterns(schema)  # first: the metaschema's check compiles every pattern
    try:
        Draft202012Validator.check_schema(schema, format_checker=FORMAT_CHECKER)
    except SchemaError as error:
        if isinstance(error.cause, PatternError):
            where = "/".join(str(part) for part in error.absolute_path)
            raise SchemaError(f"{error.cause} (at {where or 'the top level'})") from None
        raise
    _check_patterns(schema)
    keywords = set(_keywords(schema))
    if {"unevaluatedProperties", "patternProperties"} <= keywords:
        raise SchemaError(
            "a schema with both unevaluatedProperties and patternProperties is not "
            "supported (the first matches the second's patterns by backtracking)"
        )
    if isinstance(schema, Mapping) and ("$ref" in keywords or "$dynamicRef" in keywords):
        _check_references(schema)


_BASE = "urn:planlang:schema"
_SAME_VALUE = ("allOf", "anyOf", "oneOf")  # lists of schemas applied to the value itself
_SAME_VALUE_ONE = ("not", "if", "then", "else")
_NOT_SCHEMAS = ("const", "enum", "default", "examples")  # data, never walked as schemas


def _check_references(schema: Mapping[str, Any]) -> None:
    """Refuse a ``$ref`` that resolves to nothing or to a value that is not a schema, and a
    cycle of schemas each applied to the very value the one before it was (``$ref``,
    ``allOf``/``anyOf``/``oneOf``, ``not``, ``if``/``then``/``else``, ``dependentSchemas``):
    validation would never end."""
    try:
        resource = Resource.from_contents(schema, default_specification=DRAFT202012)
        base = resource.id() or _BASE
        root = Registry().with_resource(base, resource).crawl().resolver(base_uri=base)
    except Exception as error:  # noqa: BLE001 - referencing's own, on a malformed subresource
        raise SchemaError(f"the schema's $ids cannot be followed: {error}") from None
    depth, checked = _positions(schema)
    nodes: dict[int, tuple[Any, str]] = {}  # id -> (schema, where)
    edges: dict[int, list[int]] = {}
    targets: list[tuple[int, Any, str, str]] = []  # (depth, target, ref, where), to check
    # (node, where, resolver, whether the resolver is already at the node's own resource)
    stack: list[tuple[Any, str, Any, bool]] = [(schema, "", root, True)]
    while stack:
        node, where, resolver, entered = stack.pop()
        if not isinstance(node, Mapping) or id(node) in nodes:
            continue
        nodes[id(node)] = (node, where)
        if not entered and isinstance(node.get("$id"), str):  # its refs are its own
            resolver = _entered(resolver, node, where)
        same = edges.setdefault(id(node), [])
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            found = _lookup(resolver, ref, where)
            target = found.contents
            if not isinstance(target, Mapping | list) or id(target) not in checked:
                targets.append((depth.get(id(target), 0), target, ref, where))
            same.append(id(target))
            stack.append((target, f"{where}/{keyword}".lstrip("/"), found.resolver, True))
        for key, value in node.items():
            if key in _NOT_SCHEMAS or key in ("$ref", "$dynamicRef"):
                continue
            at = f"{where}/{key}".lstrip("/")
            if isinstance(value, Mapping):
                if key in _SAME_VALUE_ONE:
                    same.append(id(value))
                elif key == "dependentSchemas":
                    same.extend(id(v) for v in value.values() if isinstance(v, Mapping))
                stack.append((value, at, resolver, False))
            elif isinstance(value, list):
                if key in _SAME_VALUE:
                    same.extend(id(v) for v in value if isinstance(v, Mapping))
                stack.extend((v, f"{at}/{n}", resolver, False) for n, v in enumerate(value))
    # outermost first: what a target's check covers (its schema positions) is not checked again
    for _depth, target, ref, where in sorted(targets, key=lambda t: t[0]):
        if isinstance(target, Mapping | list) and id(target) in checked:
            continue
        _check_target(target, ref, where)
        checked.update(_positions(target, checked)[1])
    cycle = _cycle(edges)
    if cycle is not None:
        raise SchemaError(
            "the schema applies itself to the same value with no step into it between (at "
            f"{nodes[cycle][1] or 'the top level'}): validating any answer would never end"
        )


def _entered(resolver: Any, node: Mapping[str, Any], where: str) -> Any:
    try:
        return resolver.in_subresource(
            Resource.from_contents(node, default_specification=DRAFT202012))  # fmt: skip
    except Exception as error:  # noqa: BLE001 - referencing's own, on a malformed subresource
        raise SchemaError(f"the $id at {where} cannot be followed: {error}") from None


def _lookup(resolver: Any, ref: str, where: str) -> Any:
    try:
        return resolver.lookup(ref)
    except Unresolvable:
        raise SchemaError(f"the $ref {ref!r} names nothing this schema holds (at "
                          f"{where or 'the top level'})") from None  # fmt: skip
    except Exception as error:  # noqa: BLE001 - referencing's own, on a malformed subresource
        raise SchemaError(f"the $ref {ref!r} cannot be followed: {error} (at "
                          f"{where or 'the top level'})") from None  # fmt: skip


# Where Draft 2020-12's metaschema takes a value as a schema (each other value is data to it).
_ONE_SCHEMA = frozenset({"additionalProperties", "propertyNames", "items", "contains", "not",
                         "if", "then", "else", "unevaluatedItems", "unevaluatedProperties",
                         "contentSchema"})  # fmt: skip
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas", "dependencies"})  # fmt: skip
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})


def _positions(schema: Any, stop: set[int] | None = None) -> tuple[dict[int, int], set[int]]:
    """(the depth of each object and array, the objects the metaschema checked as schemas
    when it checked ``schema``), each visited once; ``stop``: schemas not walked again."""
    depth: dict[int, int] = {}
    checked: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(schema, 0, True)]
    while stack:
        node, level, as_schema = stack.pop()
        if not isinstance(node, Mapping | list):
            continue
        if as_schema:
            if id(node) in checked or (stop is not None and id(node) in stop):
                continue
            checked.add(id(node))
        elif id(node) in depth:
            continue
        depth.setdefault(id(node), level)
        if isinstance(node, list):
            stack.extend((item, level + 1, False) for item in node)
            continue
        for key, value in node.items():
            schemas = as_schema and (key in _ONE_SCHEMA or key in _SCHEMA_MAPS
                                     or key in _SCHEMA_LISTS)  # fmt: skip
            if schemas and key in _SCHEMA_MAPS and isinstance(value, Mapping):
                depth.setdefault(id(value), level + 1)
                stack.extend((v, level + 2, True) for v in value.values())
            elif schemas and key in _SCHEMA_LISTS and isinstance(value, list):
                depth.setdefault(id(value), level + 1)
                stack.extend((v, level + 2, True) for v in value)
            else:
                stack.append((value, level + 1, schemas and key in _ONE_SCHEMA))
    return depth, checked


def _check_target(target: Any, ref: str, where: str) -> None:
    """A ``$ref`` may name a value the metaschema never saw as a schema (within ``const``,
    ``enum``, ``default``, ``examples``, or any other data): validating it then raised from
    jsonschema (``{"pattern": 5}``: a TypeError) as each answer was checked, however it was."""
    try:
        Draft202012Validator.check_schema(target, format_checker=FORMAT_CHECKER)
    except SchemaError as error:
        inner = "/".join(str(part) for part in error.absolute_path)
        why = str(error.cause) if isinstance(error.cause, PatternError) else error.message
        raise SchemaError(
            f"the $ref {ref!r} names a value that is not a schema: {why} (at "
            f"{where or 'the top level'}{', in it at ' + inner if inner else ''})"
        ) from None


def _cycle(edges: dict[int, list[int]]) -> int | None:
    """A node on a cycle of ``edges``, or None (depth first, without recursion)."""
    state: dict[int, int] = {}  # 1: on the path, 2: done
    for start in edges:
        if start in state:
            continue
        path = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while path:
            node, successors = path[-1]
            for successor in successors:
                if state.get(successor) == 1:
                    return successor
                if successor not in state:
                    state[successor] = 1
                    path.append((successor, iter(edges.get(successor, ()))))
                    break
            else:
                path.pop()
                state[node] = 2
    return None


# A schema's distinct patterns: as many as ``linear_regex`` keeps compiled, so a check of an
# answer never compiles one again; and their RE2 programs' instructions in all, about 0.2 µs
# each to compile. 4,900 patterns of 11,000 instructions each were compiled again on every
# pass, for a minute (red team 18).
PATTERNS_MOST = 256
INSTRUCTIONS_MOST = 100_000


def _bound_patterns(schema: Any) -> None:
    """Refuse a schema past ``PATTERNS_MOST`` distinct patterns or ``INSTRUCTIONS_MOST``
    instructions, compiling no more than that bound (a pattern RE2 refuses is said, with
    where, by the checks after this one)."""
    seen: set[str] = set()
    instructions = 0
    for node in _nodes(schema):
        patterns: list[Any] = [node.get("pattern")]
        more = node.get("patternProperties")
        if isinstance(more, Mapping):
            patterns.extend(more)
        for pattern in patterns:
            if not isinstance(pattern, str) or pattern in seen:
                continue
            seen.add(pattern)
            if len(seen) > PATTERNS_MOST:
                raise SchemaError(f"the schema holds more than {PATTERNS_MOST:,} distinct "
                                  "patterns (pattern, patternProperties)")  # fmt: skip
            try:
                instructions += program_size(pattern)
            except PatternError:
                continue
            if instructions > INSTRUCTIONS_MOST:
                raise SchemaError(
                    f"the schema's patterns are too large to match in time: their RE2 programs "
                    f"hold more than {INSTRUCTIONS_MOST:,} instructions in all"
                )


def _check_patterns(schema: Any) -> None:
    """Every ``pattern`` and ``patternProperties`` key anywhere compiles in RE2: a ``$ref`` may
    lead into a ``const``, ``enum`` or ``default``, where the metaschema checks no pattern."""
    for node in _nodes(schema):
        patterns: list[Any] = [node.get("pattern")]
        more = node.get("patternProperties")
        if isinstance(more, Mapping):
            patterns.extend(more)
        for pattern in patterns:
            if isinstance(pattern, str):
                try:
                    compiled(pattern)
                except PatternError as error:
                    raise SchemaError(str(error)) from None


def _nodes(schema: Any) -> Iterator[Mapping[Any, Any]]:
    """Every object in the schema, at any depth."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _keywords(schema: Any) -> Iterator[str]:
    """Every key of every object in the schema (a property named so counts too: a refusal of
    a rare schema, never a pattern let through)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            yield from (key for key in node if isinstance(key, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


# jsonschema's Draft 2020-12 validator, its three pattern keywords matched by RE2 and
# ``uniqueItems`` found in linear time (the messages are jsonschema's, word for word: a repair
# turn lists them to a model).
_Linear = validators.extend(Draft202012Validator, LINEAR_KEYWORDS)
_FIELDS = [(each.name, each.alias) for each in attrs.fields(_Linear) if each.init]


def _evolving(cls: Any, tick: Callable[[], None] | None = None) -> Callable[..., Any]:
    """jsonschema's ``evolve``, but always ``cls``: jsonschema's picks a class by each
    subschema's ``$schema`` (``Draft7Validator``, even plain ``Draft202012Validator``), which
    match patterns with ``re``. As at the top level, all of a schema is read as 2020-12.
    ``tick``, if given, is called first: jsonschema evolves at every item and property it
    looks into, so a caller's ``tick`` sees the validation go on and may stop it."""

    def evolve(self: Any, **changes: Any) -> Any:
        if tick is not None:
            tick()
        changes.setdefault("schema", self.schema)
        for name, alias in _FIELDS:
            if alias not in changes:
                changes[alias] = getattr(self, name)
        return cls(**changes)

    return evolve


class _Steps(threading.local):
    taken = 0  # subschemas entered on this thread since the hook was last called


_STEPS = _Steps()
_STEPS_A_LOOK = 1024
_on_steps: Callable[[], None] | None = None


def on_steps(hook: Callable[[], None] | None) -> None:
    """Have ``hook()`` called every ``_STEPS_A_LOOK`` subschemas any validation on any thread
    enters; it may raise to stop that validation. A schema of 30 ``$defs`` each naming the next
    twice is 2**30 steps for any answer, and a check of a model's reply has no other end: the
    embedder (planlang: its plan's deadline) says when it has run too long."""
    global _on_steps
    _on_steps = hook


def _step() -> None:
    steps = _STEPS
    steps.taken += 1
    if steps.taken >= _STEPS_A_LOOK:
        steps.taken = 0
        hook = _on_steps
        if hook is not None:
            hook()


_Linear.evolve = _evolving(_Linear, _step)
# No retrieval: jsonschema's default registry fetches a remote ``$ref`` with ``urlopen``.
_LOCAL = referencing.Registry()


def schema_validator(schema: Any) -> Validator:
    """A validator of a schema ``check_schema`` accepted."""
    return _Linear(schema, registry=_LOCAL)


@lru_cache(maxsize=8)
def _watched(tick: Callable[[], None]) -> Any:
    cls = validators.extend(_Linear, {})
    cls.evolve = _evolving(cls, tick)
    return cls


def watched_validator(schema: Any, tick: Callable[[], None]) -> Validator:
    """``schema_validator``, calling ``tick()`` at each item and property it looks into: a
    ``tick`` that raises stops a validation that would take too long (a million items)."""
    return _watched(tick)(schema, registry=_LOCAL)
