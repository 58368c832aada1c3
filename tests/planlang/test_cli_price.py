"""`planlang price | approve | held | runs | show` and their exit codes."""

import json

import pytest
from cli_calls import run

PLAN = """
phase("scan")
answers = parallel([lambda i=i: agent(f"q {i}", schema={"type": "integer"}, model="scan")
                    for i in range(3)])
result = answers
"""

CONFIG = """
[planlang]
max_agents = 20
[planlang.roles.scan]
model = "small"
price = 0.5

[gate]
max_median = {max_median}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    def make(max_median=10.0, plan=PLAN):
        (tmp_path / "planlang.toml").write_text(CONFIG.format(max_median=max_median))
        (tmp_path / "plan.py").write_text(plan)
        monkeypatch.chdir(tmp_path)
        return tmp_path

    return make


def test_price_prints_a_table_and_exits_0(project, capsys):
    project()
    code, out, _ = run(["price", "plan.py", "--seeds", "2"], capsys)
    assert code == 0
    assert "Price of plan.py" in out
    assert "scan" in out and "1.5" in out  # 3 calls x 0.5
    assert "Hard ceiling: 40 credits" in out  # 20 agents x 4 turns x 0.5
    assert "No problems met in rehearsal." in out


def test_price_json_carries_the_numbers(project, capsys):
    project()
    code, out, _ = run(["price", "plan.py", "--seeds", "2", "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["total"]["credits"] == {"min": 1.5, "median": 1.5, "max": 1.5}
    assert report["phases"]["scan"]["calls"]["median"] == 3
    assert report["seeds"] == [0, 1]
    assert report["ok"] is True


def test_price_of_a_plan_with_rehearsal_problems_exits_1(project, capsys):
    project(plan="x = {}\ny = x['nope']\n")
    code, out, _ = run(["price", "plan.py", "--seeds", "1"], capsys)
    assert code == 1
    assert "plan.py:2: crash: KeyError" in out


def test_price_of_a_refused_plan_exits_1_with_its_problems(project, capsys):
    project(plan="import os\n")
    code, out, _ = run(["price", "plan.py"], capsys)
    assert code == 1
    assert "plan.py:1:1: PL101" in out


@pytest.mark.parametrize(
    "args", [["price"], ["price", "nope.py"], ["price", "plan.py", "--seeds", "0"]]
)
def test_price_usage_and_io_errors_exit_2(project, capsys, args):
    project()
    code, _, _ = run(args, capsys)
    assert code == 2


def test_a_broken_config_is_a_usage_error(project, capsys):
    root = project()
    (root / "planlang.toml").write_text("[planlang]\nconcurrency = 'many'\n")
    code, _, err = run(["price", "plan.py"], capsys)
    assert code == 2
    assert "planlang.toml" in err


def test_run_holds_a_plan_over_the_policy_then_approve_lets_it_go(project, capsys, monkeypatch):
    project(max_median=0.1)
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    code, _, err = run(["run", "plan.py"], capsys)
    assert code == 1
    assert "held for a person" in err
    code, out, _ = run(["held"], capsys)
    assert code == 0 and "median credits 1.5 are over 0.1" in out
    plan_id = out.split()[0]
    code, out, _ = run(["approve", plan_id, "--by", "tester"], capsys)
    assert code == 0 and f"Approved plan {plan_id}" in out
    code, out, _ = run(["held"], capsys)
    assert out.strip() == "No plan is held."


def test_approving_an_unknown_plan_is_a_usage_error(project, capsys):
    project()
    code, _, err = run(["approve", "999"], capsys)
    assert code == 2
    assert "no plan 999" in err


def test_run_without_an_endpoint_is_a_usage_error(project, capsys, monkeypatch):
    project()
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.delenv("PLANLANG_BASE_URL", raising=False)
    code, _, err = run(["run", "plan.py"], capsys)
    assert code == 2
    assert "No endpoint" in err


def test_runs_and_show_with_no_runs(project, capsys):
    project()
    code, out, _ = run(["runs"], capsys)
    assert code == 0 and "No runs yet." in out
    code, _, err = run(["show", "nope"], capsys)
    assert code == 2 and "no run 'nope'" in err


def test_price_without_a_project_says_why_a_host_word_is_missing(tmp_path, monkeypatch, capsys):
    (tmp_path / "plan.py").write_text("found = shards()\nresult = found\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["price", "plan.py"], capsys)
    assert code == 1
    assert "NameError: name 'shards' is not defined" in " ".join(out.split())
    assert "no planlang.toml in" in err and "pass --config" in err


def test_price_with_a_project_gives_no_such_note(project, capsys):
    project(plan="result = undefined_word()\n")
    code, out, err = run(["price", "plan.py"], capsys)
    assert code == 1 and "NameError" in out and "planlang.toml" not in err
