"""The run's one-line status, for live displays (``planlang run`` redraws it)."""

from __future__ import annotations

from .budget import Budget

__all__ = ["statusline"]


def statusline(title: str, status: str, phase: str, counts: dict[str, int], budget: Budget) -> str:
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
