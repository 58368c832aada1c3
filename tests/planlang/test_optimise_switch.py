"""Kind inference is an optimisation only: a plan behaves the same with it and without it.

``check(source, optimise=False)`` keeps every guard; with inference on, the operations the
source proves safe run natively. For every generated plan both give the same result and the same
printed lines, or end in the same kind of error (the same limit, the same Python error).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import VALUES, WORDS

import planlang
from planlang.strategies import fake_host, fake_values, plans

# The clock is a hang guard only: a plan without inference is slower, and which limit trips
# first may not depend on speed (nor on the machine's load).
LIMITS = planlang.Limits(steps=20_000, seconds=120.0, depth=30, size=20_000, int_bits=4_096)


def outcome(source: str, seed: int, optimise: bool) -> tuple[Any, ...]:
    checked = planlang.check(source, optimise=optimise)
    assert checked.ok, [p.render() for p in checked.problems]
    box = planlang.Sandbox(host={**fake_host(WORDS, seed), **fake_values(VALUES, seed)},
                           limits=LIMITS)  # fmt: skip
    try:
        return ("result", repr(box.run(checked)), tuple(box.printed))
    except planlang.PlanLimitError as error:
        return ("limit", error.kind)
    except planlang.PlanRuntimeError as error:
        return ("error", error.error_type, error.line)


@settings(max_examples=150)
@given(plans(WORDS, values=VALUES), st.integers(0, 2**16))
def test_a_plan_behaves_the_same_with_and_without_kind_inference(source: str, seed: int) -> None:
    assert outcome(source, seed, optimise=True) == outcome(source, seed, optimise=False)


def test_without_optimise_the_guards_stay():
    """The switch is real: a proven int's product is guarded only without inference."""
    source = (
        "total = 0\nfor i in range(3):\n    total = (total * 31 + i) % 1000003\nresult = total\n"
    )
    fast = planlang.check(source).code
    slow = planlang.check(source, optimise=False).code
    assert "_mul_" not in _names(fast)
    assert "_mul_" in _names(slow)


def _names(code: Any) -> set[str]:
    found: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        found.update(current.co_names)
        stack += [c for c in current.co_consts if hasattr(c, "co_names")]
    return found
