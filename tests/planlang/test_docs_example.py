"""The example test in docs/examples runs with the suite, so the documented example cannot rot."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "test_fuzz_my_host_words.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_example_fuzz", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE_MODULE = _load()
EXAMPLE_TESTS = sorted(name for name in vars(EXAMPLE_MODULE) if name.startswith("test_"))


def test_the_example_has_both_properties() -> None:
    assert EXAMPLE_TESTS == [
        "test_my_host_words_survive_generated_plans",
        "test_my_policy_refuses_every_near_miss_at_its_line",
    ]


@pytest.mark.parametrize("name", EXAMPLE_TESTS)
def test_the_documented_example_passes(name: str) -> None:
    getattr(EXAMPLE_MODULE, name)()


def test_the_example_catches_a_host_word_that_breaks_its_schema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A lookup that answers a negative price must make the example's first property fail.
    monkeypatch.setattr(
        EXAMPLE_MODULE, "lookup", lambda sku: {"sku": sku, "price": -1.0, "in_stock": False}
    )
    with pytest.raises(AssertionError, match="ValidationError"):
        EXAMPLE_MODULE.test_my_host_words_survive_generated_plans()
