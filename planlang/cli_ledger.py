"""``planlang ledger copy SRC DST``, and opening a project's shared stores for the commands.

A team seeds its shared PostgreSQL ledger from a local SQLite one, or takes a replayable
copy home: rows go across exactly as they are (same fingerprints, same replies), the first
answer for a key winning, so copying twice, or into a ledger that already holds some of
them, changes nothing that was there. The click command is in ``planlang.cli``; its body is
here, imported when it runs.
"""

from __future__ import annotations

import sqlite3
import sys
import zlib
from pathlib import Path
from typing import Any

import click

from planlang.cli_support import EXIT_OK, PlanFileError
from planlang.project import Project
from runtime import Budget, Ledger, Reply
from runtime.stores import StoreUnavailable, backend


def open_ledger(location: str) -> Ledger:
    """The ledger at ``location``; a bad or unreachable location, a file that is not a
    ledger, or a folder that does not exist is one line, exit 2."""
    try:
        return Ledger(location)
    except (ValueError, StoreUnavailable, ImportError) as error:
        raise PlanFileError(f"ledger {location}: {error}") from None
    except sqlite3.OperationalError as error:
        if "locked" in str(error) or "busy" in str(error):  # past the busy timeout
            raise PlanFileError(f"ledger {location}: cannot open: {error}") from None
        raise PlanFileError(f"ledger {location}: not an answer ledger ({error})") from None
    except sqlite3.DatabaseError as error:
        raise PlanFileError(f"ledger {location}: not an answer ledger ({error})") from None
    except OSError as error:
        raise PlanFileError(f"ledger {location}: cannot open: {error.strerror or error}") from None


def open_shared_budget(project: Project, cap: float | None) -> Budget:
    """The project's budget shared on the server (``[state] budget``).

    ``cap`` (``--budget`` or the settings' ``cap``), when given, sets the team's cap;
    otherwise the stored cap holds.
    """
    from runtime.shared_budget import SharedBudget

    assert project.budget is not None
    capped: dict[str, Any] = {} if cap is None else {"cap": cap}
    try:
        return SharedBudget(project.ledger, project.budget, **capped)
    except StoreUnavailable as error:
        raise PlanFileError(f"budget {project.budget!r}: {error}") from None


def copy_command(source: str, destination: str) -> None:
    """Copy every answer from ``source`` to ``destination``; say how many, on stderr."""
    try:
        local = backend(source) == "sqlite"
    except ValueError as error:
        raise PlanFileError(f"ledger {source}: {error}") from None
    if local and not Path(source).is_file():  # opening it would make an empty ledger there
        raise PlanFileError(f"ledger {source}: no such file")
    src = open_ledger(source)
    dst = open_ledger(destination)
    copied = kept = 0
    try:
        for row in src.rows():
            if dst.put(row["key"], Reply.from_json(row["reply"])):
                copied += 1
            else:
                kept += 1
    except (StoreUnavailable, zlib.error, ValueError) as error:
        raise PlanFileError(f"ledger copy stopped after {copied} answers: {error}") from None
    finally:
        src.close()
        dst.close()
    click.echo(f"Copied {copied} answers from {src.path} to {dst.path}; "
               f"{kept} were there already.", err=True)  # fmt: skip
    sys.exit(EXIT_OK)
