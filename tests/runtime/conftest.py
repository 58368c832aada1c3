"""Fixtures for the runtime tests: a live fake chat-completions server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runtime.testing import FakeOpenAI

KEY = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake
