"""Fixtures for the runtime tests: a live fake chat-completions server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_key import KEY

from runtime import Budget
from runtime.testing import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


# -- one contract, two backends (issue 16) -------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_location(request, tmp_path) -> str:
    """Where a ledger lives: a file, or a fresh database on a real PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "answers.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture(params=["memory", "postgresql"])
def make_budget(request) -> Iterator[Callable[..., Budget]]:
    """``make_budget(cap)``: the process's own Budget, or a SharedBudget on a real server."""
    made: list[Budget] = []
    if request.param == "memory":
        yield Budget
        return
    from runtime.shared_budget import SharedBudget

    url = request.getfixturevalue("pg_url")

    def make(cap: float | None = None, **options: Any) -> Budget:
        budget = SharedBudget(url, f"b{len(made)}", cap=cap, **options)
        made.append(budget)
        return budget

    yield make
    for budget in made:
        budget.close()
