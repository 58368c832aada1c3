"""Running an approved plan on a ``runtime.Run``: the last step, and the only way to it.

The runtime takes plans as callables (trusted code an embedder writes) and never imports
planlang; an ``ApprovedPlan`` is such a callable, and it verifies its seal before a single line
runs. Source strings and bare code objects are not callables, so they cannot be run at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planlang.binding import run_words
from planlang.sandbox.inprocess import Sandbox
from planlang.sandbox.limits import Limits
from runtime import Run, RunError

if TYPE_CHECKING:
    from planlang.gate import ApprovedPlan

__all__ = ["execute", "RUN_LIMITS"]

# A real run waits on real models: the wall-time limit is the run's, not a rehearsal's.
RUN_LIMITS = Limits(seconds=24 * 3600)


def execute(plan: ApprovedPlan, run: Run, *, limits: Limits | None = None) -> Any:
    """Verify ``plan`` and run it on ``run``; returns the plan's ``result``."""
    from planlang.gate import ApprovedPlan, TamperedPlan

    if not isinstance(plan, ApprovedPlan):
        raise TamperedPlan(f"a {type(plan).__name__} is not an approved plan")
    plan.verify()
    gate = plan.gate
    words, _origins = run_words(run, plan.filename)
    extra = gate.host(run) if callable(gate.host) else (gate.host or {})
    box = Sandbox(
        host={**words, **extra, "inputs": gate.inputs if gate.inputs is not None else {}},
        limits=limits or RUN_LIMITS,
        log=run.log,
        passthrough=(RunError,),
    )
    return box.run(plan.check_result)
