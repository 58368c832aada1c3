"""Host word specs, and the small type model the plan generator reasons with.

An embedder describes each host word once (its parameters and the JSON schema of what it
returns); the generator turns those schemas into types so generated plans pass well-typed
arguments and then *use* the results: index required fields, ``.get`` optional ones, loop over
arrays. The type model is deliberately tiny: what it cannot express becomes ``ANY``, which a plan
only prints or passes on, so a generated plan never assumes more than the schema promises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANY",
    "BOOL",
    "DEFAULT_HOST_WORDS",
    "FLOAT",
    "INT",
    "NONE",
    "STR",
    "HostWordSpec",
    "Param",
    "Type",
    "normalize_host_words",
    "type_of_schema",
]

# A type is a tuple: ("int",), ("list", T), ("map", T) for dict[str, T], ("rec", fields) for a
# JSON object with known properties (fields: ((name, T, required), ...)), ("fn", params, T).
Type = tuple[Any, ...]
INT: Type = ("int",)
FLOAT: Type = ("float",)
STR: Type = ("str",)
BOOL: Type = ("bool",)
NONE: Type = ("none",)
ANY: Type = ("any",)

# Shorthand parameter kinds an embedder may write instead of a JSON schema.
_KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array", "items": {"type": "string"}},
    "dict": {"type": "object", "additionalProperties": {"type": "string"}},
}
_SPECIAL_KINDS = ("schema", "thunks")


@dataclass(frozen=True)
class Param:
    """One parameter of a host word.

    ``kind`` is a JSON schema of the argument, or a shorthand: ``"str"``, ``"int"``,
    ``"float"``, ``"bool"``, ``"list"``, ``"dict"``; or one of two special kinds:
    ``"schema"`` (the argument *is* a JSON schema, drawn from ``choices``; the word returns data
    matching it, like ``agent(prompt, schema=...)``) and ``"thunks"`` (a list of zero-argument
    lambdas that each call another host word; the word returns their results, like
    ``parallel``). ``keyword=True`` passes it as ``name=...``; ``required=False`` lets the
    generator leave it out.
    """

    name: str
    kind: str | Mapping[str, Any] = "str"
    keyword: bool = False
    required: bool = True
    choices: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"Parameter name {self.name!r} must be an identifier without '_'.")
        if isinstance(self.kind, str) and self.kind not in (*_KIND_SCHEMAS, *_SPECIAL_KINDS):
            known = ", ".join(sorted((*_KIND_SCHEMAS, *_SPECIAL_KINDS)))
            raise ValueError(f"Parameter kind {self.kind!r} is unknown; use {known} or a schema.")

    @property
    def schema(self) -> Mapping[str, Any]:
        """The JSON schema an argument must match (``{}`` for the special kinds)."""
        if isinstance(self.kind, str):
            return _KIND_SCHEMAS.get(self.kind, {})
        return self.kind


@dataclass(frozen=True)
class HostWordSpec:
    """What a plan may call: a host word's name, parameters and the schema of its result.

    ``returns`` is a JSON schema, or ``None`` for a word called for its effect (``phase``,
    ``log``). A word with a ``"schema"`` parameter returns data matching the schema passed.
    """

    name: str
    params: tuple[Param, ...] = ()
    returns: Mapping[str, Any] | None = None
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"Host word name {self.name!r} must be an identifier without '_'.")

    @classmethod
    def from_dict(cls, name: str, spec: Mapping[str, Any]) -> HostWordSpec:
        """Build from plain data: ``{"params": [{"name": ..., "kind": ...}], "returns": {...}}``."""
        unknown = set(spec) - {"params", "returns", "description"}
        if unknown:
            raise ValueError(f"Host word {name!r} has unknown keys {sorted(unknown)}.")
        params = tuple(
            p if isinstance(p, Param) else Param(**{**p, "choices": tuple(p.get("choices", ()))})
            for p in spec.get("params", ())
        )
        return cls(name, params, spec.get("returns"), spec.get("description", ""))

    def schema_param(self) -> Param | None:
        return next((p for p in self.params if p.kind == "schema"), None)

    def thunks_param(self) -> Param | None:
        return next((p for p in self.params if p.kind == "thunks"), None)


def normalize_host_words(
    host_words: Mapping[str, HostWordSpec | Mapping[str, Any]] | Sequence[HostWordSpec],
) -> dict[str, HostWordSpec]:
    """Accept a mapping name -> spec (or plain dict), or a sequence of specs."""
    if isinstance(host_words, Mapping):
        items = [
            spec if isinstance(spec, HostWordSpec) else HostWordSpec.from_dict(name, spec)
            for name, spec in host_words.items()
        ]
    else:
        items = list(host_words)
    words = {spec.name: spec for spec in items}
    if len(words) != len(items):
        raise ValueError("Two host word specs have the same name.")
    return words


def type_of_schema(schema: Mapping[str, Any] | None) -> Type:
    """The type a generated plan may assume for a value matching ``schema``."""
    if schema is None:
        return NONE
    if "const" in schema:
        return _type_of_value(schema["const"])
    if "enum" in schema:
        kinds = {_type_of_value(v) for v in schema["enum"]}
        return kinds.pop() if len(kinds) == 1 else ANY
    kind = schema.get("type")
    if kind == "string":
        return STR
    if kind == "integer":
        return INT
    if kind == "number":
        return FLOAT
    if kind == "boolean":
        return BOOL
    if kind == "null":
        return NONE
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return ("list", type_of_schema(schema["items"]))
    if kind == "object":
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            required = set(schema.get("required", ()))
            fields = tuple(
                (name, type_of_schema(sub), name in required)
                for name, sub in props.items()
                if isinstance(name, str) and isinstance(sub, Mapping)
            )
            return ("rec", fields)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return ("map", type_of_schema(extra))
    return ANY


def _type_of_value(value: Any) -> Type:
    simple = {str: STR, int: INT, float: FLOAT, bool: BOOL, type(None): NONE}
    return simple.get(type(value), ANY)


_FINDINGS = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "file": {"type": "string"},
                    "line": {"type": "integer", "minimum": 1},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["file", "line", "confidence"],
            },
        },
        "note": {"type": "string"},
    },
    "required": ["summary", "score", "findings"],
}
_ANSWER = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

# The planlang runtime's own words, as a default for ``plans()``.
DEFAULT_HOST_WORDS: dict[str, HostWordSpec] = {
    "agent": HostWordSpec(
        "agent",
        (
            Param("prompt", "str"),
            Param("schema", "schema", keyword=True, choices=(_FINDINGS, _ANSWER)),
        ),
        returns=_ANSWER,
        description="Ask a worker model; returns data matching the schema passed.",
    ),
    "parallel": HostWordSpec(
        "parallel",
        (Param("thunks", "thunks"),),
        description="Call each thunk (in parallel in the runtime); returns their results.",
    ),
    "phase": HostWordSpec("phase", (Param("name", "str"),), description="Name the next phase."),
    "log": HostWordSpec("log", (Param("message", "str"),), description="Log one line."),
}
