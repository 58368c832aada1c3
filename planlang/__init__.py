"""planlang: check, price, approve and run plans a lead model writes as restricted Python.

import planlang
result = planlang.check(source, filename="plan.py")   # .ok, .problems, .code
box = planlang.Sandbox(host={"agent": agent, "inputs": {...}}, limits=planlang.Limits(...))
box.run(source)      # raises PlanRefused, PlanError, PlanLimitError
"""

from planlang.check import CheckResult, Problem, check
from planlang.errors import PlanError, PlanLimitError, PlanRefused, PlanRuntimeError
from planlang.sandbox.inprocess import Sandbox, current_meter
from planlang.sandbox.limits import Limits
from planlang.sandbox.wall import HostObject, HostWord

__all__ = [
    "CheckResult",
    "HostObject",
    "HostWord",
    "Limits",
    "PlanError",
    "PlanLimitError",
    "PlanRefused",
    "PlanRuntimeError",
    "Problem",
    "Sandbox",
    "check",
    "current_meter",
]
