"""ruff and mypy, as configured in pyproject.toml, are clean over the whole tree."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def run(*command):
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_ruff_check_and_format_are_clean():
    if shutil.which("ruff") is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    lint = run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout
    fmt = run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout


@pytest.mark.slow
def test_mypy_is_clean():
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout[-3000:]
