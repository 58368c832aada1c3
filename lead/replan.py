"""Running the lead's plan, and replanning when the run fails.

A run can fail part way: the plan's own code crashes on an answer it did not expect, a limit
stops it, or the run ends (the budget is spent, a replay misses). The lead then learns what
finished (workers per phase, from the run's thread records) and why the failing part failed,
and writes a revised plan. Nothing finished is paid twice: every answer is in the ledger, so
the revised plan's questions that were already asked are answered free. A cap on replans stops
a lead that cannot adapt.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lead.write import BudgetSpent, LeadHistory, write_plan
from planlang.gate import ApprovedPlan, Decision, Gate
from planlang.run import RunOutcome, start_run, wait_for
from runtime import LLM

__all__ = ["AuditResult", "RunOutcome", "failure_note", "findings_of", "plan_and_run", "run_plan"]

_POLL = 0.05


def run_plan(
    plan: ApprovedPlan,
    llm: LLM,
    *,
    title: str = "audit",
    concurrency: int | None = None,
    events_path: str | None = None,
) -> RunOutcome:
    """Run ``plan`` on a fresh ``Run`` of ``llm``; a run stuck at a spent budget is cancelled.

    A worker that waits at the cap with no call in flight can never go on in a batch run (no
    one raises the cap), so the run is ended with a reason instead of hanging.
    """
    run = start_run(plan, llm, title=title, concurrency=concurrency, events_path=events_path)
    return wait_for(run, poll=_POLL, stop_when_spent=True)


def findings_of(result: Any) -> list[dict[str, Any]]:
    """The findings a plan's result holds: a list of dicts, or ``{"findings": [...]}``."""
    if isinstance(result, dict):
        result = result.get("findings", result.get("bugs"))
    if not isinstance(result, list):
        return []
    return [dict(item) for item in result if isinstance(item, dict)]


def failure_note(outcome: RunOutcome, llm: LLM) -> str:
    """What the lead is told after a failed run: what finished, what failed and why."""
    phases: dict[str, Counter[str]] = defaultdict(Counter)
    errors: dict[str, str] = {}
    for worker in outcome.workers:
        phases[worker["phase"]][worker["status"]] += 1
        if worker["status"] == "failed" and worker["phase"] not in errors:
            asked = worker["prompt"].splitlines()[0] if worker["prompt"] else ""
            errors[worker["phase"]] = f"{worker['label']} ({asked!r}): {worker['error']}"
    lines = [f"Your plan's run failed: {outcome.error}", "What finished before that:"]
    if not phases:
        lines.append("  nothing: no worker was started.")
    for phase, counts in phases.items():
        done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        lines.append(f"  phase {phase}: workers {done}")
        if phase in errors:
            lines.append(f"    first failure: {errors[phase]}")
    spent, _, cap = llm.budget.snapshot()
    left = "unlimited" if cap is None else f"{cap - spent:g}"
    lines += [
        f"Credits spent so far: {spent:g}; left: {left}.",
        "Every answer that finished is stored: asking exactly the same again (same shard, "
        "lens, sample) is free. Write a revised plan that avoids the failure, in one "
        "```python block.",
    ]
    return "\n".join(lines)


@dataclass
class AuditResult:
    """The whole path: the lead's plans, each run, and the findings of the last good run."""

    status: str  # completed, held, failed
    findings: list[dict[str, Any]]
    outcomes: list[RunOutcome] = field(default_factory=list)
    history: LeadHistory = field(default_factory=LeadHistory)
    decision: Decision | None = None
    reason: str | None = None

    @property
    def replans(self) -> int:
        return max(0, len(self.outcomes) - 1)


def plan_and_run(
    sheet: str,
    lead_llm: LLM,
    worker_llm: LLM,
    gate: Gate,
    *,
    max_replans: int = 2,
    max_repairs: int = 3,
    concurrency: int | None = None,
    on_outcome: Callable[[RunOutcome], None] | None = None,
) -> AuditResult:
    """Write a plan, run it, and replan after a failure at most ``max_replans`` times."""
    if max_replans < 0:
        raise ValueError(f"max_replans must be 0 or more; got {max_replans!r}.")
    history = LeadHistory()
    audit = AuditResult("failed", [], history=history)
    note: str | None = None
    for attempt in range(max_replans + 1):
        try:
            plan, history = write_plan(sheet, lead_llm, gate=gate, max_repairs=max_repairs,
                                       history=history, note=note)  # fmt: skip
        except BudgetSpent as exc:
            audit.reason = str(exc)
            return audit
        if isinstance(plan, Decision):
            audit.status, audit.decision = "held", plan
            audit.reason = "the gate held the plan: " + "; ".join(plan.reasons)
            return audit
        outcome = run_plan(plan, worker_llm, title=f"audit plan {attempt + 1}",
                           concurrency=concurrency)  # fmt: skip
        audit.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
        if outcome.ok:
            audit.status, audit.findings = "completed", findings_of(outcome.result)
            return audit
        note = failure_note(outcome, worker_llm)
    audit.reason = (
        f"the lead's plans failed {max_replans + 1} times (replan cap {max_replans}); "
        f"last: {audit.outcomes[-1].error}"
    )
    return audit
