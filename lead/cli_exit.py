"""Run a click command the way this project's commands end: an exit code, one line per mistake.

Click's standalone mode prints a usage block and a "Try --help" line before the error; our
commands promise one sentence on stderr and a documented exit code (2 for usage), never a
traceback. ``python -m lead`` and ``python -m bench`` both end through ``run_command``.
"""

from __future__ import annotations

import click

USAGE = 2

__all__ = ["CommandError", "run_command"]


class CommandError(click.ClickException):
    """A mistake the command reports in one line: ``error:`` and exit 2 unless a subclass says
    otherwise (``refused:`` and exit 1 for valid input the command cannot accept)."""

    exit_code = USAGE
    prefix = "error"

    def show(self, file: object = None) -> None:
        click.echo(f"{self.prefix}: {self.format_message()}", err=True)


def run_command(command: click.Command, argv: list[str] | None, prog: str) -> int:
    """Run ``command`` on ``argv`` (None: ``sys.argv``) and return its exit code."""
    try:
        result = command.main(args=argv, prog_name=prog, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(f"error: {_where(error)}a command is required; see {prog} --help.", err=True)
        return USAGE
    except CommandError as error:
        error.show()
        return error.exit_code
    except click.MissingParameter as error:
        if isinstance(error.param, click.Argument):  # its name, not the upper-case metavar
            error.param_hint = f"'{error.param.name}'"
        click.echo(f"error: {_where(error)}{error.format_message()}", err=True)
        return USAGE
    except click.UsageError as error:
        click.echo(f"error: {_where(error)}{error.format_message()}", err=True)
        return USAGE
    except click.ClickException as error:  # a bad file argument and the like
        click.echo(f"error: {error.format_message()}", err=True)
        return error.exit_code
    except click.exceptions.Exit as done:  # --help
        return int(done.exit_code or 0)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    return int(result or 0)


def _where(error: click.UsageError) -> str:
    return f"{error.ctx.command_path}: " if error.ctx is not None else ""
