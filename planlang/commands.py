"""The bodies of ``planlang price | run | approve | held | runs | show``, past ``check``.

``planlang.cli`` declares each command (arguments, options, help) and imports this module inside
the command, so ``planlang check`` never loads the runtime, rich or pydantic.

All of them read the project's ``planlang.toml`` (see ``planlang.project``) and keep their state
in its state folder: the gate's store, the answer ledger and one folder per run.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live

from planlang.cli_ledger import open_ledger, open_shared_budget
from planlang.cli_report import price_html, run_html
from planlang.cli_support import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, PlanFileError, read_plan
from planlang.errors import PlanError, PlanRefused
from planlang.gate import Gate, TamperedPlan
from planlang.gate_seal import KeyFileError
from planlang.price import price
from planlang.project import DEFAULT_NAME, Project, ProjectError, load_project
from planlang.report import print_price, print_run
from planlang.run import endpoint_client, front_door, start_run
from runtime import LLM, Run, RunError
from runtime.stores import StoreUnavailable


def _project(config: str | None) -> Project:
    try:
        return load_project(config)
    except ProjectError as error:
        raise PlanFileError(str(error)) from None


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


def _refused(error: PlanRefused, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"ok": False, "problems": [p.as_dict() for p in error.problems]}))
    else:
        for problem in error.problems:
            click.echo(problem.render())
        click.echo(str(error.message) if not error.problems else "The plan was refused.", err=True)
    sys.exit(EXIT_REFUSED)


# -- price -----------------------------------------------------------------------------------


def price_command(path: str, seeds: int, latency: float, as_json: bool, as_html: bool,
                  output: str | None, config: str | None) -> None:  # fmt: skip
    """Rehearse a plan against the free stand-in model and print its price."""
    plan = read_plan(path)
    project = _project(config)
    try:
        report = price(plan.source, seeds=seeds, settings=project.settings,
                       host=project.host_provider(), inputs=project.inputs, latency=latency,
                       filename=path)  # fmt: skip
    except PlanRefused as error:
        _refused(error, as_json)
    except ProjectError as error:
        raise PlanFileError(str(error)) from None
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, default=str))
    elif as_html:
        price_html(report, output, concurrency=project.settings.concurrency, latency=latency)
    else:
        print_price(report, Console(), concurrency=project.settings.concurrency, latency=latency)
    no_project = config is None and not (Path.cwd() / DEFAULT_NAME).exists()
    if no_project and _undefined_names(report.problems):
        click.echo(
            f"note: no {DEFAULT_NAME} in {Path.cwd()}, so the plan has only the core host words "
            "(agent, parallel, stream, phase, log); pass --config to use a project's words.",
            err=True,
        )
    sys.exit(EXIT_OK if report.ok else EXIT_REFUSED)


def _undefined_names(problems: Any) -> bool:
    """Did a rehearsal crash on a name nothing defined (a host word of a missing project)?"""
    return any(p.kind == "crash" and p.message.startswith("NameError") for p in problems)


# -- approve / held --------------------------------------------------------------------------


def approve_command(plan_id: int, by: str, config: str | None) -> None:
    """Approve a held plan by its ID."""
    gate = _gate(_project(config), words=False)
    try:
        approved = gate.approve(plan_id, by=by)
    except KeyError as error:
        raise PlanFileError(str(error.args[0])) from None
    except PlanRefused as error:
        click.echo(f"error: {error.__cause__ or error}", err=True)
        sys.exit(EXIT_REFUSED)
    click.echo(
        f"Approved plan {approved.id} ({approved.filename}, sha256 {approved.sha256[:12]}…)."
    )


def held_command(config: str | None) -> None:
    """List plans the gate holds for a person."""
    held = _gate(_project(config), words=False).held()
    if not held:
        click.echo("No plan is held.")
    for row in held:
        click.echo(f"{row['id']}  {row['filename']}  {row['sha256'][:12]}…  "
                   f"{'; '.join(row['reasons'])}")  # fmt: skip


# -- run -------------------------------------------------------------------------------------


def run_command(path: str, replay: bool, budget: float | None, config: str | None) -> None:
    """Run an approved plan (submitting it to the gate first if it is new)."""
    plan = read_plan(path)
    project = _project(config)
    project.offline_tools = replay  # replay sends nothing to any MCP server, not even a listing
    gate = _gate(project)
    try:
        approved = gate.find_approved(plan.source)
        if approved is None:
            decision = gate.submit(plan.source, filename=path)
            if not decision.approved:
                reasons = "; ".join(decision.reasons)
                click.echo(
                    f"Plan {decision.id} is held for a person: {reasons}. "
                    f"Approve it with: planlang approve {decision.id}",
                    err=True,
                )
                sys.exit(EXIT_REFUSED)
            approved = decision.plan
    except PlanRefused as error:
        _refused(error, False)
    assert approved is not None
    settings = project.settings
    client = None
    if not replay:
        try:
            client = endpoint_client(settings)
        except ValueError as error:
            raise PlanFileError(str(error)) from None
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + approved.sha256[:8]
    folder = project.state_dir / "runs" / run_id
    ledger = open_ledger(project.ledger)
    llm = front_door(settings, ledger, client=client, replay=replay, budget=budget)
    if project.budget is not None:  # a budget shared on the server instead of the run's own
        llm.budget = open_shared_budget(project, budget if budget is not None else settings.cap)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plan.py").write_text(approved.source, encoding="utf-8")  # for planlang report
    code = _watch(llm, approved, folder, path, "replay" if replay else "collect")
    ledger.close()
    llm.budget.close()
    if client is not None:
        client.close()
    sys.exit(code)


def _watch(llm: LLM, approved: Any, folder: Path, path: str, mode: str) -> int:
    console = Console(stderr=True)
    run = start_run(approved, llm, title=path, events_path=folder / "events.jsonl")
    outcome: Any = None
    code = EXIT_OK
    try:
        with Live(run.statusline(), console=console, refresh_per_second=4,
                  transient=False) as live:  # fmt: skip
            while True:
                try:
                    outcome = run.wait(timeout=0.25)
                    break
                except TimeoutError:
                    live.update(run.statusline())
            live.update(run.statusline())
    except KeyboardInterrupt:
        # Ctrl-C may land outside run.wait (say, while the status line redraws): cancel here
        # too, and let workers already talking finish, so nothing is left running.
        code = EXIT_INTERRUPTED
        run.cancel("interrupted (Ctrl-C)")
        _finish_quietly(run)
        console.print("Interrupted: the run was cancelled; run again to resume from the ledger.")
    except (PlanError, RunError, TamperedPlan) as error:
        code = EXIT_REFUSED
        console.print(f"[red]The run failed:[/red] {type(error).__name__}: {error}",
                      highlight=False)  # fmt: skip
    _save(run, folder, path, mode, outcome)
    console.print(f"Run {folder.name}: {run.status}. Details: planlang show {folder.name}")
    return code


def _finish_quietly(run: Run) -> None:
    """Wait for a cancelled run to wind down; its error is already recorded on the run."""
    while True:
        try:
            run.wait()
            return
        except KeyboardInterrupt:
            continue  # a second Ctrl-C while winding down: keep winding down
        except BaseException:  # noqa: BLE001 - the run's own outcome, already on run.error
            return


def _save(run: Run, folder: Path, path: str, mode: str, result: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    meta = {
        "id": folder.name, "filename": path, "status": run.status, "mode": mode,
        "finished": time.time(), "accounting": run.accounting.to_dict(),
        "error": None if run.error is None else f"{type(run.error).__name__}: {run.error}",
    }  # fmt: skip
    for name, data in (("meta.json", meta), ("threads.json", run.threads_json()),
                       ("result.json", result)):  # fmt: skip
        tmp = folder / (name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
        tmp.replace(folder / name)


# -- runs / show -----------------------------------------------------------------------------


def runs_command(config: str | None) -> None:
    """List past runs, newest last."""
    folder = _project(config).state_dir / "runs"
    metas = sorted(folder.glob("*/meta.json")) if folder.exists() else []
    if not metas:
        click.echo("No runs yet.")
    for meta_path in metas:
        meta = json.loads(meta_path.read_text())
        total = meta["accounting"]["total"]
        click.echo(f"{meta['id']}  {meta['status']:<9}  {meta['filename']}  "
                   f"{total['calls']} calls  {total['credits']:.4g} credits")  # fmt: skip


def show_command(run_id: str, as_html: bool, output: str | None, config: str | None) -> None:
    """Print a run's phases, workers and costs."""
    folder = _project(config).state_dir / "runs" / run_id
    if not (folder / "meta.json").exists():
        raise PlanFileError(f"no run {run_id!r} (see planlang runs)")
    if as_html:
        run_html(folder, output)
        return
    meta = json.loads((folder / "meta.json").read_text())
    threads = json.loads((folder / "threads.json").read_text())
    print_run(meta, threads, Console())
