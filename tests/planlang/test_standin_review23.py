"""Review 23, the stand-in's part, in general: neighbours of each defect the review found
(an escaped surrogate pair in a pattern, allOf bounds, a ``type`` list naming null, ``if``
without ``else``), each answer checked by the schema's own validator on several seeds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from planlang.standin import value_for
from runtime.json_schema import schema_validator


def _valid(schema: dict[str, Any], seeds: range = range(6)) -> list[Any]:
    answers = []
    for seed in seeds:
        value = value_for(schema, random.Random(seed))
        assert schema_validator(schema).is_valid(value), (schema, seed, value)
        answers.append(value)
    return answers


# -- an escaped surrogate pair is the one character it makes (as runtime.linear_regex reads it)


@pytest.mark.parametrize("pattern", [
    "^\\uD83D\\uDE00$",
    "^\\ud83d\\ude00$",  # lower-case hex
    "^a\\uD83D\\uDE00b$",
    "^(\\uD83D\\uDE00)+$",
    "^\\uD83D\\uDE00{2,3}$",  # the repeat is of the whole character
    "^(?:x|\\uD83D\\uDE00)$",
    "^[\\uD83D\\uDE00-\\uD83D\\uDE4F]+$",  # a class of pairs
    "^[a\\uD83D\\uDE00]$",
    "^\\uD800\\uDC00$",  # the first and the last astral characters
    "^\\uDBFF\\uDFFF$",
    "\\uD83D\\uDE00",  # unanchored
])  # fmt: skip
def test_a_surrogate_pair_in_a_pattern_is_one_character(pattern: str) -> None:
    _valid({"type": "string", "pattern": pattern})


def test_a_surrogate_pair_pattern_under_a_length() -> None:
    # one character to JSON Schema's length, as to the pattern
    answers = _valid({"type": "string", "pattern": "^(\\uD83D\\uDE00)*$", "minLength": 3,
                      "maxLength": 3})  # fmt: skip
    assert all(len(a) == 3 for a in answers)


def test_an_escaped_backslash_before_u_is_not_a_pair() -> None:
    # ``\\\\uD83D`` is a backslash and the letters uD83D, then the lone \\uDE00
    from planlang.standin_pattern import _readable

    assert _readable("^\\\\uD83D\\uDE00$") == "^\\\\uD83D\\uDE00$"
