"""The red-team suites run twice: in-process and under process isolation.

The rest of the suite tests the in-process sandbox (``tests/conftest.py`` makes it the default
there, for speed); the red-team modules are parametrized over both modes through the
``isolation`` fixture, which sets the default every ``Sandbox`` of the test gets.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from planlang.isolation.pool import Pool

# the wall between plan and host (issue 13, items 18-21) must hold in both modes too
BOTH_MODES = ("test_redteam", "test_redteam_fresh", "test_redteam_infer", "test_wall_truthful")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    if module in BOTH_MODES and "isolation" in metafunc.fixturenames:
        metafunc.parametrize("isolation", ["inprocess", "process"], indirect=True)


@pytest.fixture(autouse=True)
def isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mode = getattr(request, "param", None)
    if mode is None:  # not a red-team module: the suite's default (tests/conftest.py)
        return os.environ.get("PLANLANG_ISOLATION", "process")
    monkeypatch.setenv("PLANLANG_ISOLATION", mode)
    return str(mode)


@pytest.fixture(scope="session")
def probe_pool() -> Iterator[Pool]:
    """One pool with the probe hook for every module whose tests run probes in its children
    (a pool's fork server costs about 0.7 s to start). Each run still gets a child of its own,
    forked fresh and never reused; a test that breaks, counts or closes a fork server makes a
    pool of its own."""
    made = Pool(1, probes=True)
    try:
        yield made
    finally:
        made.close()
