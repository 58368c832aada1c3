"""`planlang check`: one line per problem, exit codes 0 / 1 / 2, never a traceback."""

import json
import subprocess
import sys

import pytest
from cli_calls import run

GOOD = 'phase("a")\nresult = agent("hi")\n'


@pytest.fixture
def plans(tmp_path):
    def write(name, content, mode="w"):
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return str(path)

    return write


def test_a_good_plan_exits_0(plans, capsys):
    code, out, err = run(["check", plans("ok.py", GOOD)], capsys)
    assert code == 0
    assert out == ""
    assert "passed" in err


def test_a_refused_plan_prints_each_problem_like_ruff_and_exits_1(plans, capsys):
    path = plans("bad.py", "import os\nx = [].__dict__\n")
    code, out, _ = run(["check", path], capsys)
    assert code == 1
    assert out.splitlines() == [
        f"{path}:1:1: PL101 imports are not part of the plan language; use the host words",
        f"{path}:2:5: PL204 attribute '__dict__' starts with '_'",
    ]


def test_json_output_carries_the_same_problems(plans, capsys):
    path = plans("bad.py", "import os\n")
    code, out, _ = run(["check", "--json", path], capsys)
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False
    assert report["problems"] == [
        {"filename": path, "line": 1, "col": 1, "code": "PL101",
         "message": "imports are not part of the plan language; use the host words"}
    ]  # fmt: skip


def test_json_output_for_a_good_plan(plans, capsys):
    code, out, _ = run(["check", "--json", plans("ok.py", GOOD)], capsys)
    assert code == 0
    assert json.loads(out) == {"ok": True, "checked": 1, "problems": [], "errors": []}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.py", "", "PL002 the plan is empty"),
        ("syntax.py", "x = (\n", "PL001 syntax error"),
    ],
)
def test_empty_and_unparseable_plans_are_refused_with_one_line(
    plans, capsys, name, content, message
):
    code, out, _ = run(["check", plans(name, content)], capsys)
    assert code == 1
    assert len(out.splitlines()) == 1
    assert message in out


def test_a_missing_file_is_an_io_error(tmp_path, capsys):
    code, _, err = run(["check", str(tmp_path / "nope.py")], capsys)
    assert code == 2
    assert "no such file" in err


def test_a_folder_without_plans_is_an_io_error(tmp_path, capsys):
    code, _, err = run(["check", str(tmp_path)], capsys)
    assert code == 2
    assert "no *.py file in this folder" in err


def test_a_non_utf8_file_is_an_io_error(plans, capsys):
    code, _, err = run(["check", plans("latin.py", b"x = '\xe9'\n")], capsys)
    assert code == 2
    assert "not UTF-8" in err


def test_a_file_over_1_mb_is_an_io_error(plans, capsys):
    code, _, err = run(["check", plans("big.py", "x = 1\n" * 200_000)], capsys)
    assert code == 2
    assert "over the 1 MB limit" in err


def test_io_errors_win_over_refusals_and_every_file_is_still_checked(plans, tmp_path, capsys):
    bad = plans("bad.py", "import os\n")
    code, out, err = run(["check", bad, str(tmp_path / "nope.py")], capsys)
    assert code == 2
    assert "PL101" in out
    assert "no such file" in err


@pytest.mark.parametrize("args", [["check"], ["check", "--bogus", "x.py"], ["nonsense"], []])
def test_usage_errors_exit_2(args, capsys):
    code, _, _ = run(args, capsys)
    assert code == 2


def test_the_console_script_runs_as_a_subprocess(plans):
    proc = subprocess.run(
        [sys.executable, "-m", "planlang", "check", plans("bad.py", "import os\n")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "PL101" in proc.stdout
    assert "Traceback" not in proc.stderr
