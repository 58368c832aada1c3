"""Requests to a live run from another shell: ``planlang raise RUN CAP`` and ``planlang cancel
RUN``, sent as files in the run's ``requests/`` folder and answered by the run beside them.

The sender drops a request and waits for its answer; the run claims it (an atomic rename, after
which it can no longer be withdrawn), acts on it by the rule the terminal's prompt uses
(``cap_refusal``: a cap must be above what is spent, which only the run knows exactly) and
answers atomically. A request not claimed in time is withdrawn, so it is never taken unseen.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from pathlib import Path
from typing import Any

from runtime import Run

__all__ = ["apply_requests", "cap_refusal", "send_request", "take_requests"]


def cap_refusal(new_cap: float, run: Run) -> str | None:
    """Why ``run`` refuses ``new_cap`` as its cap, in one sentence; None if it takes it.

    The one rule for a cap asked at the terminal and by ``planlang raise`` alike: it must be
    above what the run has spent, which only the run itself knows exactly (read here, as the
    cap is set, not when the request was made)."""
    if not math.isfinite(new_cap):
        return f"The new cap must be a finite number of credits, not {new_cap}."
    spent = run.llm.budget.snapshot()[0]
    if new_cap <= spent:
        return f"The new cap must be above what is spent ({spent:.4g})."
    return None


def send_request(folder: Path, request: dict[str, Any], *,
                 wait: float = 10.0) -> tuple[bool, str | None]:  # fmt: skip
    """Drop a request for the live run of ``folder``; whether the run took it, and if not why.

    The run claims a request (renames it), acts on it and answers beside it (``take_requests``);
    one not claimed within ``wait`` seconds is withdrawn, so it is never taken unseen later."""
    inbox = folder / "requests"
    inbox.mkdir(exist_ok=True)
    path = inbox / f"{time.time():.6f}-{secrets.token_hex(3)}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(request), encoding="utf-8")
    tmp.replace(path)
    answer = path.with_suffix(".answer")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if answer.exists():
            return _read_answer(answer)
        time.sleep(0.05)
    try:
        path.unlink()  # not claimed in time: withdrawn
    except FileNotFoundError:  # claimed at the last moment: its answer is on its way
        for _ in range(40):
            if answer.exists():
                return _read_answer(answer)
            time.sleep(0.05)
        return True, None  # taken by a run that does not answer (one of an older planlang)
    return False, f"no answer within {wait:g} s (the request is withdrawn); is it still running?"


def _read_answer(answer: Path) -> tuple[bool, str | None]:
    try:
        said = json.loads(answer.read_text(encoding="utf-8"))
        answer.unlink(missing_ok=True)
        return bool(said["taken"]), said.get("why")
    except (OSError, ValueError, TypeError, KeyError) as error:
        return False, f"the run's answer cannot be read: {error}"


def apply_requests(run: Run, folder: Path) -> list[str]:
    """Take the requests other shells dropped for this run; what was done, one line each."""
    return [line for line, _ in take_requests(run, folder)]


def take_requests(run: Run, folder: Path) -> list[tuple[str, bool]]:
    """Take the requests other shells dropped for this run, each answered beside it (taken, or
    refused and why); per request one line saying what was done, and whether it was taken."""
    inbox = folder / "requests"
    if not inbox.is_dir():
        return []
    done: list[tuple[str, bool]] = []
    for path in sorted(inbox.glob("*.json")):
        claimed = path.with_suffix(".claimed")
        try:
            path.rename(claimed)  # atomic: the sender can no longer withdraw it
            request = json.loads(claimed.read_text(encoding="utf-8"))
        except FileNotFoundError:  # withdrawn (the sender gave up waiting)
            continue
        except (OSError, ValueError) as error:
            request = {"unreadable": str(error)}
        line, why = _take(run, request)
        _answer(path.with_suffix(".answer"), why)
        claimed.unlink(missing_ok=True)
        done.append((line, why is None))
    return done


def _take(run: Run, request: Any) -> tuple[str, str | None]:
    """Act on one request: what was done, and why it was refused (None: it was taken)."""
    if isinstance(request, dict) and "raise" in request:
        try:
            cap = float(request["raise"])
        except (TypeError, ValueError):
            why = f"The new cap is not a number: {request['raise']!r}."
            return f"A raise was refused (planlang raise): {why}", why
        refused = cap_refusal(cap, run)
        if refused is not None:
            return f"A raise to {cap:.4g} was refused (planlang raise): {refused}", refused
        old = run.llm.budget.snapshot()[2]
        run.llm.budget.raise_to(cap)
        run.log_events.emit("cap_raised", cap=cap, by="request")
        moved = "lowered" if old is not None and cap < old else "raised"  # above spent, below cap
        return f"The cap was {moved} to {cap:.4g} (planlang raise).", None
    if isinstance(request, dict) and request.get("cancel"):
        run.cancel("cancelled by request (planlang cancel)")
        return "Cancelled by request (planlang cancel).", None
    why = f"Not a request this run takes: {str(request)[:80]}."
    return f"A request was refused: {why}", why


def _answer(path: Path, why: str | None) -> None:
    """Answer a request atomically beside it: the sender reads all of it or nothing."""
    tmp = path.with_suffix(".answer-tmp")
    try:
        tmp.write_text(json.dumps({"taken": why is None, "why": why}), encoding="utf-8")
        tmp.replace(path)
    except OSError:  # the sender then says it was not taken in time
        tmp.unlink(missing_ok=True)
