"""The bodies of ``planlang runs | show | result | raise | cancel``: a project's run folders
read (one per run: meta.json, threads.json, result.json; of a run without its end record, what
its events.jsonl says so far, ``run_so_far``), and a live run steered from another shell
(``run_watch``'s requests). ``planlang.cli`` imports this module inside the command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from planlang.cli_report import run_html
from planlang.cli_support import EXIT_OK, EXIT_REFUSED, PlanFileError, json_error, project_for
from planlang.report import print_run
from planlang.run_records import meta_problem, read_meta, run_folders
from planlang.run_requests import send_request
from planlang.run_so_far import so_far

__all__ = ["cancel_command", "raise_command", "result_command", "runs_command", "show_command"]


def _run_folder(config: str | None, run_id: str) -> Path:
    folder = project_for(config).state_dir / "runs" / run_id
    if read_meta(folder) is None:
        why = meta_problem(folder) if folder.is_dir() else None
        if why is not None:
            raise PlanFileError(f"run {run_id!r}: {why}")
        raise PlanFileError(f"no run {run_id!r} (see planlang runs)")
    return folder


def runs_command(config: str | None, as_json: bool = False) -> None:
    """List past runs, oldest first (a run whose process is gone without an end record is
    listed as interrupted)."""
    runs_dir = project_for(config).state_dir / "runs"
    metas = [_so_far(folder, meta) for folder, meta in run_folders(runs_dir)]
    if as_json:
        click.echo(json.dumps({"runs": metas}, indent=2, default=str))
        return
    if not metas:
        click.echo("No runs yet.")
    for meta in metas:
        if meta["status"] == "unreadable":
            click.echo(f"{meta['id']}  {'unreadable':<17}  {meta['error']}")
            continue
        total = meta.get("accounting", {}).get("total", {})
        calls, credits = total.get("calls", 0), total.get("credits", 0.0)
        click.echo(f"{meta['id']}  {meta['status']:<17}  {meta.get('filename')}  "
                   f"{calls} calls  {credits:.4g} credits")  # fmt: skip


def show_command(run_id: str, config: str | None, as_json: bool = False, as_html: bool = False,
                 output: str | None = None) -> None:  # fmt: skip
    """Print a run's phases, workers, costs and result (or draw it: ``--html``)."""
    folder = _run_folder(config, run_id)
    if as_html:
        if not (folder / "meta.json").exists():
            raise PlanFileError(f"run {run_id!r} has not finished; draw it with planlang report")
        run_html(folder, output)
        return
    meta = read_meta(folder) or {}
    if _unended(meta):
        meta, threads = so_far(folder, meta)
    else:
        threads = _record(folder / "threads.json", run_id, [])
    if as_json:
        result = _record(folder / "result.json", run_id, None)
        shown = {"meta": meta, "workers": threads, "result": result}
        click.echo(json.dumps(shown, indent=2, default=str))
        return
    print_run(meta, threads, Console())
    result_path = folder / "result.json"
    if result_path.exists():
        text = _result_text(result_path, run_id)
        click.echo(f"Result (planlang result {run_id}):")
        click.echo(text)


def _result_text(path: Path, run_id: str) -> str:
    """The text of a run's ``result.json``, as written, once it is known to be JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as error:  # a folder, say, or not UTF-8
        raise PlanFileError(f"run {run_id!r}: result.json is unreadable: {error}") from None
    _record(path, run_id, None)  # not JSON (a truncated or edited file): one line, exit 2
    return text


def _unended(meta: dict[str, Any]) -> bool:
    """A run record without its end (running, or killed before it): its events say more."""
    return meta.get("finished") is None and meta.get("status") in ("running", "interrupted")


def _so_far(folder: Path, meta: dict[str, Any]) -> dict[str, Any]:
    return so_far(folder, meta)[0] if _unended(meta) else meta


def _record(path: Path, run_id: str, missing: Any) -> Any:
    """A JSON file of a run's folder (``missing`` if there is none); one line if unreadable."""
    if not path.exists():
        return missing
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PlanFileError(f"run {run_id!r}: {path.name} is unreadable: {error}") from None
    except RecursionError:
        raise PlanFileError(f"run {run_id!r}: {path.name} is unreadable: nested too deeply"
                            ) from None  # fmt: skip


def result_command(run_id: str, config: str | None, as_json: bool = False) -> None:
    """Print a run's result as JSON (exit 1 if the run has none: with ``--json`` that is
    said as JSON too)."""
    folder = _run_folder(config, run_id)
    result_path = folder / "result.json"
    if not result_path.exists():
        meta = read_meta(folder) or {}
        message = f"Run {run_id} has no result ({meta.get('status')})."
        if as_json:
            json_error(message, EXIT_REFUSED)
        click.echo(message, err=True)
        sys.exit(EXIT_REFUSED)
    click.echo(_result_text(result_path, run_id))


def _live_folder(config: str | None, run_id: str) -> Path:
    folder = _run_folder(config, run_id)
    meta = read_meta(folder) or {}
    if meta.get("status") != "running":
        raise PlanFileError(f"run {run_id!r} is not running ({meta.get('status')})")
    return folder


def _request(run_id: str, config: str | None, request: dict[str, Any], done: str,
             as_json: bool) -> None:  # fmt: skip
    """Send ``request`` to the live run; exit 0 if it took it, 1 if it refused it (the run
    decides: a cap not above what it has spent) or did not take it in time, saying why."""
    taken, why = send_request(_live_folder(config, run_id), request)
    if as_json:
        click.echo(json.dumps({"id": run_id, "request": request, "taken": taken, "why": why}))
    elif taken:
        click.echo(f"Run {run_id}: {done}.")
    else:
        click.echo(f"Run {run_id} did not take the request: {why}", err=True)
    sys.exit(EXIT_OK if taken else EXIT_REFUSED)


def raise_command(run_id: str, cap: float, config: str | None, as_json: bool = False) -> None:
    """Raise the credit cap of a live run (from another shell)."""
    _request(run_id, config, {"raise": cap}, f"the cap is now {cap:.4g}", as_json)


def cancel_command(run_id: str, config: str | None, as_json: bool = False) -> None:
    """Cancel a live run (from another shell); calls on the wire finish and are stored."""
    _request(run_id, config, {"cancel": True}, "cancelled", as_json)
