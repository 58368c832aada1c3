"""The project's stores on a shared server, and ``planlang ledger copy`` (issue 16)."""

import json

import pytest
from cli_calls import run as cli_run

from planlang.project import ProjectError, load_project
from runtime import LLM, Ledger, Reply, fingerprint
from runtime.testing import FakeOpenAI

KEY = "sk-planlang-ledger-test-never-printed"
PLAN = """
answers = parallel([lambda i=i: agent(f"question {i}", schema={"type": "object",
    "properties": {"answer": {"type": "string"}}, "required": ["answer"]}, model="scan")
    for i in range(4)])
result = [a["answer"] for a in answers]
"""
CONFIG = """
[planlang]
max_agents = 20
concurrency = 4
retries = 1
backoff_base = 0.01
[planlang.roles.scan]
model = "small"
price = 0.5
[gate]
max_median = 10
[state]
ledger = "{url}"
gate = "{url}"
budget = "team"
"""


def run(args, capsys):
    return cli_run(args, capsys, never=(KEY,))


def _fill(path, n):
    with Ledger(path) as ledger:
        for i in range(n):
            messages = [{"role": "user", "content": f"q{i}"}]
            ledger.put(fingerprint("m", messages, {}, 0), Reply(text=f"a{i}", model="m"))


def test_copy_moves_answers_between_sqlite_and_postgresql_and_back(tmp_path, pg_url, capsys):
    local = tmp_path / "local.db"
    _fill(local, 30)
    code, _, err = run(["ledger", "copy", str(local), pg_url], capsys)
    assert code == 0 and "Copied 30 answers" in err
    code, _, err = run(["ledger", "copy", str(local), pg_url], capsys)
    assert code == 0 and "Copied 0 answers" in err and "30 were there already" in err
    home = tmp_path / "home.db"
    assert run(["ledger", "copy", pg_url, str(home)], capsys)[0] == 0
    with Ledger(local) as original, Ledger(home) as copy:
        assert sorted(copy.keys()) == sorted(original.keys())
        replay = LLM(copy, mode="replay")  # strict replay from the copy: nothing is sent
        answer = replay.chat([{"role": "user", "content": "q7"}], model="m")
        assert answer.cached and answer.text == "a7"


def test_copy_from_an_unknown_scheme_is_one_line_and_exit_2(tmp_path, capsys):
    code, _, err = run(["ledger", "copy", "mysql://db/answers", str(tmp_path / "x.db")], capsys)
    assert code == 2 and "Unknown store location 'mysql://db/answers'" in err
    assert err.count("\n") == 1 and not (tmp_path / "x.db").exists()


def test_a_project_with_an_unknown_ledger_scheme_is_refused(tmp_path):
    (tmp_path / "planlang.toml").write_text('[state]\nledger = "redis://cache/0"\n')
    with pytest.raises(ProjectError, match=r"planlang.toml: \[state\] ledger: Unknown store"):
        load_project(tmp_path / "planlang.toml")


def test_a_shared_budget_needs_a_server_ledger(tmp_path):
    (tmp_path / "planlang.toml").write_text('[state]\nbudget = "team"\n')
    with pytest.raises(ProjectError, match="needs ledger"):
        load_project(tmp_path / "planlang.toml")


def test_a_run_keeps_answers_budget_and_gate_on_the_server(tmp_path, pg_url, monkeypatch,
                                                           capsys):  # fmt: skip
    (tmp_path / "planlang.toml").write_text(CONFIG.format(url=pg_url))
    (tmp_path / "plan.py").write_text(PLAN)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAI(api_key=KEY) as server:
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_API_KEY", KEY)
        code, _, err = run(["run", "plan.py", "--budget", "10"], capsys)
        assert code == 0, err
        assert server.requests == 4
    assert not (tmp_path / ".planlang" / "answers.db").exists()
    assert not (tmp_path / ".planlang" / "gate.db").exists()
    (folder,) = (tmp_path / ".planlang" / "runs").iterdir()
    assert json.loads((folder / "result.json").read_text()) == [f"question {i}" for i in range(4)]
    from runtime.shared_budget import SharedBudget

    team = SharedBudget(pg_url, "team")
    assert team.snapshot() == (2.0, 0.0, 10.0)
    team.close()
    # Another machine (no local state) replays from the shared ledger and gate: nothing is sent.
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "planlang.toml").write_text(CONFIG.format(url=pg_url))
    (other / "plan.py").write_text(PLAN)
    monkeypatch.chdir(other)
    code, _, err = run(["run", "plan.py", "--replay"], capsys)
    assert code == 0, err
    import psycopg

    with psycopg.connect(pg_url) as conn:  # the first machine's approval was used, not a new one
        assert conn.execute("SELECT count(*) FROM planlang_plans").fetchone() == (1,)


def test_a_gate_key_file_others_can_read_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    key = tmp_path / "gate.key"
    (tmp_path / "planlang.toml").write_text(f'[state]\ngate_key = "{key}"\n')
    monkeypatch.chdir(tmp_path)
    assert run(["held"], capsys)[0] == 0  # the key is made, owner-only
    key.chmod(0o644)
    code, _, err = run(["held"], capsys)
    assert code == 2 and f"{key}: the gate's key file is mode 644" in err
    assert err.count("\n") == 1
