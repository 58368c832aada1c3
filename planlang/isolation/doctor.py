"""``planlang doctor``: which layers confine a plan on this machine, said out loud.

Starts one plan process (as every run would) and prints each layer it reports, active or
missing with the reason, and the isolation runs get here (``[planlang] isolation`` or
``PLANLANG_ISOLATION``; the project is ``--config``, else the ``planlang.toml`` nearest above
the current folder, as every other command finds it). Exit code 0 when every layer is active,
1 when one is missing, so a deployment check can insist on them; under ``inprocess``
isolation none is active (a plan runs in the caller's process), and the exit code is 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from planlang.cli_support import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, find_config, json_error
from planlang.isolation import layers, resolve_mode
from planlang.project import ProjectError, load_project

__all__ = ["doctor"]


def doctor(as_json: bool, config: str | None = None) -> None:
    """Report the confinement layers a plan's process gets here (the ``planlang doctor``
    command's body), under the isolation of the project of ``config`` (else the
    ``planlang.toml`` nearest above the current folder)."""
    try:
        found_config = config if config is not None else find_config(Path.cwd())
        mode = resolve_mode(load_project(found_config).settings.isolation)
    except (ProjectError, ValueError) as error:
        if as_json:
            json_error(str(error), EXIT_USAGE)
        click.echo(f"planlang doctor: {error}", err=True)
        sys.exit(EXIT_USAGE)
    found = layers()
    if mode == "inprocess":  # plans run in the caller's process: no layer here holds them
        found = [{**layer, "active": False,
                  "detail": f"unused: isolation is inprocess ({layer['detail']})"}
                 for layer in found]  # fmt: skip
    missing = [layer for layer in found if not layer["active"]]
    if as_json:
        click.echo(json.dumps({"isolation": mode, "layers": found}, indent=2))
    else:
        click.echo(f"isolation: {mode}")
        for layer in found:
            mark = "active " if layer["active"] else "MISSING"
            click.echo(f"  {mark}  {layer['name']}: {layer['detail']}")
        if mode == "inprocess":
            click.echo("Isolation is inprocess: plans run in this process, held by the "
                       "language check and run-time guards only.", err=True)  # fmt: skip
        elif missing:
            names = ", ".join(layer["name"] for layer in missing)
            click.echo(f"Missing on this machine: {names}.", err=True)
    sys.exit(EXIT_REFUSED if missing else EXIT_OK)
