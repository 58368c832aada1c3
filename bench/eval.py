"""``python -m bench eval``: five plan designs and three ablations on one corpus, scored.

Every design is a plan in the plan language that goes the one way any plan goes: gate (check
and price) -> ApprovedPlan -> Run. The designs: (1) one agent reading the library in as few
calls as fit its context; (2) one agent given the money the workflow spent, as more samples;
(3) a lead that hands out one task at a time and reads every report; (4) the fixed workflow
(every shard through every lens, skeptics, vote); (5) the plan the lead writes from the fact
sheet. Ablations of (4): no skeptics (H4), a second scan round (H5), skeptics shown the result
of running the failing call (H6). Verdicts are computed from the measured numbers only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.score import match
from bench.simulated import SampleTellingLLM
from lead import findings_of, plan_and_run, run_plan, scout
from lead.audit import kit_host
from lead.scout import audited_root
from planlang.gate import Decision, Gate, Policy
from runtime import Budget, Client, Ledger, Settings

__all__ = ["DesignRun", "EvalReport", "Setup", "Verdict", "evaluate", "render", "verdicts"]

DESIGNS = Path(__file__).with_name("designs")
LENSES = ["boundaries", "logic", "state", "general"]


@dataclass
class DesignRun:
    """One design's measured run."""

    id: str
    name: str
    budget: float | None
    status: str
    recall: float = 0.0
    precision: float = 0.0
    credits: float = 0.0
    calls: int = 0
    wall_seconds: float = 0.0
    found: list[str] = field(default_factory=list)
    findings: int = 0
    skeptic_accuracy: float | None = None
    note: str = ""
    repeats: int = 1

    @property
    def f1(self) -> float:
        total = self.recall + self.precision
        return 2 * self.recall * self.precision / total if total else 0.0


@dataclass
class Verdict:
    id: str
    claim: str
    holds: bool | None  # None: a design it needs did not complete
    evidence: str


@dataclass
class EvalReport:
    title: str
    corpus: str
    model: str
    budget: float
    runs: list[DesignRun]
    verdicts: list[Verdict]
    command: str = ""

    def run(self, design_id: str) -> DesignRun:
        return next(r for r in self.runs if r.id == design_id)


@dataclass
class Setup:
    corpus: Path
    key: dict[str, Any]
    settings: Settings
    make_client: Callable[[int], Client]  # seed -> client
    budget: float
    shard_tokens: int = 20_000
    context_tokens: int = 100_000
    ledger_path: str = ":memory:"
    seed: int = 0


def _design(name: str) -> str:
    return (DESIGNS / f"{name}.py").read_text(encoding="utf-8")


def _cost(accounting: Mapping[str, Any], settings: Settings) -> float:
    """What the calls are worth at the roles' prices, whether paid now or replayed."""
    roles = accounting.get("roles", {})
    return round(sum(t["calls"] * settings.role(name).price for name, t in roles.items()), 6)


def _score(run: DesignRun, result: Any, setup: Setup) -> None:
    findings = findings_of(result)
    score = match(findings, setup.key, library=audited_root(setup.corpus))
    run.recall, run.precision = score.recall, score.precision
    run.found, run.findings = list(score.found), len(findings)
    if isinstance(result, dict) and result.get("verdicts"):
        run.skeptic_accuracy = _skeptic_accuracy(result, setup)


def _skeptic_accuracy(result: Mapping[str, Any], setup: Setup) -> float | None:
    """Share of skeptic verdicts that agree with the key (a candidate is real when it scores)."""
    library = audited_root(setup.corpus)
    truth = {}
    for candidate in result.get("candidates") or []:
        key = f"{candidate.get('file')}::{candidate.get('function')}"
        truth[key] = bool(match([candidate], setup.key, library=library).found)
    judged = [v for votes in result["verdicts"] for v in votes if v.get("key") in truth]
    if not judged:
        return None
    return sum(bool(v.get("real")) == truth[v["key"]] for v in judged) / len(judged)


def run_design(
    setup: Setup, design_id: str, name: str, source: str, inputs: dict[str, Any],
    budget: float | None,
) -> DesignRun:  # fmt: skip
    """Gate, approve and run one design's plan on a fresh ledger and budget; score it."""
    row = DesignRun(design_id, name, budget, "failed")
    ledger = Ledger(setup.ledger_path)
    gate = Gate(Policy(max_credits=budget), settings=setup.settings, host=_host(setup),
                inputs=inputs, seeds=2)  # fmt: skip
    try:
        llm = _llm(setup, ledger, budget)
        decision = gate.submit(source, f"{design_id}.py")
        if decision.plan is None:
            row.status, row.note = "held", "; ".join(decision.reasons)
            return row
        outcome = run_plan(decision.plan, llm, title=name)
        row.status, row.note = outcome.status, outcome.error or ""
        row.credits, row.calls = _cost(outcome.accounting, setup.settings), outcome.calls
        row.wall_seconds = outcome.wall_seconds
        if outcome.ok:
            _score(row, outcome.result, setup)
        return row
    finally:
        gate.close()
        ledger.close()


def run_lead_design(setup: Setup) -> DesignRun:
    """Design 5: the lead writes the plan from the fact sheet; it runs with replans."""
    row = DesignRun("5", "lead's plan from the fact sheet", setup.budget, "failed")
    prices = {name: (role.model, role.price) for name, role in setup.settings.roles.items()}
    sheet = scout(setup.corpus, setup.budget, prices)
    ledger = Ledger(setup.ledger_path)
    gate = Gate(Policy(max_credits=setup.budget), settings=setup.settings, host=_host(setup),
                seeds=2)  # fmt: skip
    try:
        llm = _llm(setup, ledger, setup.budget)
        started = time.perf_counter()
        result = plan_and_run(sheet, llm, llm, gate)
        row.wall_seconds = time.perf_counter() - started
        row.status, row.note = result.status, result.reason or ""
        lead_calls = result.history.calls
        row.calls = lead_calls + sum(o.calls for o in result.outcomes)
        row.credits = lead_calls * setup.settings.role("lead").price + sum(
            _cost(o.accounting, setup.settings) for o in result.outcomes
        )
        if result.status == "completed":
            _score(row, result.outcomes[-1].result, setup)
        elif isinstance(result.decision, Decision):
            row.note = "; ".join(result.decision.reasons)
        return row
    finally:
        gate.close()
        ledger.close()


def _llm(setup: Setup, ledger: Ledger, budget: float | None) -> SampleTellingLLM:
    """A fresh LLM for one design: the setup's client for its seed, a budget of ``budget``.
    It tells the client each question's sample number: a simulated client seeds its answer by
    it, so parallel samples get the same answers whichever thread asks first."""
    return SampleTellingLLM(ledger, client=setup.make_client(setup.seed), budget=Budget(budget),
                            settings=setup.settings)  # fmt: skip


def _host(setup: Setup) -> Any:
    return kit_host(setup.corpus)


def evaluate(setup: Setup) -> list[DesignRun]:
    """Run every design and ablation; returns the rows in the report's order."""
    fixed = {"shard_tokens": setup.shard_tokens, "lenses": LENSES, "rounds": 1, "skeptics": 3,
             "need": 2, "batch": 8, "verify": False}  # fmt: skip
    one = {"context_tokens": setup.context_tokens, "samples": 1}
    b = setup.budget
    runs = [run_design(setup, "1", "one agent alone", _design("one_agent"), one, b)]
    workflow = run_design(setup, "4", "fixed workflow (every shard x lens, skeptics, vote)",
                          _design("fixed"), fixed, b)  # fmt: skip
    scan_price = setup.settings.role("scan").price
    shards_read = max(1, runs[0].calls)
    samples = max(1, math.floor(workflow.credits / (shards_read * scan_price)))
    same_money = dict(one, samples=samples)
    runs.append(run_design(setup, "2", f"one agent, same money as 4 ({samples} samples)",
                           _design("one_agent"), same_money, workflow.credits or b))  # fmt: skip
    per_task = scan_price + setup.settings.role("lead").price
    tasks = {"shard_tokens": setup.shard_tokens, "lenses": LENSES,
             "max_tasks": max(1, math.floor(b / per_task))}  # fmt: skip
    runs.append(run_design(setup, "3", "lead hands out tasks one at a time",
                           _design("orchestrator"), tasks, b))  # fmt: skip
    runs.append(workflow)
    runs.append(run_lead_design(setup))
    runs.append(run_design(setup, "4-noskep", "4 without skeptics (H4)", _design("fixed"),
                           dict(fixed, skeptics=0), b))  # fmt: skip
    runs.append(run_design(setup, "4-round2", "4 with a second scan round, 2x budget (H5)",
                           _design("fixed"), dict(fixed, rounds=2), 2 * b))  # fmt: skip
    runs.append(run_design(setup, "4-verify", "4 with the failing call run for skeptics (H6)",
                           _design("fixed"), dict(fixed, verify=True), b))  # fmt: skip
    return runs


def evaluate_repeated(setup: Setup, repeats: int) -> list[DesignRun]:
    """``evaluate`` with seeds ``setup.seed`` .. ``+ repeats - 1``; each row the mean of its runs
    (a simulated run of 12 bugs is one noisy draw; the mean is what a verdict should rest on)."""
    rounds = [evaluate(replace(setup, seed=setup.seed + i)) for i in range(repeats)]
    return [_mean([runs[i] for runs in rounds]) for i in range(len(rounds[0]))]


def _mean(rows: list[DesignRun]) -> DesignRun:
    first = rows[0]
    failed = [r for r in rows if r.status != "completed"]
    accuracies = [r.skeptic_accuracy for r in rows if r.skeptic_accuracy is not None]

    def avg(name: str) -> float:
        return sum(float(getattr(r, name)) for r in rows) / len(rows)

    budgets = [r.budget for r in rows if r.budget is not None]
    budget = round(sum(budgets) / len(budgets), 6) if len(budgets) == len(rows) else None
    return DesignRun(
        first.id, first.name, budget,
        failed[0].status if failed else "completed",
        recall=avg("recall"), precision=avg("precision"), credits=round(avg("credits"), 6),
        calls=round(avg("calls")), wall_seconds=avg("wall_seconds"),
        found=sorted({bug for r in rows for bug in r.found}),
        findings=round(avg("findings")),
        skeptic_accuracy=sum(accuracies) / len(accuracies) if accuracies else None,
        note="; ".join(dict.fromkeys(r.note for r in rows if r.note)),
        repeats=len(rows),
    )  # fmt: skip


def verdicts(runs: list[DesignRun]) -> list[Verdict]:
    """Each hypothesis judged from the rows' numbers (never written by hand)."""
    rows = {r.id: r for r in runs}

    def done(*ids: str) -> bool:
        return all(i in rows and rows[i].status == "completed" for i in ids)

    out = []
    w, one, money = rows.get("4"), rows.get("1"), rows.get("2")
    for vid, other, claim in (
        ("H1", one, "the workflow beats one agent"),
        ("H1b", money, "it beats one agent given the same money"),
    ):
        if w is None or other is None or not done("4", other.id):
            out.append(Verdict(vid, claim + " (F1)", None, "a design did not complete"))
            continue
        out.append(
            Verdict(
                vid,
                claim + " (F1)",
                w.f1 > other.f1,
                f"F1 {w.f1:.3f} (design 4) vs {other.f1:.3f} (design {other.id})",
            )
        )
    claim = "skeptics raise precision by >= 0.15 at a cost of <= 0.05 recall"
    if done("4", "4-noskep"):
        raw = rows["4-noskep"]
        gain, loss = w.precision - raw.precision, raw.recall - w.recall  # type: ignore[union-attr]
        out.append(
            Verdict(
                "H4",
                claim,
                gain >= 0.15 and loss <= 0.05,
                f"precision +{gain:.3f}, recall -{loss:.3f}",
            )
        )
    else:
        out.append(Verdict("H4", claim, None, "a design did not complete"))
    claim = "a second scan round adds bugs"
    if done("4", "4-round2"):
        gain = rows["4-round2"].recall - w.recall  # type: ignore[union-attr]
        added = sorted(set(rows["4-round2"].found) - set(w.found))  # type: ignore[union-attr]
        evidence = f"mean recall +{gain:.3f}; never found in one round: {', '.join(added) or '-'}"
        out.append(Verdict("H5", claim + " (mean recall)", gain > 0, evidence))
    else:
        out.append(Verdict("H5", claim, None, "a design did not complete"))
    claim = "running the failing call makes skeptics more accurate"
    acc, vacc = (
        (w.skeptic_accuracy if w else None),
        rows["4-verify"].skeptic_accuracy if "4-verify" in rows else None,
    )
    if done("4", "4-verify") and acc is not None and vacc is not None:
        out.append(
            Verdict(
                "H6",
                claim,
                vacc > acc,
                f"skeptic accuracy {vacc:.3f} with verification vs {acc:.3f} without",
            )
        )
    else:
        out.append(Verdict("H6", claim, None, "no skeptic verdicts to compare"))
    return out


def render(report: EvalReport) -> str:
    """The report as markdown: one row per design, one verdict per hypothesis."""
    lines = [
        f"# {report.title}",
        "",
        f"Corpus `{report.corpus}`, model {report.model}, budget {report.budget:g} credits "
        "per design unless its name says otherwise; each row is the mean of "
        f"{report.runs[0].repeats if report.runs else 0} run(s).",
        "",
        "| design | name | status | recall | precision | F1 | credits | calls | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report.runs:
        lines.append(
            f"| {r.id} | {r.name} | {r.status} | {r.recall:.3f} | {r.precision:.3f} | "
            f"{r.f1:.3f} | {r.credits:g} | {r.calls} | {r.wall_seconds:.2f} |"
        )
    lines += ["", "| hypothesis | claim | verdict | from the numbers |", "|---|---|---|---|"]
    for v in report.verdicts:
        verdict = {True: "holds", False: "does not hold", None: "undecided"}[v.holds]
        lines.append(f"| {v.id} | {v.claim} | {verdict} | {v.evidence} |")
    notes = [f"- design {r.id}: {r.note}" for r in report.runs if r.note]
    if notes:
        lines += ["", "Notes:", *notes]
    if report.command:
        lines += ["", f"Command: `{report.command}`"]
    return "\n".join(lines) + "\n"
