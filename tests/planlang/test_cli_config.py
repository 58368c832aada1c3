"""Every config mistake is one line with the file, the key and why, exit 2 (issue 13, item 12).

It is an error for a mistake in ``planlang.toml`` to print a traceback, a validator's internals
or nothing at all (a typo'd key accepted silently).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from planlang.cli import main
from planlang.price import price

ROOT = Path(__file__).resolve().parents[2]
AUDITED = ROOT / "data" / "algos" / "audited"
KIT = '[plan]\nhost = ["kit.audit_words:audit_words"]\n'

MISTAKES = [
    ("corpus-nowhere", KIT + 'options = { corpus = "nowhere" }\n', "options.corpus",
     "does not exist"),
    ("corpus-missing", KIT, "options.corpus", "missing"),
    ("shard-tokens-many", KIT + f'options = {{ corpus = "{AUDITED}", shard_tokens = "many" }}\n',
     "options.shard_tokens", "positive integer"),
    ("option-typo", KIT + f'options = {{ corpus = "{AUDITED}", shard_tokenz = 5 }}\n',
     "options.shard_tokenz", "unknown option"),
    ("settings-typo", "[planlang]\nconcurrencyy = 3\n", "[planlang] concurrencyy", "unknown key"),
    ("settings-type", '[planlang]\nconcurrency = "x"\n', "[planlang] concurrency", "integer"),
    ("gate-typo", "[gate]\nmax_cieling = 3\n", "[gate] max_cieling", "unknown key"),
    ("plan-typo", "[plan]\nhosts = 3\n", "[plan] hosts", "unknown key"),
    ("state-typo", "[state]\ndirr = 3\n", "[state] dirr", "unknown key"),
    ("provider-typo", '[plan]\nhost = ["kit.audit_words:no_such"]\n', "kit.audit_words:no_such",
     "cannot load"),
]  # fmt: skip


def in_this_process(folder, command, capsys, monkeypatch):
    """``planlang COMMAND`` in ``folder``, called through its entry point here."""
    monkeypatch.chdir(folder)
    code = main(command)
    return code, capsys.readouterr().err


def as_a_command(folder, command, capsys, monkeypatch):
    """``python -m planlang COMMAND`` in ``folder``: the real command line."""
    done = subprocess.run(
        [sys.executable, "-m", "planlang", *command], cwd=folder, capture_output=True,
        text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    return done.returncode, done.stderr


# Each mistake through the entry point (a process each cost ~0.5 s, 20 of them); two of them
# through the real command line as well, so a process's own output is held to the same line.
CASES = [pytest.param(m[1:], command, in_this_process, id=f"{m[0]}-{command[0]}")
         for m in MISTAKES
         for command in (["price", "plan.py", "--seeds", "1"], ["submit", "plan.py"])] + [
    pytest.param(MISTAKES[0][1:], ["price", "plan.py", "--seeds", "1"], as_a_command,
                 id=f"{MISTAKES[0][0]}-price-process"),
    pytest.param(MISTAKES[4][1:], ["submit", "plan.py"], as_a_command,
                 id=f"{MISTAKES[4][0]}-submit-process"),
]  # fmt: skip


@pytest.mark.parametrize(("mistake", "command", "invoke"), CASES)
def test_a_config_mistake_is_one_line_naming_the_file_and_key(tmp_path, mistake, command, invoke,
                                                               capsys, monkeypatch):  # fmt: skip
    config, key, why = mistake
    (tmp_path / "planlang.toml").write_text(config)
    (tmp_path / "plan.py").write_text('result = agent("hi")\n')
    code, stderr = invoke(tmp_path, command, capsys, monkeypatch)
    assert code == 2, stderr
    assert "Traceback" not in stderr and "_FromFile" not in stderr
    [line] = stderr.strip().splitlines()
    assert "planlang.toml" in line and key in line and why in line


def test_a_schema_the_stand_in_cannot_satisfy_says_so():
    schema = {"type": "integer", "minimum": 5, "maximum": 1}
    report = price(f"result = agent('q', schema={schema!r})\n", seeds=1)
    [problem] = report.problems
    assert "minimum above maximum" in problem.message
    assert "randrange" not in problem.message
