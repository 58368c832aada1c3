"""Fuzz your own host words and your policy with generated plans (copy this into your tests).

Generated plans call your host words with well-typed, varied arguments and use what they
return; each run must end in a result or a plan error, your host words must answer with data
matching the schemas they declare, and the data you hand in must come back unchanged. Near
misses check that the checker refuses every forbidden construct, at its line.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema
from hypothesis import given, settings

import planlang
from planlang.strategies import HostWordSpec, NearMiss, Param, near_misses, plans

# 1. Your host words (here: a toy catalogue) ---------------------------------------------------

CATALOGUE = {"widget": 2.5, "gadget": 10.0, "gizmo": 0.75}


def lookup(sku: str) -> dict[str, Any]:
    """A host word must answer any string, not only the SKUs it knows."""
    return {"sku": sku, "price": CATALOGUE.get(sku, 0.0), "in_stock": sku in CATALOGUE}


def search(query: str, limit: int = 3) -> list[str]:
    return [sku for sku in sorted(CATALOGUE) if query.lower() in sku][:limit]


# 2. Their specs: parameters and the JSON schema of what each returns ----------------------------

WORDS = {
    "lookup": HostWordSpec(
        "lookup",
        (Param("sku", "str"),),
        returns={
            "type": "object",
            "properties": {
                "sku": {"type": "string"},
                "price": {"type": "number", "minimum": 0},
                "in_stock": {"type": "boolean"},
            },
            "required": ["sku", "price", "in_stock"],
        },
    ),
    "search": HostWordSpec(
        "search",
        (
            Param("query", "str"),
            Param(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 10},
                keyword=True,
                required=False,
            ),
        ),  # fmt: skip
        returns={"type": "array", "items": {"type": "string"}},
    ),
    "log": HostWordSpec("log", (Param("message", "str"),)),
}
# Plain data the host hands in, by name, with its schema.
VALUES = {
    "order": {
        "type": "object",
        "properties": {"skus": {"type": "array", "items": {"type": "string"}}},
        "required": ["skus"],
    }
}
LIMITS = planlang.Limits(steps=20_000, seconds=5.0, size=20_000, int_bits=4_096)
# A generated plan is written to avoid failing; on unlucky values it may still overflow a float
# or make an integer too long to print. Any other runtime error points at a host word.
EXPECTED_RUNTIME_ERRORS = {"ValueError", "OverflowError"}


def checked(name: str, word: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a host word so an answer that breaks its declared schema fails the test."""
    schema = WORDS[name].returns

    def answer(*args: Any, **kwargs: Any) -> Any:
        value = word(*args, **kwargs)
        if schema is not None:
            jsonschema.validate(value, dict(schema))
        return value

    return answer


# 3. The properties ---------------------------------------------------------------------------


# Raise max_examples in your own suite (the project's CI budget is shared). No deadline: the
# first plan of a process starts its isolated plan processes, which takes longer than
# hypothesis's default 200 ms, and would be reported as a flaky failure.
@settings(max_examples=50, deadline=None)
@given(plans(WORDS, values=VALUES))
def test_my_host_words_survive_generated_plans(source: str) -> None:
    order = {"skus": ["widget", "gizmo"]}
    before = copy.deepcopy(order)
    logged: list[str] = []
    host = {
        "lookup": checked("lookup", lookup),
        "search": checked("search", search),
        "log": logged.append,
        "order": order,
    }
    try:
        planlang.Sandbox(host=host, limits=LIMITS).run(source)
    except planlang.PlanRuntimeError as error:
        assert error.error_type in EXPECTED_RUNTIME_ERRORS, f"{error}\n{source}"
    except planlang.PlanLimitError:
        pass  # small limits: a plan that builds big values meets one, as it should
    assert order == before, "a plan changed the data the host handed in"
    assert all(isinstance(line, str) for line in logged)


@settings(max_examples=50, deadline=None)
@given(near_misses(WORDS, values=VALUES))
def test_my_policy_refuses_every_near_miss_at_its_line(miss: NearMiss) -> None:
    problems = planlang.check(miss.source).problems
    assert any(miss.line <= p.line <= miss.end_line for p in problems), (
        miss.construct,
        miss.source,
    )
