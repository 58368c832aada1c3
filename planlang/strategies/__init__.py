"""Hypothesis strategies for plans: fuzz your host words and your policy with generated plans.

    from hypothesis import given
    from planlang.strategies import HostWordSpec, Param, fake_host, near_misses, plans

    WORDS = {"search": HostWordSpec("search", (Param("query", "str"),),
                                    returns={"type": "array", "items": {"type": "string"}})}

    @given(plans(WORDS))
    def test_plans_run(source):
        planlang.Sandbox(host=dict(fake_host(WORDS, seed=0))).run(source)

    @given(near_misses(WORDS))
    def test_policy_refuses(miss):
        assert miss.line in {p.line for p in planlang.check(miss.source).problems}

``plans`` draws valid plans over the given host words (well-scoped, well-typed, using the
words' results); ``near_misses`` plants exactly one forbidden construct (see
``PLANTED_CONSTRUCTS``) in such a plan; ``fake_host`` answers host words with schema-valid data.
See docs/STRATEGIES.md.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from planlang.strategies.expressions import EXCLUDABLE_FEATURES
from planlang.strategies.fake import FakeHost, HostCall, HostWordMisuse, fake_host, schema_value
from planlang.strategies.near_miss import PLANTED_CONSTRUCTS, NearMiss, plant
from planlang.strategies.spec import (
    DEFAULT_HOST_WORDS,
    HostWordSpec,
    Param,
    normalize_host_words,
    type_of_schema,
)
from planlang.strategies.statements import PlanWriter

__all__ = [
    "DEFAULT_HOST_WORDS",
    "EXCLUDABLE_FEATURES",
    "PLANTED_CONSTRUCTS",
    "FakeHost",
    "HostCall",
    "HostWordMisuse",
    "HostWordSpec",
    "NearMiss",
    "Param",
    "fake_host",
    "fake_values",
    "near_misses",
    "plans",
]

HostWords = Mapping[str, HostWordSpec | Mapping[str, Any]] | Sequence[HostWordSpec]


def _chunks(
    host_words: HostWords,
    values: Mapping[str, Mapping[str, Any]] | None,
    max_statements: int,
    max_nesting: int,
    max_expression_depth: int,
    exclude: Collection[str] = (),
) -> st.SearchStrategy[list[list[str]]]:
    unknown = set(exclude) - set(EXCLUDABLE_FEATURES)
    if unknown:
        raise ValueError(f"Cannot exclude {sorted(unknown)}; choose from EXCLUDABLE_FEATURES.")
    for name, value in {"max_statements": max_statements, "max_nesting": max_nesting,
                        "max_expression_depth": max_expression_depth}.items():  # fmt: skip
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"{name}={value!r} must be a non-negative integer.")
    words = normalize_host_words(host_words)
    value_types = {name: type_of_schema(schema) for name, schema in (values or {}).items()}
    clash = set(words) & set(value_types)
    if clash:
        raise ValueError(f"The names {sorted(clash)} are both host words and host values.")

    @st.composite
    def chunks(draw: st.DrawFn) -> list[list[str]]:
        writer = PlanWriter(
            draw,
            words,
            value_types,
            max_statements=max_statements,
            max_nesting=max_nesting,
            max_expression_depth=max_expression_depth,
            exclude=frozenset(exclude),
        )
        return writer.plan()

    return chunks()


def plans(
    host_words: HostWords = DEFAULT_HOST_WORDS,
    *,
    values: Mapping[str, Mapping[str, Any]] | None = None,
    max_statements: int = 12,
    max_nesting: int = 2,
    max_expression_depth: int = 2,
    exclude: Collection[str] = (),
) -> st.SearchStrategy[str]:
    """Valid plan sources that call ``host_words`` with well-typed arguments.

    ``values`` names the plain data the host hands in (name -> JSON schema, e.g.
    ``{"inputs": {...}}``); plans read them but never change them. The plan binds ``result``
    last. ``max_statements`` bounds statements (nested ones included), ``max_nesting`` how deep
    blocks nest, ``max_expression_depth`` how deep expressions nest. ``exclude`` names features
    of ``EXCLUDABLE_FEATURES`` not to generate.
    """
    strategy = _chunks(
        host_words, values, max_statements, max_nesting, max_expression_depth, exclude
    )
    return strategy.map(lambda chunks: "\n".join(line for chunk in chunks for line in chunk) + "\n")


def near_misses(
    host_words: HostWords = DEFAULT_HOST_WORDS,
    *,
    values: Mapping[str, Mapping[str, Any]] | None = None,
    constructs: Sequence[str] = PLANTED_CONSTRUCTS,
    max_statements: int = 6,
    max_nesting: int = 1,
    max_expression_depth: int = 1,
    exclude: Collection[str] = (),
) -> st.SearchStrategy[NearMiss]:
    """A valid plan with exactly one forbidden construct planted: ``NearMiss(source,
    construct, line, end_line)``. The checker should refuse it with a problem on ``line``
    (multi-line constructs: between ``line`` and ``end_line``). ``constructs`` picks which of
    ``PLANTED_CONSTRUCTS`` to plant."""
    unknown = set(constructs) - set(PLANTED_CONSTRUCTS)
    if unknown or not constructs:
        raise ValueError(f"Unknown constructs {sorted(unknown)}; choose from PLANTED_CONSTRUCTS.")
    base = _chunks(host_words, values, max_statements, max_nesting, max_expression_depth, exclude)
    return st.builds(
        plant,
        base,
        st.sampled_from(tuple(constructs)),
        st.integers(min_value=0),
        st.integers(min_value=0, max_value=2**16),
    )


def fake_values(values: Mapping[str, Mapping[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Plain data for each host value schema, as a host would hand in (for ``Sandbox(host=)``)."""
    rng = random.Random(seed)
    return {name: schema_value(schema, rng) for name, schema in values.items()}
