"""Config mistakes as one line each: the file, the key, and why (``planlang.toml``).

A user who mistypes a key or gives a value of the wrong kind must read what to change, not a
traceback or a validator's internals. Every check here raises ``ProjectError`` with a message
of the form ``planlang.toml: [plan] options.shard_tokens: why``; the CLI prints it and exits 2.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

__all__ = ["ProjectError", "check_keys", "options_for", "provider_failed", "validation_line"]


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
        why = "unknown key" if problem["type"] == "extra_forbidden" else problem["msg"]
        if problem["type"] != "extra_forbidden" and "input" in problem:
            why += f" (got {problem['input']!r})"
        parts.append(f"[{table}] {key}: {why}")
    return f"{file}: " + "; ".join(parts)


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
