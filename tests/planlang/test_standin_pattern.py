"""The stand-in answers a string ``pattern`` with a string built from the pattern itself.

Before, it tried ten fixed samples ("a", "abc-123", "v1.0.0", ...) and refused every schema
shaped like an ID, a date or a hash: ``planlang price`` of a plan asking for
``{"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"}`` failed each worker with "no answer can
satisfy the JSON schema", which was not true.
"""

from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

import planlang
from planlang.standin import UnsatisfiableSchema, value_for
from planlang.standin_pattern import pattern_candidates
from runtime.linear_regex import search

REALISTIC = [
    r"^[A-Z]{3}-\d{4}$",
    r"^\d{4}-\d{2}-\d{2}$",
    r"^(GET|POST|PUT|DELETE) /[a-z/]+$",
    r"^[a-f0-9]{40}$",
    r"^CVE-\d{4}-\d{4,7}$",
    r"^[\w.+-]+@[\w-]+\.[a-z]{2,}$",
    r"^#[0-9a-fA-F]{6}$",
    r"^v\d+\.\d+\.\d+(-[a-z]+)?$",
    r"^[a-z_][a-z0-9_]*\.py:\d+$",
    r"^(low|medium|high|critical)$",
    r"^[^\s/]+/[^\s/]+$",
    r"^https://[a-z]+\.example\.com/\S*$",
    r"^\(\d{3}\) \d{3}-\d{4}$",
    r"^[A-Z][a-z]+( [A-Z][a-z]+)*$",
    r"^.{5,10}$",
]


@pytest.mark.parametrize("pattern", REALISTIC)
def test_a_realistic_pattern_gets_an_answer_it_matches(pattern: str) -> None:
    for seed in range(5):
        value = value_for({"type": "string", "pattern": pattern}, random.Random(seed))
        assert isinstance(value, str) and search(pattern, value), (pattern, value)


def test_a_pattern_meets_min_and_max_length_together() -> None:
    schema = {"type": "string", "pattern": r"^[a-z]+$", "minLength": 30, "maxLength": 40}
    value = value_for(schema, random.Random(3))
    assert 30 <= len(value) <= 40 and value.isalpha() and value.islower()
    schema = {"type": "string", "pattern": r"^[0-9a-f]{8,64}$", "maxLength": 12}
    assert 8 <= len(value_for(schema, random.Random(3))) <= 12


def test_a_pattern_inside_a_plans_worker_schema_is_priced() -> None:
    plan = (
        'schema = {"type": "object", "required": ["id", "sha"], "properties": {\n'
        '    "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},\n'
        '    "sha": {"type": "string", "pattern": "^[a-f0-9]{40}$"}}}\n'
        "found = parallel([lambda: agent('a ticket', schema=schema) for _ in range(3)])\n"
        "result = [f['id'] for f in found]\n"
    )
    report = planlang.price(plan, seeds=2)
    assert report.problems == [], report.problems
    assert report.total["calls"].max == 3


def test_a_pattern_the_stand_in_cannot_build_says_the_stand_in_failed_not_the_schema() -> None:
    """``\\p{Greek}`` is RE2's (Python's parser has none, the stand-in reads no script):
    satisfiable, but the stand-in's few guesses all miss; it must not call it unsatisfiable."""
    schema = {"type": "string", "pattern": r"^\p{Greek}{3}\d$"}
    with pytest.raises(UnsatisfiableSchema) as error:
        value_for(schema, random.Random(1))
    assert "the stand-in made no answer" in str(error.value)
    assert "no answer can satisfy" not in str(error.value)


RE2_SYNTAX = [  # RE2's, which Python's parser does not read as they stand
    r"^\p{Lu}\p{Ll}{2,5}$",
    r"^[\p{L}\d_]{3,10}$",
    r"^\pL\pN{2}$",
    r"^(?i)[a-f0-9]{8}$",
    r"^id-(?i)[a-z]{3}$",
    r"^(?i:ab)c(?-i)d$",
    r"^(?<year>\d{4})-(?<month>0[1-9]|1[0-2])$",
    r"^v\d+\.\d+\z",
]


@pytest.mark.parametrize("pattern", RE2_SYNTAX)
def test_a_pattern_in_re2_syntax_gets_an_answer_it_matches(pattern: str) -> None:
    test_a_realistic_pattern_gets_an_answer_it_matches(pattern)  # the same check, other syntax


@pytest.mark.parametrize(
    "pattern",
    [r"^(){1000000}$", r"^(a{1000}){1000}$", r"^((((x*)*)*)*)*y$", "(" * 90 + "a" + ")" * 90],
)
def test_a_pattern_built_to_cost_ends_quickly(pattern: str) -> None:
    started = time.process_time()
    try:
        value_for({"type": "string", "pattern": pattern}, random.Random(0))
    except UnsatisfiableSchema:
        pass  # refused is fine: no endless walk, no Python error of the stand-in's
    assert time.process_time() - started < 20


# Patterns from a small grammar both Python's parser and RE2 read alike: every one of them
# is satisfiable, so the stand-in must answer each.
_ATOM = st.one_of(
    st.sampled_from(list("abcXYZ019-_ ")).map(re.escape),
    st.sampled_from(
        [r"\d", r"\w", r"\s", r"\S", r"\D", r".", "[a-f]", "[^a-z]", "[A-Z0-9_]", "[.]", r"[\d.]"]
    ),  # fmt: skip
)


def _wrap(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    quantified = st.tuples(inner, st.sampled_from(["", "?", "*", "+", "{2}", "{1,3}", "{0,}"]))
    return st.one_of(
        quantified.map(lambda p: f"(?:{p[0]}){p[1]}"),
        st.lists(inner, min_size=2, max_size=3).map(lambda alts: "(" + "|".join(alts) + ")"),
        st.lists(inner, min_size=1, max_size=4).map("".join),
    )


_PATTERN = st.recursive(_ATOM, _wrap, max_leaves=8)


@given(_PATTERN, st.booleans(), st.integers(0, 2**32))
def test_every_pattern_of_the_grammar_is_answered(body: str, anchored: bool, seed: int) -> None:
    pattern = f"^{body}$" if anchored else body
    value = value_for({"type": "string", "pattern": pattern}, random.Random(seed))
    assert search(pattern, value), (pattern, value)


@given(_PATTERN, st.integers(0, 2**32))
def test_each_candidate_of_a_walk_is_matched_whole(body: str, seed: int) -> None:
    """The walker's own reading: a candidate of no length bound is a whole match (the
    padded forms are only made for a minLength)."""
    for candidate in pattern_candidates(f"^{body}$", random.Random(seed), 0, None):
        assert re.fullmatch(body, candidate, re.ASCII | re.DOTALL), (body, candidate)
