"""Properties of check and the sandbox, over generated Python and generated plans.

- Arbitrary Python (hypothesmith) never crashes the checker: it answers with problems or code.
- Plans from ``planlang.strategies.plans`` are accepted, and run under small limits they end in
  a result or a plan error, never another exception, and leave the host's data unchanged.
- Near misses (one forbidden construct planted) are refused at the planted line.
- The checker is deterministic.
"""

from __future__ import annotations

import copy
import warnings

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import planlang
from planlang.strategies import (
    DEFAULT_HOST_WORDS,
    HostWordSpec,
    Param,
    fake_host,
    fake_values,
    near_misses,
    plans,
)

with warnings.catch_warnings():
    # libcst 1.0 (under hypothesmith) uses mypy_extensions.TypedDict, deprecated; not ours.
    warnings.simplefilter("ignore", DeprecationWarning)
    import hypothesmith

# Python source from the language's grammar; built once (each call builds a new LALR parser
# from the grammar, about 1.4 s) and drawn from by two properties.
FROM_GRAMMAR = hypothesmith.from_grammar()

WORDS = {
    **DEFAULT_HOST_WORDS,
    "search": HostWordSpec(
        "search",
        (Param("query", "str"), Param("limit", "int", keyword=True, required=False)),
        returns={"type": "array", "items": {"type": "string"}},
    ),
    "score": HostWordSpec(
        "score",
        (Param("items", {"type": "array", "items": {"type": "string"}}),),
        returns={"type": "object", "additionalProperties": {"type": "integer"}},
    ),
}
VALUES = {
    "inputs": {
        "type": "object",
        "properties": {
            "files": {"type": "array", "items": {"type": "string"}},
            "budget": {"type": "integer", "minimum": 0, "maximum": 50},
            "weights": {"type": "object", "additionalProperties": {"type": "number"}},
        },
        "required": ["files", "budget", "weights"],
    }
}
SMALL = planlang.Limits(steps=20_000, seconds=5.0, depth=30, size=20_000, int_bits=4_096)

# Errors a well-scoped, well-typed generated plan may still meet on unlucky values: an integer
# too long to print, a float overflowing. Anything else (a TypeError, a NameError, a host word
# called with the wrong arguments) is a bug in the generator or in the sandbox.
TOLERATED_RUNTIME_ERRORS = {"ValueError", "OverflowError"}

# Features whose run is broken in the sandbox today, left out of the run property until fixed
# (each has a repro in the helper's report): tuple unpacking ('a, b = 1, 2', 'for i, x in
# enumerate(xs)') ends in "TypeError: Guards.unpack_sequence() missing 2 required positional
# arguments". The acceptance property above still generates them.
KNOWN_SANDBOX_BUGS: tuple[str, ...] = ()


def _problems(source: str, filename: str = "plan.py") -> list[tuple[int, int, str, str]]:
    return [(p.line, p.col, p.code, p.message) for p in planlang.check(source, filename).problems]


def _assert_well_formed(result: planlang.CheckResult) -> None:
    assert result.ok == (result.code is not None)
    assert result.ok == (not result.problems)
    for problem in result.problems:
        assert problem.line >= 1 and problem.col >= 1
        assert problem.code.startswith("PL") and problem.message


@settings(max_examples=100)
@given(FROM_GRAMMAR)
def test_checker_never_crashes_on_python_from_the_grammar(source: str) -> None:
    _assert_well_formed(planlang.check(source))


# hypothesmith builds these trees slowly (about 0.8 s an example on 2 cores, almost all of it
# spent generating), so this property takes the lowest example count the project allows. It
# also discards many trees itself (those libcst cannot print): that filtering is
# hypothesmith's, not a sign of a weak test, so the health check for it is off here.
@pytest.mark.slow
@settings(max_examples=50, suppress_health_check=[HealthCheck.filter_too_much])
@given(hypothesmith.from_node())
def test_checker_never_crashes_on_python_from_syntax_trees(source: str) -> None:
    _assert_well_formed(planlang.check(source))


@given(plans(WORDS, values=VALUES))
def test_generated_plans_are_accepted(source: str) -> None:
    result = planlang.check(source)
    assert result.ok, [p.render() for p in result.problems]


@settings(max_examples=150)
@given(plans(WORDS, values=VALUES, exclude=KNOWN_SANDBOX_BUGS), st.integers(0, 2**16))
def test_generated_plans_run_to_a_result_or_a_plan_error(source: str, seed: int) -> None:
    host_words = fake_host(WORDS, seed)
    inputs = fake_values(VALUES, seed)
    before = copy.deepcopy(inputs)
    box = planlang.Sandbox(host={**host_words, **inputs}, limits=SMALL)
    try:
        box.run(source)
    except planlang.PlanRuntimeError as error:
        assert error.error_type in TOLERATED_RUNTIME_ERRORS, str(error)
    except planlang.PlanLimitError:
        pass  # small limits: a plan that builds big values may meet one, as it should
    assert inputs == before, "the plan changed data the host handed in"
    assert host_words.returned_unchanged(), "the plan changed a host word's result in place"


@given(near_misses(WORDS, values=VALUES))
def test_near_misses_are_refused_at_the_planted_line(miss: planlang.strategies.NearMiss) -> None:
    result = planlang.check(miss.source)
    assert not result.ok
    lines = {p.line for p in result.problems}
    planted = set(range(miss.line, miss.end_line + 1))
    assert lines & planted, (miss.construct, miss.line, [p.render() for p in result.problems])
    assert lines <= planted, "a problem outside the planted construct: the rest is valid"


@settings(max_examples=100)
@given(
    st.one_of(
        FROM_GRAMMAR,
        plans(WORDS, max_statements=6),
        near_misses(WORDS).map(lambda miss: miss.source),
    )
)
def test_check_is_deterministic(source: str) -> None:
    # Different filenames get past the checker's cache, so both are real checks.
    first, second = _problems(source, "one.py"), _problems(source, "two.py")
    assert first == second
    assert _problems(source, "one.py") == first


BIG = planlang.Limits(steps=200_000, seconds=10.0, depth=60, size=200_000, int_bits=20_000)


@settings(max_examples=100)
@given(plans(WORDS, values=VALUES), st.integers(0, 2**16))
def test_generated_plans_mean_what_python_means(source: str, seed: int) -> None:
    """Differential: the rewrite (guards, skipped guards, inline tests, merged f-string checks)
    must not change what a plan computes. A plan that ends within planlang's limits gives the
    result plain CPython gives, or fails with the same exception type."""
    box = planlang.Sandbox(host={**fake_host(WORDS, seed), **fake_values(VALUES, seed)}, limits=BIG)
    try:
        got: tuple[str, str] = ("result", repr(box.run(source)))
    except planlang.PlanLimitError:
        event("ended by a limit")
        return  # CPython would do the same unbounded work: nothing to compare within reason
    except planlang.PlanRuntimeError as error:
        got = ("error", str(error.error_type))
    namespace = {**fake_host(WORDS, seed), **fake_values(VALUES, seed)}
    try:
        exec(compile(source, "plan.py", "exec"), namespace)  # noqa: S102 - the reference
        expected = ("result", repr(namespace.get("result")))
    except Exception as error:  # noqa: BLE001 - compared by type
        expected = ("error", type(error).__name__)
    event(f"compared: {got[0]}")
    assert got == expected
