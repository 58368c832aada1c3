"""``planlang report RUN``, and the ``--html`` of ``show`` and ``price``: pages, not tables.

A run is named by its id (a folder under the project's ``runs/``) or by the path of a run
folder, so a run someone sent you draws the same page. The page goes to ``-o FILE`` or to
standard output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planlang.cli_support import PlanFileError, find_config
from planlang.html_price import render_price
from planlang.html_report import render_run
from planlang.price import PriceReport
from planlang.project import ProjectError, load_project
from planlang.timeline import TimelineError, load_timeline

__all__ = ["price_html", "report_command", "run_folder", "run_html"]


def run_folder(run: str, state_dir: Path) -> Path:
    """The folder of run ``run``: a path to a run folder, or an id under ``state_dir/runs``."""
    given = Path(run)
    if (given / "events.jsonl").exists():
        return given
    folder = state_dir / "runs" / run
    if not (folder / "events.jsonl").exists():
        raise PlanFileError(f"no run {run!r} (see planlang runs, or give a run folder's path)")
    return folder


def write_page(html: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(html)
        return
    try:  # open(), not Path(): Path drops the slash of `-o out/`, and wrote a file `out`
        with open(output, "w", encoding="utf-8", errors="backslashreplace") as page:
            page.write(html)
    except OSError as error:
        raise PlanFileError(f"{output}: cannot write: {error.strerror or error}") from None
    size = len(html.encode("utf-8", errors="backslashreplace"))
    click.echo(f"Wrote {output} ({size:,} bytes).", err=True)


def run_html(folder: Path, output: str | None) -> None:
    """Draw the run in ``folder`` and write the page."""
    try:
        timeline = load_timeline(folder)
    except TimelineError as error:
        raise PlanFileError(str(error)) from None
    write_page(render_run(timeline), output)


def price_html(
    report: PriceReport, output: str | None, *, concurrency: int, latency: float
) -> None:
    write_page(render_price(report, concurrency=concurrency, latency=latency), output)


def report_command(run: str, output: str | None, config: str | None) -> None:
    """The body of ``planlang report``: a run folder's path needs no project."""
    if (Path(run) / "events.jsonl").exists():
        state = Path(".")
    else:
        if config is None:  # the planlang.toml nearest above, as runs and show find theirs
            found = find_config(Path.cwd())
            config = None if found is None else str(found)
        try:
            state = load_project(config).state_dir
        except ProjectError as error:
            raise PlanFileError(str(error)) from None
    run_html(run_folder(run, state), output)
