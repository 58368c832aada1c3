"""Settings: defaults < TOML file < environment < keyword arguments, all validated."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from runtime import Settings

TOML = """
concurrency = 3
base_url = "http://localhost:9/v1"
cap = 2.5
[roles.scan]
model = "small"
price = 0.02
[roles.verify]
model = "large"
price = 0.2
"""


def test_toml_then_environment_then_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "planlang.toml"
    path.write_text(TOML)
    loaded = Settings.load(path)
    assert (loaded.concurrency, loaded.cap, loaded.base_url) == (3, 2.5, "http://localhost:9/v1")
    assert loaded.role("verify").model == "large" and loaded.dearest_price == 0.2
    monkeypatch.setenv("PLANLANG_CONCURRENCY", "5")
    monkeypatch.setenv("LLM_API_KEY", "sk-settings-secret")
    from_env = Settings.load(path)
    assert from_env.concurrency == 5
    assert "sk-settings-secret" not in repr(from_env) and "sk-settings-secret" not in str(from_env)
    assert from_env.api_key is not None
    assert from_env.api_key.get_secret_value() == "sk-settings-secret"
    assert Settings.load(path, concurrency=7).concurrency == 7


def test_roles_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANLANG_ROLES", '{"scan": {"model": "m", "price": 0.5}}')
    assert Settings().role("scan").price == 0.5


def test_invalid_values_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="concurrency"):
        Settings(concurrency=0)
    with pytest.raises(ValidationError, match="base_url"):
        Settings(base_url="ftp://x")
    bad = tmp_path / "bad.toml"
    bad.write_text("concurrency = [")
    with pytest.raises(ValueError, match="not valid TOML"):
        Settings.load(bad)
    with pytest.raises(FileNotFoundError, match="missing.toml"):
        Settings.load(tmp_path / "missing.toml")
    (tmp_path / "neg.toml").write_text("[roles.scan]\nmodel = 'm'\nprice = -1\n")
    with pytest.raises(ValidationError, match="price"):
        Settings.load(tmp_path / "neg.toml")
