"""Config mistakes as one line each: the file, the key, and why (``planlang.toml``).

A user who mistypes a key or gives a value of the wrong kind must read what to change, not a
traceback or a validator's internals. Every check here raises ``ProjectError`` with a message
of the form ``planlang.toml: [plan] options.shard_tokens: why``; the CLI prints it and exits 2.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, ValidationError
from pydantic.fields import FieldInfo

__all__ = [
    "ProjectError", "check_keys", "options_for", "provider_failed", "settings_line",
    "validation_line",
]  # fmt: skip


class ProjectError(ValueError):
    """The configuration cannot be used; the message says which file, which key and why."""


def check_keys(file: Path, table: str, given: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Refuse keys a table does not have (a typo is never accepted silently)."""
    known = sorted(allowed)
    for key in given:
        if key not in known:
            raise ProjectError(f"{file}: [{table}] {key}: unknown key; expected one of "
                               f"{', '.join(known)}")  # fmt: skip


def validation_line(file: Path, table: str, error: ValidationError) -> str:
    """A pydantic error as one line per problem, joined: ``[gate] max_median: why``."""
    parts = []
    for problem in error.errors():
        key = ".".join(str(p) for p in problem["loc"]) or "(table)"
        parts.append(f"[{table}] {key}: {_why(problem)}")
    return f"{file}: " + "; ".join(parts)


def _why(problem: Any) -> str:
    if problem["type"] == "extra_forbidden":
        return "unknown key"
    why = str(problem["msg"]).removeprefix("Value error, ")
    if "input" in problem and repr(problem["input"]) not in why:  # a validator may say it
        why += f" (got {problem['input']!r})"
    return why


def settings_line(file: Path | None, fields: Mapping[str, FieldInfo], error: Exception) -> str:
    """A refused run setting, named where its value came from: the environment variable that
    set it (the environment wins over the file; ``LLM_BASE_URL`` is one), else the file's
    ``[planlang]`` key. A mistake in ``LLM_BASE_URL`` is not one to look for in the file."""
    if not isinstance(error, ValidationError):  # pydantic-settings: a variable that is not JSON
        found = re.search(r'field "(\w+)" from source "EnvSettingsSource"', str(error))
        if found is None:
            return f"{file or 'the settings'}: [planlang] {error}"
        cause = f": {error.__cause__}" if error.__cause__ else ""
        return f"environment variable {_variable(found[1], fields)}: not valid JSON{cause}"
    parts, in_file = [], []
    for problem in error.errors():
        loc = [str(p) for p in problem["loc"]]
        name = _field(loc[0], fields) if loc else ""
        variable = _variable(name, fields) if name in fields else None
        if variable is not None and variable.upper() in {k.upper() for k in os.environ}:
            inner = "".join(f"{part}." for part in loc[1:]).rstrip(".")  # roles.scan.price
            parts.append(f"environment variable {variable}: {inner + ': ' if inner else ''}"
                         f"{_why(problem)}")  # fmt: skip
        else:
            in_file.append(f"[planlang] {'.'.join([name, *loc[1:]])}: {_why(problem)}")
    if in_file:
        parts.append(f"{file or 'the settings'}: " + "; ".join(in_file))
    return "; ".join(parts)


def _field(key: str, fields: Mapping[str, FieldInfo]) -> str:
    """The field a problem's location names (pydantic names it by its first alias)."""
    for name, info in fields.items():
        if key == name or key in _aliases(info):
            return name
    return key


def _aliases(info: FieldInfo) -> list[str]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return [c for c in alias.choices if isinstance(c, str)]
    return [alias] if isinstance(alias, str) else []


def _variable(name: str, fields: Mapping[str, FieldInfo]) -> str:
    """The environment variable that set field ``name``: the first of its names that is set
    (``PLANLANG_BASE_URL`` before ``LLM_BASE_URL``, as pydantic-settings reads them)."""
    names = [a for a in _aliases(fields[name]) if a.isupper()] or [f"PLANLANG_{name.upper()}"]
    present = {k.upper(): k for k in os.environ}
    return next((present[n] for n in names if n in present), names[0])


def options_for(
    file: Path, spec: str, provider: Callable[..., Any], options: Mapping[str, Any]
) -> tuple[dict[str, Any], set[str]]:
    """The options ``provider(run, **options)`` takes, and the names it could take at all.

    A provider with ``**options`` takes every option; one with named keywords only those, and
    a keyword it requires but the project does not give is a mistake of the project.
    """
    try:
        parameters = list(inspect.signature(provider).parameters.values())[1:]  # after run
    except (TypeError, ValueError):
        return dict(options), set(options)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(options), set(options)
    names = {p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    for p in parameters:
        if p.default is inspect.Parameter.empty and p.kind in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ) and p.name not in options:  # fmt: skip
            raise ProjectError(f"{file}: [plan] options.{p.name}: missing; the host provider "
                               f"{spec!r} needs it")  # fmt: skip
    return {k: v for k, v in options.items() if k in names}, names


def provider_failed(file: Path, spec: str, options: Mapping[str, Any], error: Exception) -> str:
    """A provider that refused its options, naming the option its message is about."""
    message = str(error) or type(error).__name__
    named = [k for k, v in options.items() if k in message or (str(v) and str(v) in message)]
    key = f"options.{named[0]}" if len(named) == 1 else "options"
    return f"{file}: [plan] {key}: {message} (from the host provider {spec!r})"
