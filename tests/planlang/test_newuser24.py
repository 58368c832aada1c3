"""Defects a new user met (newuser24): each test fails until its defect is mended.

Every endpoint is a local server started by the test; nothing depends on machine load.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_calls import run

from runtime.testing import FakeOpenAI

KEY = "sk-newuser24-secret-0123456789abcdef"


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: str, toml: str = "") -> None:
    (tmp_path / "planlang.toml").write_text("[planlang]\nretries = 0\n" + toml)
    (tmp_path / "plan.py").write_text(plan)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_API_KEY", KEY)
        yield fake


# -- the gate under another key --------------------------------------------------------------------


def _held_under_another_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A plan held under one gate key, then read under another (a second shell's setting)."""
    _project(tmp_path, monkeypatch, 'result = agent("q")\n', "[gate]\nmax_median = 0\n")
    monkeypatch.setenv("PLANLANG_GATE_KEY", str(tmp_path / "first.key"))
    code, _, _ = run(["submit", "plan.py"], capsys)
    assert code == 1
    monkeypatch.setenv("PLANLANG_GATE_KEY", str(tmp_path / "second.key"))


@pytest.mark.parametrize("as_json", [False, True])
def test_reject_of_a_row_whose_seal_fails_is_one_line_not_a_traceback(
    tmp_path, monkeypatch, capsys, as_json
):
    """`planlang reject 1` of a row sealed with another key crashed with TamperedPlan's
    traceback, where `approve 1` and `held` say it in one line, exit 1."""
    _held_under_another_key(tmp_path, monkeypatch, capsys)
    code, out, err = run(["reject", "1", *(["--json"] if as_json else [])], capsys)
    assert code == 1, (out, err)
    said = json.loads(out)["error"] if as_json else err
    assert "does not match its seal" in said, (out, err)
