"""The lead with scripted models: a good plan, a repaired plan, a failed run replanned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lead_scripts import (
    GOOD_PLAN,
    REFUSED_PLAN,
    REVISED_PLAN,
    ScriptedLead,
    ScriptedWorker,
    fenced,
)

from lead import BudgetSpent, LeadFailed, extract_program, plan_and_run, write_plan
from planlang.gate import ApprovedPlan, Decision, Gate, Policy
from runtime import LLM, Budget, Ledger, Role, Settings

SHEET = "FACT SHEET: three parts a, b, c; scan costs 1 credit; budget 20 credits."
SETTINGS = Settings(roles={"lead": Role(model="lead", price=2.0),
                           "scan": Role(model="scan", price=1.0)})  # fmt: skip


@pytest.fixture
def gate() -> Iterator[Gate]:
    gate = Gate(Policy(max_credits=20), settings=SETTINGS, inputs={"parts": ["a", "b", "c"]},
                seeds=2)  # fmt: skip
    yield gate
    gate.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    ledger = Ledger(tmp_path / "answers.db")
    yield ledger
    ledger.close()


def lead_llm(lead: ScriptedLead) -> LLM:
    return LLM(client=lead, budget=Budget(None), settings=SETTINGS)


def test_a_good_plan_is_approved_and_runs(gate: Gate, ledger: Ledger) -> None:
    lead = ScriptedLead([fenced(GOOD_PLAN)])
    worker = ScriptedWorker()
    workers = LLM(ledger, client=worker, budget=Budget(20), settings=SETTINGS)
    result = plan_and_run(SHEET, lead_llm(lead), workers, gate)
    assert result.status == "completed"
    assert result.findings == [{"file": f"{p}.py", "line": 3} for p in "abc"]
    assert len(lead.seen) == 1 and lead.seen[0][1]["content"] == SHEET
    assert result.history.attempts[0].source == GOOD_PLAN.strip("\n") + "\n"
    assert result.outcomes[0].calls == 3 and result.outcomes[0].credits == 3.0


def test_a_refused_plan_is_repaired_with_the_problems_fed_back(gate: Gate) -> None:
    lead = ScriptedLead([fenced(REFUSED_PLAN), fenced(GOOD_PLAN)])
    plan, history = write_plan(SHEET, lead_llm(lead), gate=gate)
    assert isinstance(plan, ApprovedPlan)
    assert plan.source == GOOD_PLAN.strip("\n") + "\n"
    assert [a.status for a in history.attempts] == ["refused", "approved"]
    told = lead.seen[1][-1]["content"]
    assert "plan.py:1:1: PL101" in told
    assert history.feedback == [told]
    assert history.calls == 2 and history.credits == 4.0


def test_a_lead_that_never_fixes_its_plan_gives_up_after_its_repairs(gate: Gate) -> None:
    lead = ScriptedLead([fenced(REFUSED_PLAN)])
    with pytest.raises(LeadFailed) as caught:
        write_plan(SHEET, lead_llm(lead), gate=gate, max_repairs=2)
    assert len(lead.seen) == 3
    assert len(caught.value.history.attempts) == 3
    assert "PL101" in str(caught.value)


def test_a_plan_over_the_budget_is_held_not_run() -> None:
    tight = Gate(Policy(max_credits=2), settings=SETTINGS, inputs={"parts": ["a", "b", "c"]},
                 seeds=2)  # fmt: skip
    try:
        decision, history = write_plan(SHEET, lead_llm(ScriptedLead([fenced(GOOD_PLAN)])),
                                       gate=tight)  # fmt: skip
    finally:
        tight.close()
    assert isinstance(decision, Decision) and decision.status == "held"
    assert any("over 2" in reason for reason in decision.reasons)
    assert history.attempts[-1].status == "held"


def test_a_run_that_fails_midway_is_replanned_without_paying_twice(
    gate: Gate, ledger: Ledger
) -> None:
    lead = ScriptedLead([fenced(GOOD_PLAN), fenced(REVISED_PLAN)])
    worker = ScriptedWorker(broken={"c": 2})  # part c: nonsense, then nonsense after repair
    workers = LLM(ledger, client=worker, budget=Budget(20), settings=SETTINGS)
    result = plan_and_run(SHEET, lead_llm(lead), workers, gate)

    assert result.status == "completed" and result.replans == 1
    first, second = result.outcomes
    assert first.status == "failed" and "TypeError" in (first.error or "")
    note = lead.seen[1][-1]["content"]
    assert "phase scan: workers 2 done, 1 failed" in note
    assert "'Scan part c'" in note and "does not match its schema" in note
    # Every question answered before the failure was asked of the model exactly once.
    assert worker.calls["Scan part a"] == 1 and worker.calls["Scan part b"] == 1
    # Part c: two paid turns in the first run, one new sample in the second.
    assert worker.calls["Scan part c"] == 3
    assert second.accounting["total"]["cached"] == 4
    assert second.credits == 1.0
    assert workers.budget.spent == first.credits + second.credits == 5.0
    assert result.findings == [{"file": f"{p}.py", "line": 3} for p in "abc"]


def test_the_replan_cap_stops_a_lead_that_cannot_adapt(gate: Gate, ledger: Ledger) -> None:
    lead = ScriptedLead([fenced(GOOD_PLAN)])  # writes the same crashing plan every time
    worker = ScriptedWorker(broken={"c": 99})
    workers = LLM(ledger, client=worker, budget=Budget(20), settings=SETTINGS)
    result = plan_and_run(SHEET, lead_llm(lead), workers, gate, max_replans=2)
    assert result.status == "failed"
    assert len(result.outcomes) == 3 and "replan cap 2" in (result.reason or "")
    assert worker.calls["Scan part c"] == 2  # the reruns replayed the failure from the ledger


def test_extract_program_takes_the_fence_or_the_whole_text() -> None:
    assert extract_program("prose\n```python\nx = 1\n```\nmore") == "x = 1\n"
    assert extract_program("```\ny = 2\n```") == "y = 2\n"
    assert extract_program("result = 3") == "result = 3\n"


def test_the_lead_does_not_wait_for_ever_at_a_spent_budget(gate: Gate) -> None:
    # One budget for the lead and its workers, as `bench eval` and `lead audit` use: 3 credits
    # pay for the first plan (2) and not for a second; nothing in flight can free any.
    shared = Budget(3)
    lead = ScriptedLead([fenced(REFUSED_PLAN), fenced(GOOD_PLAN)])
    with pytest.raises(BudgetSpent, match=r"budget is spent \(2 of 3 credits\)"):
        write_plan(SHEET, LLM(client=lead, budget=shared, settings=SETTINGS), gate=gate)
    assert len(lead.seen) == 1 and shared.paused == 0 and shared.reserved == 0


def test_plan_and_run_ends_with_the_reason_when_the_budget_cannot_pay_the_lead(
    gate: Gate, ledger: Ledger
) -> None:
    lead = ScriptedLead([fenced(GOOD_PLAN)])
    workers = LLM(ledger, client=ScriptedWorker(), budget=Budget(20), settings=SETTINGS)
    result = plan_and_run(SHEET, LLM(client=lead, budget=Budget(1), settings=SETTINGS),
                          workers, gate)  # fmt: skip
    assert result.status == "failed" and result.outcomes == []
    assert result.reason is not None and "budget is spent (0 of 1 credits)" in result.reason
    assert lead.seen == []  # nothing was sent: the call was refused before the client


def test_a_cached_lead_answer_is_free_even_at_a_spent_budget(gate: Gate, tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "lead.db")
    try:
        first = ScriptedLead([fenced(GOOD_PLAN)])
        write_plan(SHEET, LLM(ledger, client=first, budget=Budget(None), settings=SETTINGS),
                   gate=gate)  # fmt: skip
        again = ScriptedLead([fenced(GOOD_PLAN)])
        plan, history = write_plan(SHEET, LLM(ledger, client=again, budget=Budget(0),
                                              settings=SETTINGS), gate=gate)  # fmt: skip
        assert isinstance(plan, ApprovedPlan) and again.seen == [] and history.credits == 0
    finally:
        ledger.close()
