"""docs/CLI.md's table of commands names every command ``planlang --help`` lists, with every
option it takes (``--config`` and ``--help`` are said once for all), and the ``--config`` help
says where the project is found."""

import re
from pathlib import Path

import click
import pytest

from planlang.cli import cli

DOC = (Path(__file__).parents[2] / "docs" / "CLI.md").read_text()
TABLE = DOC.split("| command | what it does |")[1].split("\n\n")[0]


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found.extend(_commands(command, f"{prefix}{name} "))
        else:
            found.append((f"{prefix}{name}", command))
    return found


COMMANDS = _commands(cli)


def _rows(name: str) -> list[str]:
    """The table's rows that show ``name`` as a command (in backticks, at a cell's start)."""
    return [row for row in TABLE.splitlines() if re.search(rf"`{re.escape(name)}( |`)", row)]


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_command_is_in_the_table_with_its_options(name, command):
    (row,) = _rows(name)
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in ("config", "help"):
            assert any(opt in row for opt in param.opts), f"{name}: {param.opts} not in the doc"


def test_the_config_help_says_the_project_is_found_above():
    price = dict(COMMANDS)["price"]
    (config,) = [p for p in price.params if p.name == "config"]
    assert "nearest above" in (config.help or "")
    assert "nearest above the plan's folder" in DOC
