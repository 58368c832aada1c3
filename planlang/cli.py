"""The ``planlang`` command: a thin click group over the library.

Exit codes, the same for every subcommand: 0 the plan passed (checked, priced, approved, ran);
1 a plan was refused, held or failed; 2 a usage or I/O error (bad option, missing file, a file
that is not UTF-8 or is too large). User mistakes get one clear line, never a traceback.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from planlang.check import MAX_SOURCE_BYTES, Problem, check

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="planlang")
def cli() -> None:
    """Check, price, approve and run plans written in the plan language."""


@cli.command("check")
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def check_command(paths: tuple[str, ...], as_json: bool) -> None:
    """Check plan files; print one line per problem, like ruff: path:line:col: CODE message."""
    problems: list[Problem] = []
    errors: list[str] = []
    checked = 0
    for path in paths:
        try:
            plan = read_plan(path)
        except PlanFileError as error:
            errors.append(error.message)
            continue
        checked += 1
        problems.extend(check(plan.source, filename=path).problems)
    if as_json:
        report: dict[str, Any] = {
            "ok": not problems and not errors,
            "checked": checked,
            "problems": [p.as_dict() for p in problems],
            "errors": errors,
        }
        click.echo(json.dumps(report, indent=2))
    else:
        for problem in problems:
            click.echo(problem.render())
        for message in errors:
            click.echo(f"error: {message}", err=True)
        if problems:
            n = len(problems)
            click.echo(f"Found {n} problem{'s' if n != 1 else ''}.", err=True)
        elif not errors:
            click.echo(
                f"All {checked} plan{'s' if checked != 1 else ''} passed the check.", err=True
            )
    sys.exit(EXIT_USAGE if errors else EXIT_REFUSED if problems else EXIT_OK)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the group, turning every user mistake into exit code 2."""
    try:
        cli.main(args=argv, prog_name="planlang", standalone_mode=False)
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except SystemExit as done:
        return int(done.code or 0) if isinstance(done.code, int | None) else EXIT_USAGE
    return EXIT_OK


# The commands past ``check`` live in their own module; importing it registers them.
from planlang import cli_run as _cli_run  # noqa: E402,F401
from planlang.isolation import doctor as _doctor  # noqa: E402,F401
