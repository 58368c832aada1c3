"""Rehearse a plan against the stand-in model and price it.

A rehearsal is a real run of the checked plan on ``runtime.Run``, with no ledger, no client and
the free stand-in answering every call: nothing is stored and nothing is sent. It counts calls
and what they would cost per phase and per role. Several rehearsals with different seeds show
the spread (min / median / max); the hard ceiling (``max_agents`` x turns per worker x the
dearest price) bounds what the plan could spend whatever the models answer, so an approval
never rests on samples alone.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from planlang.binding import run_words
from planlang.check import CheckResult, check
from planlang.clock import VirtualClock
from planlang.errors import PlanLimitError, PlanRefused, PlanRuntimeError
from planlang.sandbox.deep_stack import deep_settings
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits
from planlang.standin import StandIn
from runtime import LLM, Budget, Run, RunError, Settings

__all__ = ["HostProvider", "PriceReport", "Problem", "Spread", "price", "rehearse"]

# Builds the embedder's host words for one run (the audit kit's words call run.agent).
HostProvider = Callable[[Run], Mapping[str, Any]]


@dataclass(frozen=True)
class Spread:
    """min / median / max of one quantity over the rehearsals."""

    min: float
    median: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        values = list(values) or [0.0]
        return cls(min(values), statistics.median(values), max(values))


@dataclass(frozen=True)
class Problem:
    """Something a rehearsal met: a crash, a limit, a failing worker, a runaway."""

    kind: str  # crash, limit, worker, runaway, run
    message: str
    line: int | None
    seeds: tuple[int, ...]

    def render(self, filename: str) -> str:
        where = f"{filename}:{self.line}" if self.line else filename
        seeds = ",".join(map(str, self.seeds))
        return f"{where}: {self.kind}: {self.message} (seeds {seeds})"


@dataclass
class Rehearsal:
    """What one rehearsal with one seed did."""

    seed: int
    accounting: dict[str, Any]
    workers: int
    wall_seconds: float
    problems: list[tuple[str, str, int | None]] = field(default_factory=list)
    result: Any = None


@dataclass
class PriceReport:
    """The price of a plan: per phase, per role, the total, the ceiling and the problems."""

    filename: str
    sha256: str
    seeds: tuple[int, ...]
    phases: dict[str, dict[str, Spread]]
    roles: dict[str, dict[str, Spread]]
    total: dict[str, Spread]
    ceiling: float
    ceiling_basis: dict[str, float]
    wall_seconds: Spread
    problems: list[Problem]
    rehearsals: list[Rehearsal] = field(repr=False, default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("rehearsals")
        data["ok"] = self.ok
        return data


def rehearse(
    checked: CheckResult,
    *,
    seed: int,
    settings: Settings,
    host: HostProvider | Mapping[str, Any] | None = None,
    inputs: Any = None,
    limits: Limits | None = None,
    latency: float = 2.0,
) -> Rehearsal:
    """Run the checked plan once against the stand-in seeded with ``seed``."""
    clock = VirtualClock(latency, settings.concurrency)
    llm = LLM(ledger=None, client=None, budget=Budget(None),
              standin=StandIn(seed, on_call=clock.tick), settings=settings)  # fmt: skip
    steps = (limits or Limits()).steps
    run = Run(f"rehearsal seed {seed}", llm=llm, settings=deep_settings(settings, steps))
    words, origins = run_words(run, checked.filename)
    fan_out, streamed = words["parallel"], words["stream"]
    words["parallel"] = lambda thunks: clock.parallel(fan_out, thunks, run.in_worker())
    words["stream"] = lambda thunks, then=None: clock.stream(
        lambda timed: streamed(timed, then), thunks, run.in_worker()
    )
    extra = host(run) if callable(host) else (host or {})
    box = Sandbox(
        host={**words, **extra, "inputs": inputs if inputs is not None else {}},
        limits=limits,
        log=run.log,
        passthrough=(RunError,),
    )
    problems: list[tuple[str, str, int | None]] = []
    result = None

    def plan(_run: Run) -> Any:
        return box.run(checked)

    try:
        result = run.run_sync(plan)
    except PlanLimitError as error:
        problems.append(("limit", f"{error.kind}: {error.message}", error.line))
    except PlanRuntimeError as error:
        problems.append(("crash", error.message, error.line))
    except RunError as error:
        problems.append(("run", f"{type(error).__name__}: {error}", None))
    for record in run.threads:
        line = origins.lines.get(record.label or "")
        if record.status == "failed":
            problems.append(("worker", record.error or "the worker failed", line))
        elif record.status == "refused":
            problems.append(("runaway", record.error or "worker refused", line))
    wall = clock.total()
    return Rehearsal(seed, run.accounting.to_dict(), len(run.threads), wall, problems, result)


def price(
    source: str | CheckResult,
    *,
    seeds: int | Sequence[int] = 5,
    settings: Settings | None = None,
    host: HostProvider | Mapping[str, Any] | None = None,
    inputs: Any = None,
    limits: Limits | None = None,
    latency: float = 2.0,
    filename: str = "plan.py",
) -> PriceReport:
    """Check ``source``, rehearse it once per seed, and report its price.

    Raises ``PlanRefused`` when the check says no; everything met while rehearsing is in the
    report's ``problems``, with the plan's line.
    """
    checked = check(source, filename) if isinstance(source, str) else source
    if not checked.ok:
        raise PlanRefused(checked.problems, filename=checked.filename)
    settings = settings or Settings()
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(seeds)
    if not seed_list:
        raise ValueError("price() needs at least one seed.")
    rehearsals = [
        rehearse(
            checked,
            seed=s,
            settings=settings,
            host=host,
            inputs=inputs,
            limits=limits,
            latency=latency,
        )  # fmt: skip
        for s in seed_list
    ]
    turns = 1 + settings.max_repair_turns + settings.max_check_retries
    return PriceReport(
        filename=checked.filename,
        sha256=checked.sha256,
        seeds=seed_list,
        phases=_spreads(rehearsals, "phases"),
        roles=_spreads(rehearsals, "roles"),
        total=_measures([r.accounting["total"] for r in rehearsals]),
        ceiling=settings.max_agents * turns * settings.dearest_price,
        ceiling_basis={
            "max_agents": settings.max_agents,
            "turns_per_worker": turns,
            "dearest_price": settings.dearest_price,
        },
        wall_seconds=Spread.of([r.wall_seconds for r in rehearsals]),
        problems=_merge_problems(rehearsals),
        rehearsals=rehearsals,
    )


def _measures(tallies: Sequence[Mapping[str, Any]]) -> dict[str, Spread]:
    return {
        "calls": Spread.of([t.get("calls", 0) for t in tallies]),
        "credits": Spread.of([t.get("would_credits", 0.0) for t in tallies]),
    }


def _spreads(rehearsals: Sequence[Rehearsal], key: str) -> dict[str, dict[str, Spread]]:
    names = sorted({name for r in rehearsals for name in r.accounting[key]})
    empty: dict[str, Any] = {"calls": 0, "would_credits": 0.0}
    return {
        name: _measures([r.accounting[key].get(name, empty) for r in rehearsals]) for name in names
    }


def _merge_problems(rehearsals: Sequence[Rehearsal]) -> list[Problem]:
    seen: dict[tuple[str, str, int | None], list[int]] = {}
    for rehearsal in rehearsals:
        for problem in rehearsal.problems:
            seen.setdefault(problem, []).append(rehearsal.seed)
    return [
        Problem(kind, message, line, tuple(dict.fromkeys(seeds)))
        for (kind, message, line), seeds in seen.items()
    ]
