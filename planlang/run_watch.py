"""Watching a live run for ``planlang run``: what it shows, and what it does when asked.

While the run goes, the watcher redraws its progress (``planlang.progress``), applies requests
from other shells (``planlang raise RUN CAP``, ``planlang cancel RUN``: files the commands drop
in the run's ``requests/`` folder), and decides what a budget below the plan's cost means:

- on a terminal, the run pauses and asks for a new cap (or ``stop``), still taking requests
  from other shells meanwhile: whichever answers first wins;
- not on a terminal (CI, pipes), it stops cleanly at the cap, unless told to wait;

a run that stops there is recorded as ``stopped-at-budget``, and a rerun pays nothing for the
questions already answered (the ledger). Ctrl-C and SIGTERM cancel the run the same way: calls
on the wire finish and are stored, the record says ``interrupted``, and a rerun resumes.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from planlang import progress, result_json
from planlang.cli_support import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_TERMINATED
from planlang.run_records import failure_groups, write_end
from planlang.run_requests import apply_requests, cap_refusal, take_requests
from runtime import Run

__all__ = ["WatchOptions", "ended", "stuck_at_budget", "thunk_failures", "watch"]

EXIT_FAILED = EXIT_REFUSED  # a run that failed, stopped or was cancelled: "refused, held or failed"
_TICK = 0.25


class Terminated(Exception):
    """SIGTERM arrived: handled like Ctrl-C."""


@dataclass(frozen=True)
class WatchOptions:
    allow_failed_workers: bool = False  # partial results are accepted: exit 0
    wait_at_budget: bool = False  # not on a terminal: wait at the cap instead of stopping
    interactive: bool | None = None  # None: ask when stdin and stderr are terminals
    as_json: bool = False  # stdout: one outcome object (id, status, result, ...) whatever happened


@dataclass
class _Ending:
    status: str | None = None  # set when the watcher ended the run itself
    code: int | None = None
    waiting: tuple[float, float | None] | None = None  # (spent, cap) of the wait said last


def watch(run: Run, folder: Path, *, options: WatchOptions) -> int:
    """Watch a started ``run`` to the end and write its end record; return the exit code.

    The caller wrote the start record (``run_records.write_start``) before starting it, so a
    run killed at any moment is still listed."""
    interactive = options.interactive
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stderr.isatty()
    previous = _on_sigterm()
    started = time.monotonic()
    ending = _Ending()
    display = _Display(run, started, live=sys.stderr.isatty())
    try:
        while not ended(run):
            display.tick()
            for line in apply_requests(run, folder):
                click.echo(line, err=True)
            if stuck_at_budget(run):
                display.pause()
                if not _budget_decision(run, folder, interactive, options.wait_at_budget,
                                        ending):  # fmt: skip
                    ending.status = "stopped-at-budget"
                    run.cancel("stopped at the budget")
    except (KeyboardInterrupt, Terminated) as why:
        terminated = isinstance(why, Terminated)
        ending.status = "interrupted"
        ending.code = EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
        run.cancel("terminated (SIGTERM)" if terminated else "interrupted (Ctrl-C)")
        _wind_down(run)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        display.stop()
    return _finish(run, folder, display, ending, options)


def ended(run: Run) -> bool:
    try:
        run.wait(timeout=_TICK)
    except TimeoutError:
        return False
    except (KeyboardInterrupt, Terminated):
        raise
    except BaseException:  # noqa: BLE001 - the run's own outcome, on run.error
        return True
    return True


def _wind_down(run: Run) -> None:
    """Wait for a cancelled run to finish the calls on the wire (they are stored)."""
    while True:
        try:
            while not ended(run):
                pass
            return
        except (KeyboardInterrupt, Terminated):
            continue  # a second Ctrl-C or SIGTERM while winding down: keep winding down


def _on_sigterm() -> Any:
    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    return signal.signal(signal.SIGTERM, terminate)


# -- the budget ------------------------------------------------------------------------------


def stuck_at_budget(run: Run) -> bool:
    """Workers wait at the cap and no call is in flight: nothing will free the budget."""
    spent, reserved, cap = run.llm.budget.snapshot()
    return run.paused and reserved == 0 and cap is not None


def _budget_decision(run: Run, folder: Path, interactive: bool, wait: bool,
                     ending: _Ending) -> bool:  # fmt: skip
    """True: go on (a new cap, or wait for one); False: stop at the budget."""
    spent, _, cap = run.llm.budget.snapshot()
    said = f"Paused at the budget: spent {spent:.4g} of the cap {cap:.4g}."
    if not interactive:
        if wait:  # `planlang raise` from another shell, or `planlang cancel`: said once a wait
            if ending.waiting != (spent, cap):
                ending.waiting = (spent, cap)
                click.echo(f"{said} Waiting (--wait-at-budget) for planlang raise {folder.name} "
                           f"CAP, or planlang cancel {folder.name}.", err=True)  # fmt: skip
            return True
        click.echo(f"{said} Stopping here (not on a terminal; --wait-at-budget waits instead).",
                   err=True)  # fmt: skip
        return False
    return _ask_at_budget(run, folder, said)


_QUESTION = " New cap, or 'stop' (planlang raise or cancel from another shell also answer) [stop]: "


def _ask_at_budget(run: Run, folder: Path, said: str) -> bool:
    """Ask the person at the terminal, while watching for ``planlang raise`` and ``cancel``
    from other shells: whichever answers first wins, and the prompt says which it was."""
    click.echo(said + _QUESTION, err=True, nl=False)
    while True:
        try:
            answer = _line_within(_TICK)
        except KeyboardInterrupt:  # Ctrl-C at the prompt: the same as 'stop'
            click.echo("", err=True)
            return False
        if answer is None:  # nothing typed yet: did another shell answer?
            answered = take_requests(run, folder)
            if answered:
                click.echo("", err=True)
                for line, _ in answered:
                    click.echo(line, err=True)
                if any(taken for _, taken in answered):
                    return True  # a raise resumes the run; a cancel ends it as cancelled
                click.echo(said + _QUESTION, err=True, nl=False)  # a refused raise: ask again
                continue
            if ended(run) or not stuck_at_budget(run):
                click.echo("\nThe run goes on: the budget is no longer spent.", err=True)
                return True
            continue
        answer = answer.strip()
        if answer.lower() in ("", "stop", "s", "q"):
            return False
        try:
            new_cap = float(answer)
        except ValueError:
            click.echo(f"Not a number: {answer!r}." + _QUESTION, err=True, nl=False)
            continue
        refused = cap_refusal(new_cap, run)
        if refused is not None:
            click.echo(refused + _QUESTION, err=True, nl=False)
            continue
        run.llm.budget.raise_to(new_cap)
        run.log_events.emit("cap_raised", cap=new_cap, by="terminal")
        return True


def _line_within(seconds: float) -> str | None:
    """A line typed at the terminal within ``seconds``, else None; EOF (Ctrl-D) is 'stop'."""
    fd = sys.stdin.fileno()
    ready, _, _ = select.select([fd], [], [], seconds)
    if not ready:
        return None
    data = os.read(fd, 4096)  # a terminal in line mode gives one line per read
    return data.decode(errors="replace").splitlines()[0] if data.strip() else "stop"


# -- the end ---------------------------------------------------------------------------------


def thunk_failures(run: Run) -> list[tuple[str, int, int | None]]:
    """The plan's fanned-out functions that raised (their results None), one entry per
    reason and line with its count: the plan failed there, though no worker did."""
    found: dict[tuple[str, int | None], int] = {}
    for event in run.events:
        if event["kind"] == "thunk_failed":
            key = (str(event["error"]), event.get("line"))
            found[key] = found.get(key, 0) + 1
    return [(reason, count, line) for (reason, line), count in found.items()]


def _finish(run: Run, folder: Path, display: _Display, ending: _Ending,
            options: WatchOptions) -> int:  # fmt: skip
    threads = run.threads_json()
    groups = failure_groups(threads)
    thunks = thunk_failures(run)
    status = ending.status or run.status
    if status == "completed" and (groups or thunks) and not options.allow_failed_workers:
        status = "failed"
    write_end(folder, status=status, run=run, result=run.result, cap=run.llm.budget.cap)
    display.summary(status)
    failed = sum(count for _, count, _ in groups)
    if groups:
        click.echo(f"{failed} worker(s) failed, by reason:", err=True)
        for reason, count, ids in groups:
            shown = ", ".join(map(str, ids)) + (", …" if count > len(ids) else "")
            click.echo(f"  {count} × {reason} (workers {shown})", err=True)
    for reason, count, line in thunks:
        where = f" (line {line})" if line is not None else ""
        click.echo(f"{count} fanned-out function(s) failed{where}: {reason}", err=True)
    if run.error is not None and ending.status is None and status == "failed":
        filename, line = getattr(run.error, "plan_line", None) or (None, None)
        where = f" ({filename}:{line})" if line is not None else ""
        click.echo(f"The run failed{where}: {type(run.error).__name__}: {run.error}", err=True)
    if run.error is not None and ending.status is None and status == "cancelled":
        click.echo(str(run.error), err=True)  # why: the runaway backstop, say, or a cancel
    spent, _, now_cap = run.llm.budget.snapshot()
    if status == "stopped-at-budget":
        left = sum(1 for t in threads if t["status"] == "cancelled")
        click.echo(f"Stopped at the budget: spent {spent:.4g} of {now_cap:.4g}; {left} worker(s) "
                   "not done. Rerun with a higher --budget: answers already paid for come from "
                   "the ledger.", err=True)  # fmt: skip
    if status == "interrupted":
        click.echo("Interrupted: the run was cancelled; run again to resume from the ledger.",
                   err=True)  # fmt: skip
    where = f"Result: planlang result {folder.name}; " if run.error is None else "No result; "
    click.echo(f"Run {folder.name}: {status}. {where}details: planlang show {folder.name}",
               err=True)  # fmt: skip
    code = ending.code if ending.code is not None else EXIT_OK if status == "completed" \
        else EXIT_FAILED  # fmt: skip
    if options.as_json:
        outcome = {
            "id": folder.name, "status": status, "exit_code": code, "spent": spent,
            "cap": now_cap, "counts": run.counts(),
            "error": None if run.error is None else f"{type(run.error).__name__}: {run.error}",
            "failures": [{"reason": r, "count": n, "workers": ids} for r, n, ids in groups],
            "thunk_failures": [{"reason": r, "count": n, "line": line} for r, n, line in thunks],
            "result": result_json.encode(run.result) if run.error is None else None,
        }  # fmt: skip
        click.echo(json.dumps(outcome, indent=2, default=str))
    elif code == EXIT_OK:
        click.echo(result_json.dumps(run.result))
    return code


class _Display:
    """Progress on stderr: redrawn in place on a terminal; piped, a line per phase change."""

    def __init__(self, run: Run, started: float, *, live: bool) -> None:
        self._run, self._started = run, started
        self._seen: list[str] = []
        self._wanted = live
        self._live: Any = None

    def tick(self) -> None:
        phases = progress.phase_progress(self._run)
        if self._wanted:
            if self._live is None:
                from rich.console import Console
                from rich.live import Live

                self._live = Live("", console=Console(stderr=True), refresh_per_second=4,
                                  transient=True)  # fmt: skip
                self._live.start()
            lines = [progress.phase_line(p) for p in phases]
            lines.append(progress.run_line(self._run, self._started, phases))
            self._live.update("\n".join(lines))
            return
        for p in phases[:-1]:  # a phase a later one followed is over: say so, once
            if p.name not in self._seen:
                self._seen.append(p.name)
                click.echo(progress.phase_line(p), err=True)

    def summary(self, status: str) -> None:
        """The last lines: each phase not yet said (piped: every phase exactly once), the run."""
        phases = progress.phase_progress(self._run)
        for p in phases:
            if p.name not in self._seen:
                self._seen.append(p.name)
                click.echo(progress.phase_line(p), err=True)
        click.echo(progress.run_line(self._run, self._started, phases, status), err=True)

    def pause(self) -> None:
        """Clear the live view for a prompt; the next tick draws it again."""
        self.stop()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
