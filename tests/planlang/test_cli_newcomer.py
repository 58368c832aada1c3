"""A newcomer's mistakes on the command line: each is one line and exit code 2, never a
traceback, and never a value that makes the price report invalid JSON."""

import json

import pytest

from planlang.cli import main

PLAN = 'phase("a")\nresult = agent("hi")\n'


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def plan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "plan.py"
    path.write_text(PLAN)
    return str(path)


@pytest.mark.parametrize("number", ["nan", "NaN", "inf", "1e400"])
@pytest.mark.parametrize("command", [["price", "PLAN", "--latency"], ["run", "PLAN", "--budget"],
                                     ["raise", "20261202-000000-00000000-000000"]])  # fmt: skip
def test_a_number_that_is_not_finite_is_a_usage_error(plan, capsys, monkeypatch, command, number):
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    args = [plan if arg == "PLAN" else arg for arg in command]
    code, out, err = run([*args, number], capsys)
    assert code == 2
    assert out == ""
    assert "is not a finite number" in err or "is not in the range 0<=x<=86400" in err


def test_a_latency_past_a_day_per_call_is_a_usage_error(plan, capsys):
    # 1e308 s is finite, but the wall-time estimate it makes is not ("Infinity" in the JSON)
    code, out, err = run(["price", plan, "--latency", "1e308", "--json"], capsys)
    assert code == 2
    assert "is not in the range 0<=x<=86400" in err


def test_the_price_report_is_json_at_the_longest_latency(plan, capsys):
    code, out, _ = run(["price", plan, "--seeds", "1", "--latency", "86400", "--json"], capsys)
    assert code == 0
    report = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert report["wall_seconds"]["max"] == 86400
