"""Run: the last step. An approved plan on a ``runtime.Run``, wired one way for every caller.

The CLI (``planlang run``), the lead (``lead.audit`` and its replans), the bench and embedders
all start runs here, so each gets the same wiring: the front door built from one ``Settings``
(ledger, client, budget), the run's threads given the C stack the plan's step limit needs (a
deep tuple hashed in a ``parallel`` thunk must not crash the host), and one outcome to read when
the run ends. The plan itself runs in its sandbox through ``ApprovedPlan`` (``planlang.gate``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planlang.errors import PlanError, PlanLimitError, PlanRuntimeError
from planlang.gate import RUN_LIMITS, ApprovedPlan
from planlang.sandbox.deep_stack import deep_settings
from planlang.sandbox.limits import Limits
from runtime import LLM, Budget, Client, HTTPClient, Ledger, Run, RunError, Settings, http_client
from runtime.run import Resample

__all__ = ["RUN_LIMITS", "RunOutcome", "endpoint_client", "front_door", "start_run", "wait_for"]


def endpoint_client(settings: Settings) -> HTTPClient:
    """The OpenAI-compatible client of ``settings`` (``LLM_BASE_URL``, ``LLM_API_KEY``).

    Raises ``ValueError`` with a one-line reason when the endpoint is not usable: said for a
    person at a shell (``http_client``'s own says "pass base_url", for a caller in Python)."""
    if not settings.base_url and not os.environ.get("LLM_BASE_URL"):
        raise ValueError("No endpoint: set LLM_BASE_URL to an OpenAI-compatible server (e.g. "
                         "https://host/v1), and LLM_API_KEY if it needs a key.")  # fmt: skip
    key = settings.api_key.get_secret_value() if settings.api_key else None
    return http_client(settings.base_url, key, timeout=settings.timeout, retries=settings.retries)


def front_door(
    settings: Settings,
    ledger: Ledger | str | Path | None,
    *,
    client: Client | None = None,
    replay: bool = False,
    budget: float | None = None,
) -> LLM:
    """The model front door of a run: ``ledger`` (a path opens one), ``client``, and a budget
    capped at ``budget`` (default: the settings' cap). A replay sends nothing, so it has no
    client: every question must already be in the ledger."""
    if isinstance(ledger, str | Path):
        ledger = Ledger(ledger)
    cap = budget if budget is not None else settings.cap
    return LLM(ledger, client=None if replay else client, budget=Budget(cap),
               mode="replay" if replay else "collect", settings=settings)  # fmt: skip


def start_run(
    plan: ApprovedPlan,
    llm: LLM,
    *,
    title: str,
    settings: Settings | None = None,
    concurrency: int | None = None,
    events_path: str | Path | None = None,
    limits: Limits = RUN_LIMITS,
    resample: Resample | None = None,
) -> Run:
    """A ``Run`` of ``llm`` whose threads fit ``limits``' steps, started on ``plan``
    (``resample``: see ``Run``; a retry of failed workers asks them under a fresh index)."""
    stack_ready = deep_settings(settings or llm.settings, limits.steps)
    run = Run(title, llm=llm, settings=stack_ready, concurrency=concurrency,
              events_path=events_path, resample=resample)  # fmt: skip
    run.start(plan)
    return run


@dataclass
class RunOutcome:
    """What one run of one plan did."""

    status: str  # completed, failed, cancelled
    result: Any
    error: str | None
    accounting: dict[str, Any]
    workers: list[dict[str, Any]]  # id, label, phase, role, status, error
    wall_seconds: float

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    @property
    def calls(self) -> int:
        return int(self.accounting["total"]["calls"])

    @property
    def credits(self) -> float:
        return float(self.accounting["total"]["credits"])


def wait_for(
    run: Run,
    *,
    poll: float = 0.05,
    on_tick: Callable[[Run], Any] | None = None,
    stop_when_spent: bool = False,
) -> RunOutcome:
    """Wait for ``run`` to end; ``on_tick(run)`` every ``poll`` seconds meanwhile.

    With ``stop_when_spent``, a run whose workers wait at a spent cap with nothing in flight
    (nobody can free credits, nobody will raise the cap) is cancelled with that reason instead
    of waiting for ever."""
    started = time.perf_counter()
    stuck = 0
    error: BaseException | None = None
    result: Any = None
    while True:
        try:
            result = run.wait(timeout=poll)
            break
        except TimeoutError:
            if on_tick is not None:
                on_tick(run)
            stuck = stuck + 1 if stop_when_spent and _spent_out(run.llm) else 0
            if stuck >= 3:
                spent, _, cap = run.llm.budget.snapshot()
                run.cancel(f"the budget is spent ({spent:g} of {cap:g} credits)")
        except (PlanError, RunError) as exc:
            error = exc
            break
    workers = [
        {"id": r.id, "label": r.label, "phase": r.phase, "role": r.role, "status": r.status,
         "error": r.error, "prompt": r.prompt[:60]}
        for r in run.threads
    ]  # fmt: skip
    status = run.status
    if error is not None:
        status = "cancelled" if run.status == "cancelled" else "failed"
    return RunOutcome(
        status=status,
        result=result,
        error=None if error is None else describe(error),
        accounting=run.accounting.to_dict(),
        workers=workers,
        wall_seconds=time.perf_counter() - started,
    )


def describe(error: BaseException) -> str:
    """One line on what ended a run, naming the kind of limit or error."""
    if isinstance(error, PlanLimitError):
        return f"a limit stopped the plan ({error.kind}): {error}"
    if isinstance(error, PlanRuntimeError):
        return f"the plan's code failed ({error.error_type}): {error}"
    return f"{type(error).__name__}: {error}"


def _spent_out(llm: LLM) -> bool:
    spent, reserved, cap = llm.budget.snapshot()
    return llm.budget.paused > 0 and reserved == 0 and cap is not None
