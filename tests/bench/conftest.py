"""Fixtures for the bench tests."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bench_helpers import ALGOS


@pytest.fixture(scope="session")
def algos_key() -> dict[str, Any]:
    return json.loads((ALGOS / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
