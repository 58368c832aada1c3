"""``python -m bench eval``: five plan designs and three ablations on one corpus, scored.

Every design is a plan in the plan language that goes the one way any plan goes: gate (check
and price) -> ApprovedPlan -> Run. The designs: (1) one agent given the whole library in one
read; (2) one agent given the money the workflow spent, as more samples;
(3) a lead that hands out one task at a time and reads every report; (4) the fixed workflow
(every shard through every lens, skeptics, vote); (5) the plan the lead writes from the fact
sheet. Ablations of (4): no skeptics (H4; the study's slim plan, also at 100,000-token shards),
a second scan round (H5), skeptics shown the result of running the failing call (H6). The
report, its intervals and verdicts are ``bench.report``.
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

__all__ = ["DESIGN_IDS", "DesignRun", "Setup", "evaluate", "evaluate_repeated", "run_design"]

DESIGNS = Path(__file__).with_name("designs")
LENSES = ["boundaries", "logic", "state", "general"]
LIBRARY_TOKENS = 10**9  # a shard target no library reaches: the whole library in one read
SAMPLE_STRIDE = 1_000  # repeat k asks samples k * SAMPLE_STRIDE on
DESIGN_IDS = ("1", "2", "3", "4", "5", "4-noskep", "slim-100k", "4-round2", "4-verify")


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
    wrong: int = 0  # places reported that hold no bug (precision's false side)
    agree: int = 0  # skeptic verdicts that agree with the key
    judged: int = 0  # skeptic verdicts on a candidate the key decides
    seed: int = 0

    @property
    def f1(self) -> float:
        total = self.recall + self.precision
        return 2 * self.recall * self.precision / total if total else 0.0


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
    designs: frozenset[str] | None = None  # None: every design
    replay: bool = False  # answer from the ledger only; nothing is sent


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
    run.wrong = len(score.wrong_places)
    if isinstance(result, dict) and result.get("verdicts"):
        run.agree, run.judged = _skeptic_agreement(result, setup)
        run.skeptic_accuracy = run.agree / run.judged if run.judged else None


def _skeptic_agreement(result: Mapping[str, Any], setup: Setup) -> tuple[int, int]:
    """Skeptic verdicts that agree with the key, of those judged (a candidate is real when it
    scores)."""
    library = audited_root(setup.corpus)
    truth = {}
    for candidate in result.get("candidates") or []:
        key = f"{candidate.get('file')}::{candidate.get('function')}"
        truth[key] = bool(match([candidate], setup.key, library=library).found)
    judged = [v for votes in result["verdicts"] for v in votes if v.get("key") in truth]
    return sum(bool(v.get("real")) == truth[v["key"]] for v in judged), len(judged)


def run_design(
    setup: Setup, design_id: str, name: str, source: str, inputs: dict[str, Any],
    budget: float | None,
) -> DesignRun:  # fmt: skip
    """Gate, approve and run one design's plan on a fresh ledger and budget; score it."""
    row = DesignRun(design_id, name, budget, "failed", seed=setup.seed)
    ledger = Ledger(setup.ledger_path)
    gate = Gate(Policy(max_credits=budget), settings=setup.settings, host=_host(setup),
                inputs=inputs, seeds=2)  # fmt: skip
    llm = _llm(setup, ledger, budget)
    try:
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
        _close(llm)


def run_lead_design(setup: Setup) -> DesignRun:
    """Design 5: the lead writes the plan from the fact sheet; it runs with replans."""
    row = DesignRun("5", "lead's plan from the fact sheet", setup.budget, "failed", seed=setup.seed)
    prices = {name: (role.model, role.price) for name, role in setup.settings.roles.items()}
    sheet = scout(setup.corpus, setup.budget, prices)
    ledger = Ledger(setup.ledger_path)
    gate = Gate(Policy(max_credits=setup.budget), settings=setup.settings, host=_host(setup),
                seeds=2)  # fmt: skip
    llm = _llm(setup, ledger, setup.budget)
    try:
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
        _close(llm)


def _llm(setup: Setup, ledger: Ledger, budget: float | None) -> SampleTellingLLM:
    """A fresh LLM for one design: the setup's client for its seed, a budget of ``budget``.
    It tells the client each question's sample number: a simulated client seeds its answer by
    it, so parallel samples get the same answers whichever thread asks first. Repeat k asks
    samples k * SAMPLE_STRIDE on, so a real model's repeats are new answers, not ledger hits;
    replaying, it sends nothing and a question the ledger lacks ends the run."""
    client = None if setup.replay else setup.make_client(setup.seed)
    return SampleTellingLLM(ledger, client=client, budget=Budget(budget), settings=setup.settings,
                            mode="replay" if setup.replay else "collect",
                            offset=setup.seed * SAMPLE_STRIDE)  # fmt: skip


def _close(llm: SampleTellingLLM) -> None:
    """Close the design's client (an HTTP client holds sockets)."""
    close = getattr(llm.client, "close", None)
    if callable(close):
        close()


def _host(setup: Setup) -> Any:
    return kit_host(setup.corpus)


def evaluate(setup: Setup) -> list[DesignRun]:
    """Run every design and ablation (or those of ``setup.designs``), in the report's order."""
    fixed = {"shard_tokens": setup.shard_tokens, "lenses": LENSES, "rounds": 1, "skeptics": 3,
             "need": 2, "batch": 8, "verify": False}  # fmt: skip
    one = {"library_tokens": LIBRARY_TOKENS, "samples": 1}
    b = setup.budget
    scan_price = setup.settings.role("scan").price
    per_task = scan_price + setup.settings.role("lead").price
    tasks = {"shard_tokens": setup.shard_tokens, "lenses": LENSES,
             "max_tasks": max(1, math.floor(b / per_task))}  # fmt: skip
    # Design 2's money is design 4's reading: its lenses read the library len(LENSES) times.
    samples = len(LENSES)
    plans: list[tuple[str, str, str, dict[str, Any], float]] = [
        ("1", "one agent alone", "one_agent", one, b),
        ("2", f"one agent, same reading as 4 ({samples} samples)", "one_agent",
         dict(one, samples=samples), b),
        ("3", "lead hands out tasks one at a time", "orchestrator", tasks, b),
        ("4", "fixed workflow (every shard x lens, skeptics, vote)", "fixed", fixed, b),
        ("5", "", "", {}, b),
        ("4-noskep", "4 without skeptics: the slim plan (H4)", "fixed",
         dict(fixed, skeptics=0), b),
        ("slim-100k", "the slim plan at 100,000-token shards", "fixed",
         dict(fixed, skeptics=0, shard_tokens=100_000), b),
        ("4-round2", "4 with a second scan round, 2x budget (H5)", "fixed",
         dict(fixed, rounds=2), 2 * b),
        ("4-verify", "4 with the failing call run for skeptics (H6)", "fixed",
         dict(fixed, verify=True), b),
    ]  # fmt: skip
    runs = []
    for design_id, name, plan, inputs, budget in plans:
        if setup.designs is not None and design_id not in setup.designs:
            continue
        if design_id == "5":
            runs.append(run_lead_design(setup))
        else:
            runs.append(run_design(setup, design_id, name, _design(plan), inputs, budget))
    return runs


def evaluate_repeated(setup: Setup, repeats: int) -> list[list[DesignRun]]:
    """``evaluate`` with seeds ``setup.seed`` .. ``+ repeats - 1``: one list of rows per repeat
    (a run of 12 or 72 bugs is one noisy draw; the report pools them, with intervals)."""
    return [evaluate(replace(setup, seed=setup.seed + i)) for i in range(repeats)]
