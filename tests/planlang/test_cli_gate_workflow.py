"""The gate's workflow and machine-readable output on every command (issue 13, items 8, 14).

It is an error for a held plan to be held again on every run of it, for `held` and `approve`
to hide the price and problems that held it, and for a command to have no `--json`.
"""

import json

import pytest

from planlang.cli import main
from runtime.testing import FakeOpenAI

KEY = "sk-planlang-gate-workflow-never-printed"
PLAN = 'result = parallel([lambda i=i: agent(f"q {i}", model="scan") for i in range(4)])\n'
CRASH = 'x = {}\nresult = [agent("q", model="scan"), x["missing"]]\n'
CONFIG = """
[planlang]
max_agents = 10
retries = 0
[planlang.roles.scan]
model = "small"
price = 0.5
[gate]
max_median = 1
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "planlang.toml").write_text(CONFIG)
    (tmp_path / "plan.py").write_text(PLAN)
    (tmp_path / "crash.py").write_text(CRASH)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_submit_decides_without_running_and_holds_once_per_sha(project, capsys):
    code, out, _ = cli(capsys, "submit", "plan.py")
    assert code == 1 and "is held for a person" in out
    assert "price: 2 credits median" in out and "held: median credits 2 are over 1" in out
    cli(capsys, "submit", "plan.py")
    code, out, _ = cli(capsys, "held", "--json")
    held = json.loads(out)["held"]
    assert [h["filename"] for h in held] == ["plan.py"]  # once, however often submitted
    assert held[0]["price"]["credits"]["median"] == 2 and held[0]["reasons"]


def test_held_and_approve_show_the_problems_that_held_a_plan(project, capsys):
    code, out, _ = cli(capsys, "submit", "crash.py")
    assert code == 1 and "problem: crash.py:2: crash: KeyError" in out
    code, out, _ = cli(capsys, "held")
    assert "problem: crash.py:2: crash: KeyError" in out
    plan_id = json.loads(cli(capsys, "held", "--json")[1])["held"][0]["id"]
    code, out, _ = cli(capsys, "approve", str(plan_id), "--by", "ann")
    assert code == 0 and "by ann" in out and "problem: crash.py:2: crash: KeyError" in out


def test_reject_refuses_a_held_plan_for_good(project, capsys, monkeypatch):
    cli(capsys, "submit", "plan.py")
    plan_id = json.loads(cli(capsys, "held", "--json")[1])["held"][0]["id"]
    code, out, _ = cli(capsys, "reject", str(plan_id), "--by", "bob", "--json")
    assert code == 0 and json.loads(out)["status"] == "rejected"
    assert json.loads(cli(capsys, "held", "--json")[1]) == {"held": []}
    code, _, err = cli(capsys, "approve", str(plan_id))
    assert code == 1 and "rejected by bob" in err
    code, _, err = cli(capsys, "reject", str(plan_id))
    assert code == 1 and "not held" in err


def test_a_rejection_taken_out_of_the_store_is_refused_in_one_line(project, capsys):
    import sqlite3

    cli(capsys, "submit", "plan.py")
    plan_id = json.loads(cli(capsys, "held", "--json")[1])["held"][0]["id"]
    assert cli(capsys, "reject", str(plan_id), "--by", "bob")[0] == 0
    db = sqlite3.connect(project / ".planlang" / "gate.db")
    db.execute("DELETE FROM rejections")  # the forged un-rejection: held again, for approval
    db.commit()
    db.close()
    for command in (["held"], ["approve", str(plan_id)]):
        code, _, err = cli(capsys, *command)
        assert code == 1 and "does not match its seal" in err and len(err.splitlines()) == 1
    code, out, _ = cli(capsys, "held", "--json")  # the same refusal, said in JSON
    refusal = json.loads(out)
    assert code == 1 and refusal["ok"] is False and "does not match its seal" in refusal["error"]


def test_every_run_command_speaks_json(project, capsys, monkeypatch):
    (project / "planlang.toml").write_text(CONFIG.replace("max_median = 1", "max_median = 10"))
    with FakeOpenAI(api_key=KEY) as server:
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_API_KEY", KEY)
        code, out, _ = cli(capsys, "run", "plan.py", "--json")
    outcome = json.loads(out)
    assert code == 0 and outcome["status"] == "completed" and outcome["failures"] == []
    assert outcome["result"] == [f"echo: q {i}" for i in range(4)]
    runs = json.loads(cli(capsys, "runs", "--json")[1])["runs"]
    assert [r["id"] for r in runs] == [outcome["id"]] and runs[0]["status"] == "completed"
    shown = json.loads(cli(capsys, "show", outcome["id"], "--json")[1])
    assert shown["result"] == outcome["result"] and len(shown["workers"]) == 4
    assert json.loads(cli(capsys, "result", outcome["id"], "--json")[1]) == outcome["result"]


def test_price_errors_are_json_too(project, capsys):
    (project / "planlang.toml").write_text("[gate]\nmax_cieling = 3\n")
    code, out, _ = cli(capsys, "price", "plan.py", "--json")
    assert code == 2
    error = json.loads(out)
    assert error["ok"] is False and "max_cieling: unknown key" in error["error"]
