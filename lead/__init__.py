"""lead: the lead reads a one-page fact sheet, writes the audit plan, and replans on failure.

    sheet = scout("data/algos", budget=40, prices={"scan": ("small", 1.0), ...})
    plan, history = write_plan(sheet, llm, gate=gate)        # ApprovedPlan, or the gate's hold
    result = plan_and_run(sheet, lead_llm, worker_llm, gate)  # runs, replans after a failure

See docs/LEAD.md.
"""

from lead.replan import AuditResult, RunOutcome, failure_note, findings_of, plan_and_run, run_plan
from lead.scout import audited_root, corpus_files, scout
from lead.write import Attempt, BudgetSpent, LeadFailed, LeadHistory, extract_program, write_plan

__all__ = [
    "Attempt",
    "AuditResult",
    "BudgetSpent",
    "LeadFailed",
    "LeadHistory",
    "RunOutcome",
    "audited_root",
    "corpus_files",
    "extract_program",
    "failure_note",
    "findings_of",
    "plan_and_run",
    "run_plan",
    "scout",
    "write_plan",
]
