"""Calls of host words with arguments that match each parameter's schema.

Arguments with a plain schema (a string, a list of integers, an object of known fields) are
written as typed expressions, so the plan computes them; schemas with constraints the type model
does not know (enums, bounds, patterns) get a literal drawn from the schema, so a well-behaved
host word never sees an argument its spec forbids. ``schema`` parameters get one of the
spec's schemas, and the call's result is typed by it; ``thunks`` parameters get lambdas that call
another host word, the way plans use ``parallel``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from planlang.strategies.spec import ANY, NONE, HostWordSpec, Param, Type, type_of_schema

if TYPE_CHECKING:
    from planlang.strategies.expressions import InScope

__all__ = ["HostCalls", "is_plain_schema"]

_PLAIN_KEYS = frozenset({"type", "items", "properties", "required", "additionalProperties",
                         "description", "title"})  # fmt: skip


def is_plain_schema(schema: Mapping[str, Any]) -> bool:
    """True when a value of the schema's type always matches it (no constraints beyond types)."""
    if set(schema) - _PLAIN_KEYS or not schema:
        return False
    if schema.get("type") == "object":
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        if props and (extra is None or extra is True or extra is False):
            required = set(schema.get("required", ()))
            return set(props) == required and all(is_plain_schema(p) for p in props.values())
        return not props and isinstance(extra, Mapping) and is_plain_schema(extra)
    if schema.get("type") == "array":
        return isinstance(schema.get("items"), Mapping) and is_plain_schema(schema["items"])
    return schema.get("type") in ("string", "integer", "number", "boolean", "null")


class HostCalls:
    """Mixin of ``PlanWriter``: writes ``word(...)`` and says what type it returns."""

    words: dict[str, HostWordSpec]
    schema_constants: dict[str, str]  # source of the schema literal -> its constant's name

    def _schema_constant(self, schema: Mapping[str, Any]) -> str:
        """Schemas are bound once at the top of the plan, the way plans name them."""
        code = repr(_plain_data(schema))
        if code not in self.schema_constants:
            self.schema_constants[code] = f"SCHEMA_{len(self.schema_constants) + 1}"
        return self.schema_constants[code]

    def constant_lines(self) -> list[list[str]]:
        return [[f"{name} = {code}"] for code, name in self.schema_constants.items()]

    def host_call(self, scope: InScope, spec: HostWordSpec, depth: int) -> tuple[str, Type]:
        args: list[str] = []
        result = type_of_schema(spec.returns) if spec.returns is not None else NONE
        for param in spec.params:
            if not param.required and self.chance(2):  # type: ignore[attr-defined]
                continue
            code, kind = self._argument(scope, spec, param, depth)
            if param.kind in ("schema", "thunks"):
                result = kind
            args.append(f"{param.name}={code}" if param.keyword else code)
        return f"{spec.name}({', '.join(args)})", result

    def _argument(
        self, scope: InScope, spec: HostWordSpec, param: Param, depth: int
    ) -> tuple[str, Type]:
        if param.kind == "schema":
            choices = list(param.choices) or ([spec.returns] if spec.returns else [{}])
            schema = self.pick(choices)  # type: ignore[attr-defined]
            return self._schema_constant(schema), type_of_schema(schema)
        if param.kind == "thunks":
            return self._thunks(scope, spec, depth)
        schema = param.schema
        if is_plain_schema(schema):
            return self.expr(scope, type_of_schema(schema), depth), ANY  # type: ignore[attr-defined]
        return self.constrained_literal(schema), ANY  # type: ignore[attr-defined]

    def _thunks(self, scope: InScope, spec: HostWordSpec, depth: int) -> tuple[str, Type]:
        """``[lambda e=e: word(...) for e in xs]``: each thunk calls a result-giving word."""
        callees = [
            w for name, w in sorted(self.words.items())
            if name != spec.name and w.thunks_param() is None
            and (w.returns is not None or w.schema_param() is not None)
        ]  # fmt: skip
        if not callees:
            return "[]", ("list", ANY)
        callee = self.pick(callees)  # type: ignore[attr-defined]
        source, item = self.iterable(scope, 0)  # type: ignore[attr-defined]
        var = self.fresh("e")  # type: ignore[attr-defined]
        inner = scope.child()
        inner.bind(var, item, owned=False)
        if self.chance(3):  # type: ignore[attr-defined]
            call, kind = self.host_call(scope, callee, 0)
            return f"[lambda: {call}]", ("list", kind)
        call, kind = self.host_call(inner, callee, 0)
        return f"[lambda {var}={var}: {call} for {var} in {source}]", ("list", kind)


def _plain_data(value: Any) -> Any:
    """A schema as plain dicts and lists, so its repr is a Python literal."""
    if isinstance(value, Mapping):
        return {k: _plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_data(v) for v in value]
    return value
