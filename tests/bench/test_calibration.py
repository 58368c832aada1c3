"""The fitted numbers of the simulated model follow from the study's (bench/calibration.py)."""

from __future__ import annotations

import math

import pytest

from bench.calibration import (
    CONTEXT_TOKENS,
    FITTED,
    LENSES,
    READ_HIT,
    REFERENCE_LIBRARY_TOKENS,
    REFERENCE_LOG_TOKENS,
    STUDY,
    fit,
    visibility,
    vote_keeps,
)


def test_the_constants_are_what_the_fit_gives() -> None:
    assert fit() == FITTED


def test_the_slim_plan_s_recall_is_the_study_s_at_both_shard_sizes() -> None:
    lenses = 1 - (1 - READ_HIT) ** LENSES
    for target, study in ((20_000, STUDY.slim_20k), (100_000, STUDY.slim_100k)):
        mean = FITTED.intercept + FITTED.slope * REFERENCE_LOG_TOKENS[target]
        assert lenses * mean == pytest.approx(study, abs=1e-4)


def test_the_vote_keeps_what_the_skeptics_kept_in_the_study() -> None:
    assert vote_keeps(FITTED.skeptic_real) == pytest.approx(STUDY.fixed / STUDY.slim_20k, 1e-4)
    assert vote_keeps(1.0) == 1.0 and vote_keeps(0.0) == 0.0


def test_one_agent_finds_the_study_s_share() -> None:
    assert STUDY.one_agent == pytest.approx(5 / 216)
    read = FITTED.solo_read_tokens / REFERENCE_LIBRARY_TOKENS
    found = read * READ_HIT * visibility(CONTEXT_TOKENS)
    assert found == pytest.approx(STUDY.one_agent, rel=1e-3)


def test_the_fit_moves_with_the_study_s_numbers() -> None:
    other = fit(study=type(STUDY)(slim_20k=0.5, slim_100k=0.1, fixed=0.45))
    assert other.slope < FITTED.slope and other.skeptic_real > FITTED.skeptic_real
    assert math.isclose(vote_keeps(other.skeptic_real), 0.9, rel_tol=1e-4)
