"""What a live display reads of a run: its status line, its workers' progress, its records.

Kept apart from ``runtime.run`` (a run's work) as the read side of it: each method takes the
run's lock for a consistent copy and hands back plain data, never the run's own structures.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .budget import Budget

if TYPE_CHECKING:
    from .llm import LLM
    from .records import WorkerRecord

__all__ = ["RunView", "statusline"]


class RunView:
    """The display methods of ``Run`` (which it is mixed into)."""

    _lock: threading.Lock
    _counts: dict[str, int]
    _status: str
    threads: list[WorkerRecord]
    phases: list[str]
    fanned: dict[str, int]
    title: str
    phase_name: str
    llm: LLM

    @property
    def paused(self) -> bool:
        """True while some worker waits at the budget cap."""
        return self.llm.budget.paused > 0

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def progress(self) -> tuple[list[tuple[str, str]], list[str], dict[str, int]]:
        """(phase, status) of every worker, the phases in order, and thunks fanned per phase."""
        with self._lock:
            records = [(record.phase, record.status) for record in self.threads]
            return records, list(self.phases), dict(self.fanned)

    def statusline(self) -> str:
        """One line for a live display: phase, workers, credits, and whether it is paused."""
        return statusline(self.title, self._status, self.phase_name, self.counts(),
                          self.llm.budget)  # fmt: skip

    def threads_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [record.to_dict() for record in self.threads]


def statusline(title: str, status: str, phase: str, counts: dict[str, int], budget: Budget) -> str:
    """The run's one-line status, for live displays (``planlang run`` redraws it)."""
    spent, _, cap = budget.snapshot()
    money = f"credits {spent:.4g}" + ("" if cap is None else f"/{cap:.4g}")
    line = (
        f"{title} · {status} · phase {phase} · workers "
        f"{counts['running']} running, {counts['done']} done, {counts['failed']} failed"
    )
    if counts["refused"]:
        line += f", {counts['refused']} refused"
    line += f" · {money}"
    waiting = budget.paused
    if waiting:
        line += f" · PAUSED at the budget ({waiting} waiting; raise the cap to go on)"
    return line
