"""Every config mistake is one line with the file, the key and why, exit 2 (issue 13, item 12).

It is an error for a mistake in ``planlang.toml`` to print a traceback, a validator's internals
or nothing at all (a typo'd key accepted silently).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize(("config", "key", "why"), [m[1:] for m in MISTAKES],
                         ids=[m[0] for m in MISTAKES])  # fmt: skip
@pytest.mark.parametrize("command", [["price", "plan.py", "--seeds", "1"], ["submit", "plan.py"]])
def test_a_config_mistake_is_one_line_naming_the_file_and_key(tmp_path, config, key, why,
                                                               command):  # fmt: skip
    (tmp_path / "planlang.toml").write_text(config)
    (tmp_path / "plan.py").write_text('result = agent("hi")\n')
    done = subprocess.run(
        [sys.executable, "-m", "planlang", *command], cwd=tmp_path, capture_output=True,
        text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "_FromFile" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "planlang.toml" in line and key in line and why in line


def test_a_schema_the_stand_in_cannot_satisfy_says_so():
    schema = {"type": "integer", "minimum": 5, "maximum": 1}
    report = price(f"result = agent('q', schema={schema!r})\n", seeds=1)
    [problem] = report.problems
    assert "minimum above maximum" in problem.message
    assert "randrange" not in problem.message
