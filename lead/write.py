"""The lead writes the plan: ask the lead model, extract the program, check, repair, submit.

The lead model answers in prose with a program in it; we take the first ```python fence (or
the whole reply), and ``planlang.check`` has the last word. A refused program is not the end:
every problem goes back to the lead as ``file:line:col: CODE message`` and it tries again, a
bounded number of times, because a model that cannot fix its plan in a few turns will not fix
it in many. A checked program is priced and submitted to the gate; when the gate holds it for
problems met in rehearsal (a crash on the stand-in's data) those go back the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from planlang import PlanRefused, check
from planlang.gate import ApprovedPlan, Decision, Gate
from runtime import LLM

__all__ = [
    "Attempt",
    "BudgetSpent",
    "LeadFailed",
    "LeadHistory",
    "SYSTEM",
    "extract_program",
    "write_plan",
]

SYSTEM = (
    "ROLE: lead\n"
    "You plan a bug audit of a Python library. Write ONE program in the plan language (a "
    "small subset of Python: no import, class, try, with, global, async, names starting "
    "with _). Use the kit words of the fact sheet; fan out with parallel([lambda s=s: ...]); "
    "mark stages with phase(name); bind the final list to `result` = report(...). Stay "
    "within the budget: count the calls your plan makes times their prices. Answer with the "
    "program in one ```python fenced block."
)

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass
class Attempt:
    """One program the lead wrote and what became of it."""

    source: str
    problems: list[str] = field(default_factory=list)
    status: str = "refused"  # refused, approved, held


@dataclass
class LeadHistory:
    """The lead's whole conversation and every program it wrote, oldest first."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    credits: float = 0.0
    calls: int = 0

    @property
    def feedback(self) -> list[str]:
        """The problem texts fed back to the lead, in order."""
        return [m["content"] for m in self.messages[2:] if m["role"] == "user"]


class LeadFailed(PlanRefused):
    """The lead could not write a plan the check accepts within its repair turns."""

    def __init__(self, history: LeadHistory, problems: Any):
        super().__init__(problems, filename="plan.py")
        self.history = history
        self.message = (
            f"The lead wrote {len(history.attempts)} plans and the check refused every one; "
            f"the last: {self.message}"
        )
        self.args = (self.message,)


class BudgetSpent(RuntimeError):
    """The lead's call would pass the budget's cap, and no call in flight can free credits.

    A worker in a run waits at the cap, since a person may raise it; the lead writes its plans
    outside any run, so waiting there would wait for ever."""


def _refuse_to_wait(llm: LLM) -> Any:
    """An ``on_wait`` for the lead's calls: raise instead of waiting when nothing is reserved
    (called under the budget's lock, so it reads the plain properties, not ``snapshot``)."""
    budget = llm.budget

    def on_wait() -> None:
        if budget.reserved == 0:
            raise BudgetSpent(
                f"The budget is spent ({budget.spent:g} of {budget.cap:g} credits): the lead "
                "cannot ask for another plan, and no call in flight can free credits."
            )

    return on_wait


def extract_program(text: str) -> str:
    """The program in a reply: the first ```python (or bare ```) fence, else the whole text."""
    match = _FENCE.search(text)
    body = match.group(1) if match else text
    return body.strip("\n") + "\n"


def write_plan(
    sheet: str,
    llm: LLM,
    *,
    gate: Gate,
    max_repairs: int = 3,
    history: LeadHistory | None = None,
    note: str | None = None,
) -> tuple[ApprovedPlan | Decision, LeadHistory]:
    """Ask the lead for a plan from ``sheet``; return the approved plan (or the gate's hold).

    ``history`` and ``note`` continue an earlier conversation (a replan: ``note`` says what
    happened). Raises ``LeadFailed`` when no program passes the check within ``max_repairs``
    repair turns; rehearsal problems that make the gate hold the plan are fed back too, and the
    last ``Decision`` is returned when they remain.
    """
    if max_repairs < 0:
        raise ValueError(f"max_repairs must be 0 or more; got {max_repairs!r}.")
    history = history if history is not None else LeadHistory()
    if not history.messages:
        history.messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": sheet},
        ]
    if note:
        history.messages.append({"role": "user", "content": note})
    turns_left = max_repairs
    while True:
        reply = llm.chat(list(history.messages), role="lead", on_wait=_refuse_to_wait(llm))
        history.calls += 1
        history.credits += reply.billed
        history.messages.append({"role": "assistant", "content": reply.text})
        source = extract_program(reply.text)
        attempt = Attempt(source)
        history.attempts.append(attempt)
        checked = check(source, "plan.py")
        if not checked.ok:
            attempt.problems = [p.render() for p in checked.problems]
            if turns_left == 0:
                raise LeadFailed(history, checked.problems)
            turns_left -= 1
            history.messages.append({"role": "user", "content": _refused_text(attempt)})
            continue
        decision = gate.submit(source, "plan.py")
        attempt.status = decision.status
        if decision.approved and decision.plan is not None:
            return decision.plan, history
        attempt.problems = [
            *decision.reasons,
            *(p.render("plan.py") for p in decision.price.problems),
        ]
        if not decision.price.problems or turns_left == 0:
            return decision, history  # held for money or wall time: a person decides
        turns_left -= 1
        history.messages.append({"role": "user", "content": _held_text(attempt)})


def _refused_text(attempt: Attempt) -> str:
    listed = "\n".join(attempt.problems)
    return (
        "The check refused your plan:\n"
        f"{listed}\n"
        "Fix every problem and answer with the whole corrected program in one ```python block."
    )


def _held_text(attempt: Attempt) -> str:
    listed = "\n".join(attempt.problems)
    return (
        "The gate held your plan; a rehearsal on made-up answers met these problems:\n"
        f"{listed}\n"
        "Make the plan robust to any answer (a worker may return None or an empty list) and "
        "answer with the whole corrected program in one ```python block."
    )
