"""The ``planlang`` command: a thin click group over the library.

Exit codes, the same for every subcommand: 0 the plan passed (checked, priced, approved, ran);
1 a plan was refused, held or failed; 2 a usage or I/O error (bad option, missing file, a file
that is not UTF-8 or is too large). User mistakes get one clear line, never a traceback.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from planlang.check import check
from planlang.cli_support import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, PlanFileError, read_plan
from planlang.errors import Problem


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


config_option = click.option(
    "--config", "config", default=None, help="The project file (default: ./planlang.toml)."
)
output_option = click.option(
    "-o", "--output", default=None, help="Write the HTML page here (default: standard output)."
)

# -- the commands past check: each imports its body (and with it the runtime) when it runs ----


@cli.command("price")
@click.argument("path")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(1, 100),
              help="How many rehearsals, each with its own seed.")  # fmt: skip
@click.option("--latency", default=2.0, show_default=True, type=click.FloatRange(0),
              help="Seconds one model call takes, for the wall-time estimate.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "as_html", is_flag=True, help="Write the report as an HTML page.")
@output_option
@config_option
def price_command(path: str, seeds: int, latency: float, as_json: bool, as_html: bool,
                  output: str | None, config: str | None) -> None:  # fmt: skip
    """Rehearse a plan against the free stand-in model and print its price."""
    from planlang import commands

    commands.price_command(path, seeds, latency, as_json, as_html, output, config)


@cli.command("approve")
@click.argument("plan_id", type=int)
@click.option("--by", default="a person", help="Who approves (kept with the approval).")
@config_option
def approve_command(plan_id: int, by: str, config: str | None) -> None:
    """Approve a held plan by its ID."""
    from planlang import commands

    commands.approve_command(plan_id, by, config)


@cli.command("held")
@config_option
def held_command(config: str | None) -> None:
    """List plans the gate holds for a person."""
    from planlang import commands

    commands.held_command(config)


@cli.command("run")
@click.argument("path")
@click.option("--replay", is_flag=True, help="Answer only from the ledger; a miss ends the run.")
@click.option("--budget", type=click.FloatRange(0), default=None, help="Credit cap for this run.")
@config_option
def run_command(path: str, replay: bool, budget: float | None, config: str | None) -> None:
    """Run an approved plan (submitting it to the gate first if it is new)."""
    from planlang import commands

    commands.run_command(path, replay, budget, config)


@cli.command("runs")
@config_option
def runs_command(config: str | None) -> None:
    """List past runs, newest last."""
    from planlang import commands

    commands.runs_command(config)


@cli.command("show")
@click.argument("run_id")
@click.option("--html", "as_html", is_flag=True, help="Draw the run as an HTML page instead.")
@output_option
@config_option
def show_command(run_id: str, as_html: bool, output: str | None, config: str | None) -> None:
    """Print a run's phases, workers and costs."""
    from planlang import commands

    commands.show_command(run_id, as_html, output, config)


@cli.command("report")
@click.argument("run")
@output_option
@config_option
def report_command(run: str, output: str | None, config: str | None) -> None:
    """Draw a run as one self-contained HTML page: timeline, budget, phases, costs, failures."""
    from planlang import cli_report

    cli_report.report_command(run, output, config)


@cli.group("ledger")
def ledger_group() -> None:
    """Work with answer ledgers (SQLite files or postgresql:// servers)."""


@ledger_group.command("copy")
@click.argument("source")
@click.argument("destination")
def ledger_copy_command(source: str, destination: str) -> None:
    """Copy every answer from SOURCE to DESTINATION (file paths or postgresql:// addresses)."""
    from planlang import cli_ledger

    cli_ledger.copy_command(source, destination)


@cli.group("mcp")
def mcp_group() -> None:
    """planlang and the Model Context Protocol (docs/MCP.md)."""


@mcp_group.command("serve")
@config_option
def mcp_serve_command(config: str | None) -> None:
    """Serve check, price, submit and run of plans to an MCP client over stdio."""
    from planlang.mcp.serve_command import serve_command

    serve_command(config)


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
