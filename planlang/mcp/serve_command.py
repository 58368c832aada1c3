"""The body of ``planlang mcp serve`` (the CLI group only names it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from planlang.cli_support import find_config
from planlang.project import ProjectError, load_project

__all__ = ["serve_command"]


class _Usage(click.ClickException):
    exit_code = 2


def serve_command(config: str | None) -> None:
    """Load the project (``config``, else the ``planlang.toml`` nearest above the current
    folder, as every other command finds it) and serve it over stdio; a missing SDK or a bad
    project is exit 2."""
    if importlib.util.find_spec("mcp") is None:
        raise _Usage("planlang mcp serve needs the MCP SDK: pip install -e '.[mcp]'")
    try:
        project = load_project(config if config is not None else find_config(Path.cwd()))
        from planlang.mcp.server import PlanService, build_server

        service = PlanService(project)
    except ProjectError as error:
        raise _Usage(str(error)) from None
    build_server(service).run()
