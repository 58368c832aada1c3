"""The whole path of an audit: fact sheet, the lead's plan, the gate, the run, replans.

``audit`` wires the parts the way a user runs them: one settings object says which model plays
each role and what it costs; one ledger keeps every answer (so a rerun, and every replan, pays
only for new questions); one budget caps the lead and the workers together; the kit's words are
the plan's host words. Callers that want another model (a simulated one, a scripted one) pass
their own client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lead.replan import AuditResult, plan_and_run
from lead.scout import audited_root, scout
from planlang.binding import HostProvider
from planlang.gate import Gate, Policy
from runtime import LLM, Budget, Client, Ledger, Role, Run, Settings

__all__ = ["DEFAULT_ROLES", "AuditSetup", "audit", "kit_host", "settings_with_roles"]

# Credits per call when the configuration names no price: a lead call reads and writes the
# most, a scan reads a shard, a skeptic reads a batch of short findings.
DEFAULT_ROLES: dict[str, dict[str, Any]] = {
    "lead": {"model": "lead", "price": 2.0},
    "scan": {"model": "scan", "price": 1.0},
    "skeptic": {"model": "skeptic", "price": 0.25},
}


def settings_with_roles(settings: Settings | None = None, model: str | None = None) -> Settings:
    """``settings`` with a lead, scan and skeptic role each (``model`` for all, if given)."""
    base = settings or Settings()
    roles = {name: dict(spec) for name, spec in DEFAULT_ROLES.items()}
    for name, role in base.roles.items():
        roles[name] = {"model": role.model, "price": role.price}
    if model:
        for spec in roles.values():
            spec["model"] = model
    return base.model_copy(update={"roles": {name: Role(**spec) for name, spec in roles.items()}})


def kit_host(corpus: str | Path, **options: Any) -> HostProvider:
    """The audit kit's words for ``corpus`` as a gate's host provider (imported lazily)."""
    from kit.audit_words import audit_words  # the lead depends on the kit only when it audits

    root = str(audited_root(corpus))

    def provide(run: Run) -> Mapping[str, Any]:
        return audit_words(run, corpus=root, **options)

    return provide


@dataclass
class AuditSetup:
    """Everything one audit needs besides the corpus."""

    client: Client
    budget: float
    settings: Settings
    ledger_path: str | Path = ":memory:"
    max_replans: int = 2
    max_repairs: int = 3
    concurrency: int | None = None


def audit(corpus: str | Path, setup: AuditSetup, host: HostProvider | None = None) -> AuditResult:
    """Scout ``corpus``, let the lead write a plan, approve it, run it, replan on failure."""
    settings = setup.settings
    prices = {name: (role.model, role.price) for name, role in settings.roles.items()}
    sheet = scout(corpus, setup.budget, prices)
    ledger = Ledger(setup.ledger_path)
    try:
        llm = LLM(ledger, client=setup.client, budget=Budget(setup.budget), settings=settings)
        gate = Gate(Policy(max_credits=setup.budget), settings=settings,
                    host=host or kit_host(corpus))  # fmt: skip
        try:
            return plan_and_run(sheet, llm, llm, gate, max_replans=setup.max_replans,
                                max_repairs=setup.max_repairs,
                                concurrency=setup.concurrency)  # fmt: skip
        finally:
            gate.close()
    finally:
        ledger.close()
