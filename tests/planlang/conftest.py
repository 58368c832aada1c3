"""The red-team suites run twice: in-process and under process isolation.

The rest of the suite tests the in-process sandbox (``tests/conftest.py`` makes it the default
there, for speed); the red-team modules are parametrized over both modes through the
``isolation`` fixture, which sets the default every ``Sandbox`` of the test gets.
"""

from __future__ import annotations

import os

import pytest

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
