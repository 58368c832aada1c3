"""The sandbox: what runs a checked plan, and every guard between the plan and the host.

    inprocess      ``Sandbox``: a namespace of only the names the code uses, error conversion
    limits         ``Limits`` and the ``Meter`` that counts steps, time, depth, memory and size
    guards         the run-time guards the checker's rewrite calls: attributes, writes, loops
    sizes          operators, f-strings and methods that could allocate without a loop
    walks          text and C loops priced before C walks shared structure
    plan_builtins  the plan's ``str``, ``int``, ``list``, ... : guarded, and ``isinstance`` works
    wall           the wall between host and plan: read-only copies in, fresh plain data out
    host_words     the wrapper around each host callable: step, clock, result copy
    deep_stack     the deep C stack plan code runs on

It imports the checker (for the code it runs), never the other way round.
"""

from planlang.sandbox.inprocess import Sandbox, current_meter
from planlang.sandbox.limits import Limits, Meter
from planlang.sandbox.wall import HostObject, HostWord

__all__ = ["HostObject", "HostWord", "Limits", "Meter", "Sandbox", "current_meter"]
