"""What ``planlang run`` shows while a run goes: per phase, and for the whole run.

Per phase: workers done of the total (known once a fan-out starts: the number of thunks handed
to ``parallel``/``stream`` in that phase), running, failed, answers from the ledger (cached);
for the run: credits of the cap, elapsed time and an estimate of what is left. On a terminal
it is redrawn in place; piped, it is one line per phase change and a final summary, each a
single line however long (so ``grep`` finds it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from runtime import Run

__all__ = ["PhaseProgress", "phase_line", "phase_progress", "run_line"]


@dataclass(frozen=True)
class PhaseProgress:
    name: str
    total: int
    done: int
    running: int
    failed: int
    cached: int
    cancelled: int = 0  # not failed: stopped by a cancel, a budget or Ctrl-C (newuser23)


def phase_progress(run: Run) -> list[PhaseProgress]:
    counts: dict[str, dict[str, int]] = {}
    records, phases, fanned = run.progress()
    for phase, status in records:
        per = counts.setdefault(phase, {"running": 0, "done": 0, "failed": 0, "cancelled": 0,
                                        "all": 0})  # fmt: skip
        per["all"] += 1
        if status in ("failed", "refused"):
            per["failed"] += 1
        elif status in per:
            per[status] += 1
    tallies = run.accounting.to_dict().get("phases", {})
    shown = []
    for name in phases:
        per = counts.get(name, {"running": 0, "done": 0, "failed": 0, "cancelled": 0, "all": 0})
        if not per["all"] and name not in fanned:
            continue
        total = max(fanned.get(name, 0), per["all"])
        cached = int(tallies.get(name, {}).get("cached", 0))
        shown.append(PhaseProgress(name, total, per["done"], per["running"], per["failed"],
                                   cached, per["cancelled"]))  # fmt: skip
    return shown


def phase_line(p: PhaseProgress) -> str:
    cancelled = f", {p.cancelled} cancelled" if p.cancelled else ""
    return (f"phase {p.name}: {p.done}/{p.total} done, {p.running} running, {p.failed} failed"
            f"{cancelled}, {p.cached} cached")  # fmt: skip


def run_line(run: Run, started: float, phases: list[PhaseProgress] | None = None,
             status: str | None = None) -> str:  # fmt: skip
    """Credits of the cap, elapsed, ETA (from the pace so far), and a pause if there is one."""
    phases = phase_progress(run) if phases is None else phases
    spent, _, cap = run.llm.budget.snapshot()
    elapsed = time.monotonic() - started
    money = f"credits {spent:.4g}" + ("" if cap is None else f" of {cap:.4g}")
    line = f"{run.title} · {status or run.status} · {money} · elapsed {_clock(elapsed)}"
    finished = sum(p.done + p.failed + p.cancelled for p in phases)
    left = sum(max(p.total - p.done - p.failed - p.cancelled, 0) for p in phases)
    if run.status == "running" and finished and left:
        line += f" · ETA {_clock(elapsed / finished * left)}"
    if run.paused:
        line += f" · PAUSED at the budget ({run.llm.budget.paused} waiting)"
    return line


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"
