"""The ``planlang`` command: a thin click group over the library.

Exit codes, the same for every subcommand: 0 the plan passed (checked, priced, approved, ran);
1 a plan was refused, held or failed; 2 a usage or I/O error (bad option, missing file, a file
that is not UTF-8 or is too large). User mistakes get one clear line, never a traceback.
"""

from __future__ import annotations

import io
import sys

import click

from planlang.cli_support import EXIT_OK, EXIT_USAGE, FiniteFloat, json_error_text, json_errors


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="planlang")
def cli() -> None:
    """Check, price, approve and run plans written in the plan language."""


@cli.command("check")
@click.argument("paths", nargs=-1, required=True)
@click.option("--output-format", type=click.Choice(["text", "json", "github"]), default="text",
              show_default=True, help="text: path:line:col: CODE message; json; github: "
              "annotations for GitHub Actions.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Same as --output-format json.")
@click.option("--stdin-filename", default=None, help="The name of the plan read from '-'.")
@click.option("--config", "config", default=None, type=click.Path(exists=True, dir_okay=False),
              help="The project whose host words the plans may use (default: the "
              "planlang.toml nearest above each plan's folder).")  # fmt: skip
def check_command(paths: tuple[str, ...], output_format: str, as_json: bool,
                  stdin_filename: str | None, config: str | None) -> None:  # fmt: skip
    """Check plan files, folders (their *.py) or '-' (stdin); one line per problem, like ruff."""
    from planlang.check_command import check_paths

    sys.exit(check_paths(paths, "json" if as_json else output_format, stdin_filename, config))


config_option = click.option(
    "--config",
    "config",
    default=None,
    help="The project file (default: the planlang.toml "
    "nearest above the plan's folder, or above the current folder for a command without a plan).",
)
output_option = click.option(
    "-o", "--output", default=None, help="Write the HTML page here (default: standard output)."
)


def _one_output(as_json: bool, as_html: bool, output: str | None) -> None:
    """Refuse what one of the two would silently drop: -o without the page it writes (the
    table went to the terminal, no file was written), or --json with --html."""
    if as_json and as_html:
        raise click.UsageError("--json and --html: choose one.")
    if output is not None and not as_html:
        raise click.UsageError(f"-o {output}: -o writes the HTML page; add --html.")


# -- the commands past check: each imports its body (and with it the runtime) when it runs ----


@cli.command("price")
@click.argument("path")
@click.option("--seeds", default=5, show_default=True, type=click.IntRange(1, 100),
              help="How many rehearsals, each with its own seed.")  # fmt: skip
@click.option("--latency", default=2.0, show_default=True, type=FiniteFloat(0, 86400),
              help="Seconds one model call takes, for the wall-time estimate.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "as_html", is_flag=True, help="Write the report as an HTML page.")
@output_option
@config_option
def price_command(path: str, seeds: int, latency: float, as_json: bool, as_html: bool,
                  output: str | None, config: str | None) -> None:  # fmt: skip
    """Rehearse a plan against the free stand-in model and print its price."""
    from planlang import commands

    _one_output(as_json, as_html, output)
    commands.price_command(path, seeds, latency, as_json, config, as_html, output)


@cli.command("submit")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@config_option
def submit_command(path: str, as_json: bool, config: str | None) -> None:
    """Check, price and decide on a plan without running it (exit 1 if held)."""
    from planlang import commands

    with json_errors(as_json):
        commands.submit_command(path, as_json, config)


def _someone(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--by``: who decided, kept with the decision and said back ("by ." said nothing)."""
    if not value.strip():
        raise click.BadParameter("names who decides, and cannot be blank")
    return value


@cli.command("approve")
@click.argument("plan_id", type=int)
@click.option(
    "--by", default="a person", callback=_someone, help="Who approves (kept with the approval)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@config_option
def approve_command(plan_id: int, by: str, as_json: bool, config: str | None) -> None:
    """Approve a held plan by its ID."""
    from planlang import commands

    with json_errors(as_json):
        commands.approve_command(plan_id, by, config, as_json)


@cli.command("reject")
@click.argument("plan_id", type=int)
@click.option(
    "--by", default="a person", callback=_someone, help="Who rejects (kept with the decision)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@config_option
def reject_command(plan_id: int, by: str, as_json: bool, config: str | None) -> None:
    """Refuse a held plan by its ID; it is never run."""
    from planlang import commands

    with json_errors(as_json):
        commands.reject_command(plan_id, by, config, as_json)


@cli.command("held")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@config_option
def held_command(as_json: bool, config: str | None) -> None:
    """List plans the gate holds for a person, with their price and problems."""
    from planlang import commands

    with json_errors(as_json):
        commands.held_command(config, as_json)


@cli.command("run")
@click.argument("path")
@click.option("--replay", is_flag=True, help="Answer only from the ledger; a miss ends the run.")
@click.option("--budget", type=FiniteFloat(0), default=None, help="Credit cap for this run.")
@click.option("--allow-failed-workers", is_flag=True,
              help="Accept partial results: exit 0 even if some workers failed.")  # fmt: skip
@click.option("--retry-failed", is_flag=True,
              help="Ask the workers that failed in the plan's last run again, under a fresh "
                   "sample index (the old answers stay in the ledger).")  # fmt: skip
@click.option("--wait-at-budget", is_flag=True,
              help="Off a terminal: wait at the cap (planlang raise), do not stop.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True,
              help="Print one outcome object on stdout (shapes: docs/CLI.md).")  # fmt: skip
@config_option
def run_command(path: str, replay: bool, budget: float | None, allow_failed_workers: bool,
                retry_failed: bool, wait_at_budget: bool, as_json: bool,
                config: str | None) -> None:  # fmt: skip
    """Run an approved plan (submitting it to the gate first if it is new).

    The plan's result is printed on stdout as JSON; progress and status go to stderr. A run in
    which the plan or any worker failed exits 1 (see --allow-failed-workers)."""
    from planlang import commands

    if replay and retry_failed:  # a fresh sample is never in the ledger a replay answers from
        raise click.UsageError("--replay and --retry-failed: choose one.")
    commands.run_command(path, replay, budget, config, allow_failed_workers=allow_failed_workers,
                         retry_failed=retry_failed, wait_at_budget=wait_at_budget,
                         as_json=as_json)  # fmt: skip


@cli.command("runs")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@config_option
def runs_command(as_json: bool, config: str | None) -> None:
    """List past runs, newest last (one without an end record is listed as interrupted)."""
    from planlang import run_commands

    with json_errors(as_json):
        run_commands.runs_command(config, as_json)


@cli.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@click.option("--html", "as_html", is_flag=True, help="Draw the run as an HTML page instead.")
@output_option
@config_option
def show_command(run_id: str, as_json: bool, as_html: bool, output: str | None,
                 config: str | None) -> None:  # fmt: skip
    """Print a run's phases, workers, costs and result."""
    from planlang import run_commands

    _one_output(as_json, as_html, output)
    with json_errors(as_json):
        run_commands.show_command(run_id, config, as_json, as_html, output)


@cli.command("report")
@click.argument("run")
@output_option
@config_option
def report_command(run: str, output: str | None, config: str | None) -> None:
    """Draw a run as one self-contained HTML page: timeline, budget, phases, costs, failures."""
    from planlang import cli_report

    cli_report.report_command(run, output, config)


@cli.command("result")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Errors as JSON too (the result is JSON).")
@config_option
def result_command(run_id: str, as_json: bool, config: str | None) -> None:
    """Print a run's result as JSON."""
    from planlang import run_commands

    with json_errors(as_json):
        run_commands.result_command(run_id, config, as_json)


@cli.command("raise")
@click.argument("run_id")
@click.argument("cap", type=FiniteFloat(0))
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@config_option
def raise_command(run_id: str, cap: float, as_json: bool, config: str | None) -> None:
    """Raise the credit cap of a live run (from another shell)."""
    from planlang import run_commands

    with json_errors(as_json):
        run_commands.raise_command(run_id, cap, config, as_json)


@cli.command("cancel")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (shapes: docs/CLI.md).")
@config_option
def cancel_command(run_id: str, as_json: bool, config: str | None) -> None:
    """Cancel a live run (from another shell); calls on the wire finish and are stored."""
    from planlang import run_commands

    with json_errors(as_json):
        run_commands.cancel_command(run_id, config, as_json)


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


@cli.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the layers as JSON.")
@config_option
def doctor_command(as_json: bool, config: str | None) -> None:
    """Report the confinement layers a plan's process gets on this machine."""
    from planlang.isolation import doctor

    doctor.doctor(as_json, config)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the group, turning every user mistake into exit code 2."""
    for stream in (sys.stdout, sys.stderr):  # a plan's lone surrogate is shown \ud800
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        cli.main(args=argv, prog_name="planlang", standalone_mode=False)
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.ClickException as error:
        if "--json" in (sys.argv[1:] if argv is None else argv):  # a parse error, as JSON too
            click.echo(json_error_text(error.format_message()))
        else:
            error.show()
        return error.exit_code
    except click.exceptions.Abort:  # Ctrl-C outside a run (a run records its own): said as JSON too
        if "--json" in (sys.argv[1:] if argv is None else argv):
            click.echo(json_error_text("Interrupted (Ctrl-C)."))
        click.echo("Aborted.", err=True)
        return 130
    except SystemExit as done:
        return int(done.code or 0) if isinstance(done.code, int | None) else EXIT_USAGE
    return EXIT_OK
