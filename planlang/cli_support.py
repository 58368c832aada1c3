"""What every ``planlang`` command shares: exit codes, the usage error, reading a plan file.

A leaf of the CLI: ``planlang.cli`` (the click group) and ``planlang.commands`` (the bodies of the
commands past ``check``) both import it, and it imports nothing of theirs.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click

from planlang.check import MAX_SOURCE_BYTES

__all__ = [
    "CONFIG_NAME", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_REFUSED", "EXIT_TERMINATED", "EXIT_USAGE",
    "FiniteFloat", "PlanFile", "PlanFileError", "find_config", "json_error", "json_error_text",
    "json_errors", "project_for", "read_plan", "read_stdin",
]  # fmt: skip

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


class PlanFileError(click.ClickException):
    """A plan file could not be read; exit code 2."""

    exit_code = EXIT_USAGE


def json_error_text(message: str) -> str:
    """An error as a ``--json`` command prints it: ``{"ok": false, "error": message,
    "problems": []}`` (docs/CLI.md, JSON shapes)."""
    return json.dumps({"ok": False, "error": message, "problems": []})


def json_error(message: str, exit_code: int) -> NoReturn:
    """Print an error as a ``--json`` command does, on stdout, and exit with ``exit_code``."""
    click.echo(json_error_text(message))
    sys.exit(exit_code)


@contextmanager
def json_errors(as_json: bool) -> Iterator[None]:
    """With ``--json``, a usage, configuration or I/O error of the body (a ``ClickException``,
    exit 2) is printed as JSON (``json_error``) with the same exit code; without, as it was."""
    try:
        yield
    except click.ClickException as error:
        if not as_json:
            raise
        json_error(error.format_message(), error.exit_code)


class FiniteFloat(click.FloatRange):
    """A number of at least ``min`` that is finite: ``nan`` passes every range check and ``inf``
    every lower bound, and either would reach the budget (a traceback: it counts in integer
    units) or the price report (``NaN`` and ``Infinity`` are not JSON)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


@dataclass(frozen=True)
class PlanFile:
    path: str
    source: str


CONFIG_NAME = "planlang.toml"


def project_for(config: str | None, plan: str | None = None) -> Any:
    """The ``planlang.project.Project`` of ``--config``, else of the ``planlang.toml`` nearest
    above the plan's folder (or the current folder), as ruff and pytest find theirs; a
    mistake in it is a usage error (exit 2). Loaded here only when a command needs it: the
    project module brings the runtime."""
    from planlang.project import ProjectError, load_project

    if config is None:
        found = find_config(Path(plan).resolve().parent if plan else Path.cwd())
        config = None if found is None else str(found)
    try:
        return load_project(config)
    except ProjectError as error:
        raise PlanFileError(str(error)) from None


def find_config(start: Path) -> Path | None:
    """``planlang.toml`` in ``start`` or the nearest folder above it, as ruff and pytest look."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def read_plan(path: str) -> PlanFile:
    """Read one plan file or raise PlanFileError with a one-line reason."""
    p = Path(path)
    if not p.exists():
        raise PlanFileError(f"{path}: no such file")
    if p.is_dir():
        raise PlanFileError(f"{path}: is a directory, not a plan file")
    try:
        size = p.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise PlanFileError(f"{path}: the file is {size:,} bytes, over the 1 MB limit")
        with p.open("rb") as file:  # at most the limit and one: a device (/dev/zero) or a
            data = file.read(MAX_SOURCE_BYTES + 1)  # pipe has no size to stat
    except OSError as error:
        raise PlanFileError(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise PlanFileError(f"{path}: over {MAX_SOURCE_BYTES:,} bytes, the 1 MB limit")
    return _decoded(path, data)


def read_stdin(name: str) -> PlanFile:
    """The plan piped to ``planlang check -``, read and refused as a file is: its bytes, so
    text that is not UTF-8 is said so (the interpreter's text stream would have made it
    surrogates, and the checker a PL001 about them), and at most the size of a file."""
    stream = sys.stdin
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text stream handed in by an embedder or a test: text already
        return PlanFile(name, stream.read())
    data = buffer.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise PlanFileError(f"{name}: over {MAX_SOURCE_BYTES:,} bytes, the 1 MB limit")
    return _decoded(name, data)


def _decoded(path: str, data: bytes) -> PlanFile:
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PlanFileError(
            f"{path}: not UTF-8 text (byte {error.start} is {data[error.start]:#04x})"
        ) from None
    return PlanFile(path, source.removeprefix("\ufeff"))
