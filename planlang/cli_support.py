"""What every ``planlang`` command shares: exit codes, the usage error, reading a plan file.

A leaf of the CLI: ``planlang.cli`` (the click group) and ``planlang.commands`` (the bodies of the
commands past ``check``) both import it, and it imports nothing of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from planlang.check import MAX_SOURCE_BYTES

__all__ = [
    "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "PlanFile", "PlanFileError",
    "read_plan",
]  # fmt: skip

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class PlanFileError(click.ClickException):
    """A plan file could not be read; exit code 2."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class PlanFile:
    path: str
    source: str


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
        data = p.read_bytes()
    except OSError as error:
        raise PlanFileError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PlanFileError(
            f"{path}: not UTF-8 text (byte {error.start} is {data[error.start]:#04x})"
        ) from None
    return PlanFile(path, source.removeprefix("\ufeff"))
