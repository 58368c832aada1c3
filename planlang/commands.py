"""The bodies of ``planlang price | submit | approve | reject | held | run``, past ``check``
(``run_commands``: those that read a project's run folders or steer a live run).

``planlang.cli`` declares each command (arguments, options, help) and imports this module inside
the command, so ``planlang check`` never loads the runtime, rich or pydantic.

All of them read the project's ``planlang.toml`` (see ``planlang.project``) and keep their state
in its state folder: the gate's store, the answer ledger and one folder per run.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console

from planlang.cli_ledger import open_ledger, open_shared_budget
from planlang.cli_report import price_html
from planlang.cli_support import (
    EXIT_OK,
    EXIT_REFUSED,
    PlanFileError,
    json_error,
    project_for,
    read_plan,
)
from planlang.errors import PlanRefused
from planlang.gate import Gate
from planlang.gate_seal import KeyFileError
from planlang.price import price
from planlang.project import DEFAULT_NAME, Project, ProjectError
from planlang.report import print_price
from planlang.run import endpoint_client, front_door, start_run
from planlang.run_records import new_run_folder, write_start, write_unstarted
from planlang.run_records import retry_failed as retry_failed_workers
from planlang.run_watch import WatchOptions, watch
from runtime.stores import StoreUnavailable


def _gate(project: Project, seeds: int = 5, latency: float = 2.0, *, words: bool = True) -> Gate:
    """The project's gate; ``words=False`` for commands that price nothing (no server starts)."""
    try:
        host = project.host_provider() if words else None
    except ProjectError as error:
        raise PlanFileError(str(error)) from None
    try:
        return Gate(
            project.policy,
            store=project.gate_store,
            key_file=project.gate_key,
            settings=project.settings,
            host=host,
            inputs=project.inputs,
            seeds=seeds,
            latency=latency,
        )
    except (KeyFileError, StoreUnavailable, ValueError) as error:
        raise PlanFileError(f"gate {project.gate_store}: {error}") from None
    except sqlite3.DatabaseError as error:  # a file there that is not a gate's store
        raise PlanFileError(f"gate {project.gate_store}: not a gate store ({error})") from None
    except OSError as error:
        raise PlanFileError(f"gate {project.gate_store}: cannot open: "
                            f"{error.strerror or error}") from None  # fmt: skip


def _refused(error: PlanRefused, as_json: bool) -> None:
    if as_json:
        problems = [p.as_dict() for p in error.problems]
        said = {} if problems else {"error": str(error.message)}  # a store's refusal: no lines
        click.echo(json.dumps({"ok": False, **said, "problems": problems}))
    else:
        for problem in error.problems:
            click.echo(problem.render())
        click.echo(str(error.message) if not error.problems else "The plan was refused.", err=True)
    sys.exit(EXIT_REFUSED)


# -- price -----------------------------------------------------------------------------------


def price_command(path: str, seeds: int, latency: float, as_json: bool, config: str | None,
                  as_html: bool = False, output: str | None = None) -> None:  # fmt: skip
    """Rehearse a plan against the free stand-in model and print its price."""
    try:
        _price(path, seeds, latency, as_json, config, as_html, output)
    except PlanFileError as error:
        if not as_json:
            raise
        click.echo(json.dumps({"ok": False, "error": error.message, "problems": []}))
        sys.exit(error.exit_code)


def _price(path: str, seeds: int, latency: float, as_json: bool, config: str | None,
           as_html: bool = False, output: str | None = None) -> None:  # fmt: skip
    plan = read_plan(path)
    project = project_for(config, path)
    try:
        report = price(plan.source, seeds=seeds, settings=project.settings,
                       host=project.host_provider(), inputs=project.inputs, latency=latency,
                       filename=path)  # fmt: skip
    except PlanRefused as error:
        _refused(error, as_json)
    except ProjectError as error:
        raise PlanFileError(str(error)) from None
    if as_json:  # with what the text's "a call takes 2 s, 8 at a time" says
        wall_basis = {"latency": latency, "concurrency": project.settings.concurrency}
        click.echo(json.dumps({**report.to_dict(), "wall_basis": wall_basis}, indent=2,
                              default=str))  # fmt: skip
    elif as_html:
        price_html(report, output, concurrency=project.settings.concurrency, latency=latency)
    else:
        print_price(report, Console(), concurrency=project.settings.concurrency, latency=latency)
    no_project = config is None and project.source is None
    if no_project and _undefined_names(report.problems):
        click.echo(
            f"note: no {DEFAULT_NAME} in {Path(path).resolve().parent} or above, so the plan has "
            "only the core host words "
            "(agent, parallel, stream, phase, log); pass --config to use a project's words.",
            err=True,
        )
    sys.exit(EXIT_OK if report.ok else EXIT_REFUSED)


def _undefined_names(problems: Any) -> bool:
    """Did a rehearsal crash on a name nothing defined (a host word of a missing project)?"""
    return any(p.kind == "crash" and p.message.startswith("NameError") for p in problems)


# -- submit / approve / reject / held -------------------------------------------------------


def _echo_plan(summary: dict[str, Any], headline: str) -> None:
    """A plan as a person reviews it: what happened, the price, and what held it."""
    click.echo(headline)
    credits = summary["price"]["credits"] or {}
    if credits:
        click.echo(f"  price: {credits.get('median', 0):.4g} credits median "
                   f"({credits.get('min', 0):.4g} to {credits.get('max', 0):.4g}); hard ceiling "
                   f"{summary['price']['ceiling']:.4g}")  # fmt: skip
    for reason in summary["reasons"]:
        click.echo(f"  held: {reason}")
    for problem in summary["problems"]:
        click.echo(f"  problem: {problem}")


def submit_command(path: str, as_json: bool, config: str | None) -> None:
    """Check, price and decide on a plan without running it."""
    plan = read_plan(path)
    gate = _gate(project_for(config, path))
    try:
        decision = gate.submit(plan.source, filename=path)
    except PlanRefused as error:
        _refused(error, as_json)
    summary = gate.summary(decision.id)
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    elif decision.approved:
        _echo_plan(summary, f"Plan {decision.id} ({path}) is approved; run it with: "
                            f"planlang run {path}")  # fmt: skip
    else:
        _echo_plan(summary, f"Plan {decision.id} ({path}) is held for a person. Approve it with: "
                            f"planlang approve {decision.id}, or refuse it with: planlang "
                            f"reject {decision.id}")  # fmt: skip
    sys.exit(EXIT_OK if decision.approved else EXIT_REFUSED)


def _decision_refused(why: str, as_json: bool) -> NoReturn:
    """The gate would not take a decision (a rejected plan approved, a decided one rejected):
    exit 1, said on stderr, or as JSON on stdout with ``--json``."""
    if as_json:
        json_error(why, EXIT_REFUSED)
    click.echo(f"error: {why}", err=True)
    sys.exit(EXIT_REFUSED)


def approve_command(plan_id: int, by: str, config: str | None, as_json: bool = False) -> None:
    """Approve a held plan by its ID."""
    gate = _gate(project_for(config), words=False)
    try:
        before = gate.summary(plan_id)
        approved = gate.approve(plan_id, by=by)
    except KeyError as error:
        raise PlanFileError(str(error.args[0])) from None
    except PlanRefused as error:
        _decision_refused(str(error.__cause__ or error), as_json)
    summary = gate.summary(approved.id)
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
        return
    named = f"plan {approved.id} ({approved.filename}, sha256 {approved.sha256[:12]}…)"
    said = (f"The {named} was approved already, by {summary['decided_by']}."
            if before["status"] == "approved" else f"Approved {named} by {by}.")  # fmt: skip
    _echo_plan({**summary, "reasons": []}, said)


def reject_command(plan_id: int, by: str, config: str | None, as_json: bool = False) -> None:
    """Refuse a held plan by its ID."""
    gate = _gate(project_for(config), words=False)
    try:
        summary = gate.reject(plan_id, by=by)
    except KeyError as error:
        raise PlanFileError(str(error.args[0])) from None
    except PlanRefused as error:  # a row whose seal does not verify, as approve says it
        _decision_refused(str(error.__cause__ or error), as_json)
    except ValueError as error:
        _decision_refused(str(error), as_json)
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        click.echo(f"Rejected plan {plan_id} ({summary['filename']}) by {by}.")


def held_command(config: str | None, as_json: bool = False) -> None:
    """List plans the gate holds for a person, with their price and problems."""
    try:
        held = _gate(project_for(config), words=False).held()
    except PlanRefused as error:  # a row of the store whose seal does not verify
        _refused(error, as_json)
    if as_json:
        click.echo(json.dumps({"held": held}, indent=2, default=str))
        return
    if not held:
        click.echo("No plan is held.")
    for row in held:
        _echo_plan(row, f"{row['id']}  {row['filename']}  {row['sha256'][:12]}…")


# -- run -------------------------------------------------------------------------------------


def run_command(path: str, replay: bool, budget: float | None, config: str | None, *,
                allow_failed_workers: bool = False, retry_failed: bool = False,
                wait_at_budget: bool = False, as_json: bool = False) -> None:  # fmt: skip
    """Run an approved plan (submitting it to the gate first if it is new); its result goes to
    stdout as JSON, progress and status to stderr (see ``planlang.run_watch``)."""
    try:
        _run(path, replay, budget, config, allow_failed_workers, retry_failed, wait_at_budget,
             as_json)  # fmt: skip
    except PlanFileError as error:
        if not as_json:
            raise
        click.echo(json.dumps({"ok": False, "error": error.message, "problems": []}))
        sys.exit(error.exit_code)


def _run(path: str, replay: bool, budget: float | None, config: str | None,
         allow_failed_workers: bool, retry_failed: bool, wait_at_budget: bool,
         as_json: bool) -> None:  # fmt: skip
    plan = read_plan(path)
    project = project_for(config, path)
    project.offline_tools = replay  # replay sends nothing to any MCP server, not even a listing
    gate = _gate(project)
    try:
        approved = gate.find_approved(plan.source)
        if approved is None:
            decision = gate.submit(plan.source, filename=path)
            if not decision.approved:
                reasons = "; ".join(decision.reasons)
                if as_json:  # the held plan, as submit --json prints it
                    click.echo(json.dumps(gate.summary(decision.id), indent=2, default=str))
                click.echo(
                    f"Plan {decision.id} is held for a person: {reasons}. "
                    f"Approve it with: planlang approve {decision.id}",
                    err=True,
                )
                for problem in gate.summary(decision.id)["problems"]:  # what --json names too
                    click.echo(f"  problem: {problem}", err=True)
                sys.exit(EXIT_REFUSED)
            approved = decision.plan
    except PlanRefused as error:
        _refused(error, as_json)
    assert approved is not None
    settings = project.settings
    client = None
    if not replay:
        try:
            client = endpoint_client(settings)
        except ValueError as error:
            raise PlanFileError(str(error)) from None
    runs_dir = project.state_dir / "runs"
    try:
        resample = retry_failed_workers(runs_dir, approved.sha256) if retry_failed else None
    except ValueError as error:  # the last run's workers cannot be read
        raise PlanFileError(str(error)) from None
    if resample is not None and resample.since is None:
        click.echo("No earlier run of this plan: no failed worker to retry.", err=True)
    elif resample is not None:
        click.echo(f"Retrying {resample.retried} failed worker(s) of run {resample.since} under "
                   "a fresh sample index.", err=True)  # fmt: skip
    folder = new_run_folder(runs_dir, approved.sha256)
    ledger = open_ledger(project.ledger)
    llm = front_door(settings, ledger, client=client, replay=replay, budget=budget)
    if project.budget is not None:  # a budget shared on the server instead of the run's own
        llm.budget = open_shared_budget(project, budget if budget is not None else settings.cap)
    mode = "replay" if replay else "collect"
    write_start(folder, filename=path, sha256=approved.sha256, mode=mode, cap=llm.budget.cap)
    try:
        (folder / "plan.py").write_text(approved.source, encoding="utf-8")  # for `report`
        run = start_run(approved, llm, title=path, events_path=folder / "events.jsonl",
                        resample=resample)  # fmt: skip
    except (PlanFileError, OSError) as error:  # recorded failed, not "running" then gone
        write_unstarted(folder, error.message if isinstance(error, PlanFileError) else str(error))
        raise
    options = WatchOptions(allow_failed_workers=allow_failed_workers,
                           wait_at_budget=wait_at_budget, as_json=as_json)  # fmt: skip
    code = watch(run, folder, options=options)
    ledger.close()
    llm.budget.close()
    if client is not None:
        client.close()
    sys.exit(code)
