"""``planlang`` commands called in this process, as the CLI tests call them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planlang.cli import main
from runtime.testing import FakeOpenAI

KEY = "sk-cli-tests-secret-0123456789abcdef"  # the endpoint's key: never printed


def write_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: str,
                  toml: str = "") -> None:  # fmt: skip
    """``plan.py`` and a ``planlang.toml`` without retries (plus ``toml``), the folder made
    the current one."""
    (tmp_path / "planlang.toml").write_text("[planlang]\nretries = 0\n" + toml)
    (tmp_path / "plan.py").write_text(plan)
    monkeypatch.chdir(tmp_path)


def fake_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A local OpenAI-compatible server with ``KEY``, named by LLM_BASE_URL and LLM_API_KEY
    (the body of a test module's ``endpoint`` fixture)."""
    with FakeOpenAI(api_key=KEY) as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_API_KEY", KEY)
        yield fake


def run(args: list[str], capsys: Any, never: Iterable[str] = ()) -> tuple[int, str, str]:
    """``main(args)``'s exit code, stdout and stderr; a traceback, or any of ``never`` (a
    key, say) in what it printed, fails the test."""
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    for secret in never:
        assert secret not in out + err
    return code, out, err
