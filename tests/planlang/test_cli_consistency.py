"""The newcomer's second pass over the CLI: every command finds its project the same way
(``doctor`` and ``mcp serve`` too), ``--json`` errors are JSON, ``runs`` lists a run whose
record is unreadable, and an option that would be ignored is a usage error."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import run

ROOT = Path(__file__).parents[2]
BAD_TOML = '[planlang]\nconcurrency = "many"\n'


def _json_error(out: str) -> str:
    said = json.loads(out)
    assert (said["ok"], said["problems"]) == (False, [])
    return said["error"]


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
    code, out, err = run(["doctor"], capsys)
    assert code == 2 and out == ""
    assert str(tmp_path / "planlang.toml") in err and "concurrency" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = run(["doctor", "--json"], capsys)  # with --json, the error is JSON
    assert code == 2 and err == ""
    assert str(tmp_path / "planlang.toml") in _json_error(out)


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


# -- --json errors are JSON ---------------------------------------------------------------------

PLAN = 'phase("a")\nresult = agent("hi")\n'


@pytest.fixture
def plan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "plan.py"
    path.write_text(PLAN)
    return str(path)


NO_SUCH = [["show", "20261202-000000-00000000-000000"], ["approve", "7"], ["reject", "7"],
           ["raise", "nope", "3"], ["cancel", "nope"]]  # fmt: skip


@pytest.mark.parametrize("command", NO_SUCH)
def test_a_usage_error_with_json_is_json_with_exit_2(plan, capsys, command):
    code, out, err = run([*command, "--json"], capsys)
    assert code == 2 and err == ""
    assert "no run" in _json_error(out) or "There is no plan 7" in _json_error(out)


@pytest.mark.parametrize("command", [["held"], ["approve", "1"], ["show", "x"], ["runs"],
                                     ["submit", "PLAN"]])  # fmt: skip
def test_a_gate_or_config_error_with_json_is_json(plan, tmp_path, capsys, command):
    state = tmp_path / ".planlang"
    state.mkdir()
    (state / "gate.db").write_text("not a database, " * 100)
    if command[0] in ("show", "runs"):  # no gate: a project file that is not TOML
        (tmp_path / "planlang.toml").write_text("[planlang\n")
    code, out, err = run([plan if arg == "PLAN" else arg for arg in command] + ["--json"], capsys)
    assert code == 2 and err == ""
    error = _json_error(out)
    assert "not a gate store" in error or "not valid TOML" in error


def test_approving_a_rejected_plan_with_json_is_json_with_exit_1(plan, tmp_path, capsys):
    (tmp_path / "planlang.toml").write_text("[gate]\nmax_ceiling = 0.001\n")
    assert run(["submit", plan], capsys)[0] == 1
    assert run(["reject", "1"], capsys)[0] == 0
    code, out, err = run(["approve", "1", "--json"], capsys)
    assert code == 1 and err == ""
    assert _json_error(out) == "Plan 1 was rejected by a person; submit it again."
    code, out, err = run(["reject", "1", "--json"], capsys)
    assert code == 1 and "not held" in _json_error(out)


@pytest.mark.parametrize("broken", ["[{", pytest.param("[" * 100_000, id="deep")])
def test_show_of_a_run_whose_records_are_not_json_is_one_line(plan, tmp_path, capsys, broken):
    # nested past the parser's recursion, threads.json was a RecursionError traceback
    folder = tmp_path / ".planlang" / "runs" / "r1"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"id": "r1", "status": "completed"}))
    (folder / "threads.json").write_text(broken)
    code, out, err = run(["show", "r1", "--json"], capsys)
    assert code == 2 and "threads.json is unreadable" in _json_error(out)
    code, out, err = run(["show", "r1"], capsys)
    assert code == 2 and err.startswith("Error: run 'r1': threads.json is unreadable: ")
    assert len(err.splitlines()) == 1


# -- runs lists a run whose record is unreadable ---------------------------------------------


def _runs_with_a_broken_one(tmp_path: Path, broken: str) -> Path:
    runs = tmp_path / ".planlang" / "runs"
    good = {"id": "20261202-100000-aaaaaaaa-000001", "status": "completed", "filename": "p.py",
            "started": 1.0, "accounting": {"total": {"calls": 2, "credits": 0.5}}}  # fmt: skip
    (runs / good["id"]).mkdir(parents=True)
    (runs / good["id"] / "meta.json").write_text(json.dumps(good))
    (runs / "20261202-110000-bbbbbbbb-000002").mkdir()
    (runs / "20261202-110000-bbbbbbbb-000002" / "meta.json").write_text(broken)
    return runs


BROKEN = [
    ('{"id": "half', "meta.json: not JSON ("),
    ("[1, 2]", "meta.json: a JSON list, not an object"),
    # an object that is no run's record: runs and show were a KeyError traceback
    ("{}", "meta.json: without 'id' and 'status' (a run's record names both)"),
    ('{"id": "20261202-110000-bbbbbbbb-000002"}', "meta.json: without 'status'"),
    ('{"id": 7, "status": "completed"}', "meta.json: without 'id'"),
    # nested past the parser's recursion: a RecursionError traceback
    pytest.param("[" * 100_000, "meta.json: not JSON (nested too deeply)", id="deep"),
]


@pytest.mark.parametrize(("broken", "why"), BROKEN)
def test_runs_lists_a_run_whose_meta_json_is_unreadable(tmp_path, capsys, monkeypatch, broken,
                                                        why):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    _runs_with_a_broken_one(tmp_path, broken)
    code, out, err = run(["runs"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("20261202-100000-aaaaaaaa-000001  completed")
    assert lines[1].startswith("20261202-110000-bbbbbbbb-000002  unreadable ")
    assert why in lines[1]
    code, out, err = run(["runs", "--json"], capsys)
    listed = json.loads(out)["runs"]
    assert code == 0 and [m["status"] for m in listed] == ["completed", "unreadable"]
    assert listed[1]["id"] == "20261202-110000-bbbbbbbb-000002" and why in listed[1]["error"]
    code, out, err = run(["show", "20261202-110000-bbbbbbbb-000002"], capsys)  # not "no run"
    assert code == 2 and err.startswith("Error: run '20261202-110000-bbbbbbbb-000002': " + why)


# -- the right article -----------------------------------------------------------------------


class Thing:
    pass


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_word_that_gives_an_object_says_an_object(isolation):
    # "word() gave a object, which is not plain data."
    from planlang import HostWord, PlanRuntimeError, Sandbox

    box = Sandbox(host={"word": HostWord(lambda: object())}, isolation=isolation)
    with pytest.raises(PlanRuntimeError) as raised:
        box.run("result = word()\n")
    assert "gave an object, which is not plain data" in str(raised.value)
    box = Sandbox(host={"word": HostWord(lambda: Thing())}, isolation=isolation)
    with pytest.raises(PlanRuntimeError, match="gave a Thing, which is not plain data"):
        box.run("result = word()\n")


def test_a_kind_takes_the_article_its_sound_takes():
    from planlang.errors import a_kind

    assert [a_kind(n) for n in ("object", "int", "list", "Ellipsis", "")] == [
        "an object", "an int", "a list", "an Ellipsis", "a "]  # fmt: skip
    assert a_kind("int", capital=True) == "An int" and a_kind("str", capital=True) == "A str"


def test_a_kind_says_a_letter_or_a_you_sound_as_it_is_said():
    # "word() gave an UUID" (uuid.uuid4 as a host word), "gave a RLock" (threading.RLock)
    from planlang.errors import a_kind

    names = ("UUID", "UserDict", "unicode", "RLock", "HTTPError", "SSLContext", "XMLParser",
             "IOBase", "OrderedDict", "NoneType", "Unknown", "uint8")  # fmt: skip
    said = ["a UUID", "a UserDict", "a unicode", "an RLock", "an HTTPError", "an SSLContext",
            "an XMLParser", "an IOBase", "an OrderedDict", "a NoneType", "an Unknown",
            "a uint8"]  # fmt: skip
    assert [a_kind(n) for n in names] == said
    assert a_kind("UUID", capital=True) == "A UUID" and a_kind("RLock", capital=True) == "An RLock"


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_word_that_gives_a_uuid_says_a_uuid(isolation):
    import uuid

    from planlang import HostWord, PlanRuntimeError, Sandbox

    box = Sandbox(host={"word": HostWord(uuid.uuid4)}, isolation=isolation)
    with pytest.raises(PlanRuntimeError, match="gave a UUID, which is not plain data"):
        box.run("result = word()\n")


# -- an option that would be ignored ---------------------------------------------------------


def test_stdin_filename_without_a_dash_is_a_usage_error(plan, capsys):
    # 'planlang check plan.py --stdin-filename other.py' checked plan.py, ignoring the option.
    said = ("--stdin-filename other.py: it names the plan read from '-', and no path is '-'; add "
            "'-' or leave the option out")  # fmt: skip
    code, out, err = run(["check", plan, "--stdin-filename", "other.py"], capsys)
    assert (code, out, err) == (2, "", f"error: {said}\n")
    code, out, err = run(["check", plan, "--stdin-filename", "other.py", "--json"], capsys)
    assert code == 2 and json.loads(out) == {"ok": False, "checked": 0, "problems": [],
                                             "errors": [said]}  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [["reject", "abc", "--json"], ["raise", "X", "nan", "--json"], ["show", "--json", "--html"]],
)
def test_a_parse_error_with_json_is_json(args, capsys, tmp_path, monkeypatch) -> None:
    """REVIEW12: click's own parse errors (a bad argument, a missing one) printed its usage
    text though --json was asked for; docs/CLI.md says a usage error is JSON then."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(args, capsys)
    assert code == 2
    assert _json_error(out)
    assert err == ""


def test_a_parse_error_without_json_is_text(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["reject", "abc"], capsys)
    assert code == 2
    assert out == ""
    assert "Usage:" in err or "Error" in err


# -- result of a run that has none -------------------------------------------------------------


def _run_folder(tmp_path: Path, status: str = "failed") -> Path:
    folder = tmp_path / ".planlang" / "runs" / "r1"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"id": "r1", "status": status}))
    return folder


def test_result_of_a_run_without_one_is_json_with_json(plan, tmp_path, capsys):
    # it printed a line of text on stderr and nothing on stdout, whatever --json said
    _run_folder(tmp_path)
    code, out, err = run(["result", "r1", "--json"], capsys)
    assert (code, err) == (1, "")
    assert _json_error(out) == "Run r1 has no result (failed)."
    code, out, err = run(["result", "r1"], capsys)
    assert (code, out, err) == (1, "", "Run r1 has no result (failed).\n")


def test_result_that_cannot_be_read_is_one_line(plan, tmp_path, capsys):
    # a result.json that is a folder, or not text, was a traceback
    folder = _run_folder(tmp_path, "completed")
    (folder / "result.json").mkdir()
    code, out, err = run(["result", "r1"], capsys)
    assert code == 2 and err.startswith("Error: run 'r1': result.json is unreadable: ")
    assert len(err.splitlines()) == 1
    code, out, err = run(["result", "r1", "--json"], capsys)
    assert code == 2 and "result.json is unreadable" in _json_error(out)
    (folder / "result.json").rmdir()
    (folder / "result.json").write_bytes(b"\xff\xfe{")
    code, out, err = run(["result", "r1"], capsys)
    assert code == 2 and "result.json is unreadable" in err
