"""planlang: check, price, approve and run plans a lead model writes as restricted Python.

import planlang
result = planlang.check(source, filename="plan.py")   # .ok, .problems, .code
box = planlang.Sandbox(host={"agent": agent, "inputs": {...}}, limits=planlang.Limits(...))
box.run(source)      # raises PlanRefused, PlanError, PlanLimitError
report = planlang.price(source, settings=..., host=..., seeds=5)
decision = planlang.Gate(planlang.Policy(max_credits=20), store="gate.db").submit(source)

The gate's names (``Gate``, ``Policy``, ``Decision``, ``ApprovedPlan``) are loaded when first
used: they bring the runtime and pydantic, which ``planlang check`` never needs.
"""

from typing import TYPE_CHECKING, Any

from planlang.check import CheckResult, check
from planlang.errors import (
    OtherTerms,
    PlanError,
    PlanLimitError,
    PlanRefused,
    PlanRuntimeError,
    Problem,
    TamperedPlan,
)
from planlang.price import price
from planlang.sandbox import HostObject, HostWord, Limits, Sandbox, current_meter

if TYPE_CHECKING:
    from planlang.gate import ApprovedPlan, Decision, Gate, Policy

_GATE_NAMES = frozenset({"ApprovedPlan", "Decision", "Gate", "Policy"})

__all__ = [
    "ApprovedPlan",
    "CheckResult",
    "Decision",
    "Gate",
    "HostObject",
    "HostWord",
    "Limits",
    "OtherTerms",
    "PlanError",
    "PlanLimitError",
    "PlanRefused",
    "PlanRuntimeError",
    "Policy",
    "Problem",
    "Sandbox",
    "TamperedPlan",
    "check",
    "current_meter",
    "price",
]


def __getattr__(name: str) -> Any:
    if name in _GATE_NAMES:
        from planlang import gate

        value = getattr(gate, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'planlang' has no attribute {name!r}")
