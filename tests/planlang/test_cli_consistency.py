"""The newcomer's second pass over the CLI: every command finds its project the same way
(``doctor`` and ``mcp serve`` too), ``--json`` errors are JSON, ``runs`` lists a run whose
record is unreadable, and an option that would be ignored is a usage error."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planlang.cli import main

ROOT = Path(__file__).parents[2]
BAD_TOML = '[planlang]\nconcurrency = "many"\n'


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def below(tmp_path, monkeypatch):
    """A folder below the project's: the current folder, with no planlang.toml of its own."""
    folder = tmp_path / "plans" / "deeper"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    return folder


# -- doctor and mcp serve find the project as the others do -----------------------------------


def test_doctor_reads_the_planlang_toml_above_the_current_folder(tmp_path, below, capsys,
                                                                 monkeypatch):  # fmt: skip
    monkeypatch.delenv("PLANLANG_ISOLATION", raising=False)
    (tmp_path / "planlang.toml").write_text(BAD_TOML)
    code, out, err = run(["doctor", "--json"], capsys)
    assert code == 2 and out == ""
    assert str(tmp_path / "planlang.toml") in err and "concurrency" in err
    assert len(err.strip().splitlines()) == 1


def test_doctor_takes_the_project_given_by_config(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLANLANG_ISOLATION", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "planlang.toml").write_text(BAD_TOML)
    code, out, err = run(["doctor", "--config", str(elsewhere / "planlang.toml")], capsys)
    assert code == 2 and "concurrency" in err


def test_doctor_says_the_isolation_of_the_project_above(tmp_path, below, capsys, monkeypatch):
    monkeypatch.delenv("PLANLANG_ISOLATION", raising=False)
    (tmp_path / "planlang.toml").write_text('[planlang]\nisolation = "inprocess"\n')
    code, out, _ = run(["doctor", "--json"], capsys)
    assert json.loads(out)["isolation"] == "inprocess" and code == 1


def test_mcp_serve_reads_the_planlang_toml_above_the_current_folder(tmp_path, below):
    pytest.importorskip("mcp")
    (tmp_path / "planlang.toml").write_text(BAD_TOML)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "planlang", "mcp", "serve"], cwd=below,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert str(tmp_path / "planlang.toml") in done.stderr and "concurrency" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
