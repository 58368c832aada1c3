"""Fake host words: callables that answer every call with data valid for the word's schema.

They let a generated plan run end to end without a model. Every call is checked against the
word's parameter schemas first, so a plan generator that passes a badly typed argument is
caught (the call raises ``HostWordMisuse``), and every call is recorded with a deep copy of what
was returned, so a test can show that nothing the plan did changed data the host handed out.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema

from planlang.standin import UnsatisfiableSchema, value_for
from planlang.strategies.spec import HostWordSpec, Param, normalize_host_words

__all__ = ["FakeHost", "HostCall", "HostWordMisuse", "fake_host", "schema_value"]


class HostWordMisuse(TypeError):
    """A plan called a fake host word with arguments its spec does not allow."""


def schema_value(schema: Mapping[str, Any] | None, rng: random.Random) -> Any:
    """A small value valid for ``schema``, made by the stand-in model (``None`` for ``None``)."""
    if schema is None:
        return None
    try:
        return value_for(_plain(schema), rng, max_extra_items=3)
    except UnsatisfiableSchema as error:
        raise ValueError(f"No value satisfies the schema {dict(schema)!r}: {error}") from None


@dataclass
class HostCall:
    """One call of a fake host word: its arguments and (a deep copy of) what it returned."""

    word: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    returned: Any = None
    live: Any = field(default=None, repr=False, compare=False)  # the object handed out


@dataclass
class FakeHost(Mapping[str, Callable[..., Any]]):
    """Host words answering with valid data; a mapping name -> callable for ``Sandbox(host=)``."""

    specs: dict[str, HostWordSpec]
    seed: int = 0
    calls: list[HostCall] = field(default_factory=list)
    _words: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._words = {name: self._make(spec) for name, spec in self.specs.items()}

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._words[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._words)

    def __len__(self) -> int:
        return len(self._words)

    def returned_unchanged(self) -> bool:
        """True when every value handed to the plan still equals its recorded copy."""
        return all(call.returned == call.live for call in self.calls)

    def _make(self, spec: HostWordSpec) -> Callable[..., Any]:
        def word(*args: Any, **kwargs: Any) -> Any:
            bound = _bind(spec, args, kwargs)
            value = self._answer(spec, bound)
            self.calls.append(HostCall(spec.name, args, kwargs, copy.deepcopy(value), value))
            return value

        word.__name__ = spec.name
        return word

    def _answer(self, spec: HostWordSpec, bound: dict[str, Any]) -> Any:
        thunks = spec.thunks_param()
        if thunks is not None:
            return [thunk() for thunk in bound[thunks.name]]
        schema_param = spec.schema_param()
        schema = spec.returns
        if schema_param is not None and bound.get(schema_param.name) is not None:
            schema = bound[schema_param.name]
        return schema_value(schema, self._rng) if schema is not None else None


def _bind(spec: HostWordSpec, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Match a call to the spec's parameters; raise ``HostWordMisuse`` when it does not fit."""
    positional = [p for p in spec.params if not p.keyword]
    if len(args) > len(positional):
        raise HostWordMisuse(f"{spec.name}() takes {len(positional)} positional arguments, "
                             f"not {len(args)}.")  # fmt: skip
    bound = {p.name: a for p, a in zip(positional, args, strict=False)}
    for name, value in kwargs.items():
        if name in bound or name not in {p.name for p in spec.params}:
            raise HostWordMisuse(f"{spec.name}() got an unexpected argument {name!r}.")
        bound[name] = value
    for param in spec.params:
        if param.name not in bound:
            if param.required:
                raise HostWordMisuse(f"{spec.name}() is missing the argument {param.name!r}.")
            continue
        _check_argument(spec, param, bound[param.name])
    return bound


def _check_argument(spec: HostWordSpec, param: Param, value: Any) -> None:
    where = f"{spec.name}({param.name}=...)"
    if param.kind == "thunks":
        if not isinstance(value, list | tuple) or not all(callable(t) for t in value):
            raise HostWordMisuse(f"{where} takes a list of callables, not {value!r}.")
        return
    if param.kind == "schema":
        if not isinstance(value, Mapping):
            raise HostWordMisuse(f"{where} takes a JSON schema dict, not {value!r}.")
        try:
            _validator(json.dumps(_plain(value), sort_keys=True))
        except (jsonschema.SchemaError, TypeError, ValueError) as bad:
            raise HostWordMisuse(f"{where} got a schema that is not valid: {bad}") from None
        return
    validator = _validator(json.dumps(_plain(param.schema), sort_keys=True))
    error = jsonschema.exceptions.best_match(validator.iter_errors(_plain(value)))
    if error is not None:
        raise HostWordMisuse(f"{where} got {value!r}, which does not match: {error.message}")


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    """A validator per parameter schema, built once (checking a schema is slow)."""
    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def _plain(value: Any) -> Any:
    """Tuples as lists, so jsonschema sees JSON arrays."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def fake_host(
    host_words: Mapping[str, HostWordSpec | Mapping[str, Any]] | Sequence[HostWordSpec],
    seed: int = 0,
) -> FakeHost:
    """Host callables for ``host_words`` that answer each schema with valid, seeded data."""
    return FakeHost(normalize_host_words(host_words), seed)
