"""A newcomer's mistakes on the command line: each is one line and exit code 2, never a
traceback, and never a value that makes the price report invalid JSON."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import run

from planlang.cli import main

ROOT = Path(__file__).parents[2]

PLAN = 'phase("a")\nresult = agent("hi")\n'


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
    assert "is not in the range 0<=x<=86400" in json.loads(out)["error"]  # --json: JSON
    code, out, err = run(["price", plan, "--latency", "1e308"], capsys)
    assert (code, out) == (2, "")
    assert "is not in the range 0<=x<=86400" in err


def test_the_price_report_is_json_at_the_longest_latency(plan, capsys):
    code, out, _ = run(["price", plan, "--seeds", "1", "--latency", "86400", "--json"], capsys)
    assert code == 0
    report = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert report["wall_seconds"]["max"] == 86400


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("LLM_BASE_URL", "localhost:8000/v1",
         "environment variable LLM_BASE_URL: base_url must start with http:// or https://; "
         "got 'localhost:8000/v1'"),
        ("PLANLANG_CONCURRENCY", "x", "environment variable PLANLANG_CONCURRENCY: Input should "
         "be a valid integer, unable to parse string as an integer (got 'x')"),
        ("PLANLANG_ROLES", "scan=small", "environment variable PLANLANG_ROLES: not valid JSON"),
        ("PLANLANG_ISOLATION", "bogus", "environment variable PLANLANG_ISOLATION: Input should "
         "be 'process' or 'inprocess' (got 'bogus')"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("project", ["none", "a planlang.toml", "one without [planlang]"])
def test_a_bad_environment_variable_is_one_line_naming_the_variable(
    plan, tmp_path, capsys, monkeypatch, variable, value, said, project
):
    # Without a planlang.toml this was a traceback; with one, the line blamed the file's
    # [planlang] table (for LLM_BASE_URL, a key "PLANLANG_BASE_URL" it never had).
    if project != "none":
        table = "[planlang]\nconcurrency = 2\n" if project == "a planlang.toml" else "[gate]\n"
        (tmp_path / "planlang.toml").write_text(table)
    monkeypatch.setenv(variable, value)
    code, out, err = run(["price", plan], capsys)
    assert code == 2
    assert out == ""
    assert err.startswith(f"Error: {said}")
    assert len(err.splitlines()) == 1
    assert "planlang.toml" not in err


def test_a_bad_key_of_the_file_still_names_the_file(plan, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PLANLANG_CONCURRENCY", raising=False)
    (tmp_path / "planlang.toml").write_text('[planlang]\nconcurrency = "x"\nbase_url = "z"\n')
    code, _, err = run(["price", plan], capsys)
    assert code == 2
    assert err == (
        f"Error: {tmp_path / 'planlang.toml'}: [planlang] base_url: base_url must start with "
        "http:// or https://; got 'z'; [planlang] concurrency: Input should be a valid integer, "
        "unable to parse string as an integer (got 'x')\n"
    )


@pytest.mark.parametrize(
    ("key", "variable"),
    [("base_url", "LLM_BASE_URL"), ("base_url", "PLANLANG_BASE_URL"), ("api_key", "LLM_API_KEY")],
)
def test_a_key_of_the_file_the_environment_sets_too_is_not_unknown(
    plan, tmp_path, capsys, monkeypatch, key, variable
):
    # It was '[planlang] base_url: unknown key' (exit 2) whenever LLM_BASE_URL was exported.
    (tmp_path / "planlang.toml").write_text(f'[planlang]\n{key} = "http://from-the-file/v1"\n')
    monkeypatch.setenv(variable, "http://from-the-environment/v1")
    code, out, err = run(["price", plan, "--seeds", "1", "--json"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out)["ok"] is True


def test_the_environment_wins_over_the_file(tmp_path, monkeypatch):
    from runtime import Settings

    (tmp_path / "planlang.toml").write_text('[planlang]\nbase_url = "http://file/v1"\n')
    monkeypatch.delenv("PLANLANG_BASE_URL", raising=False)
    monkeypatch.setenv("LLM_BASE_URL", "http://environment/v1")
    assert Settings.load(tmp_path / "planlang.toml").base_url == "http://environment/v1"
    monkeypatch.delenv("LLM_BASE_URL")
    assert Settings.load(tmp_path / "planlang.toml").base_url == "http://file/v1"


def _check_stdin(folder: Path, data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    # a real pipe: the interpreter's own stdin, as a shell gives it
    command = [sys.executable, "-m", "planlang", "check", *args, "-"]
    return subprocess.run(command, input=data, capture_output=True, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=folder)  # fmt: skip


def test_stdin_that_is_not_utf8_is_said_so_as_for_a_file(tmp_path):
    # It was '-:1:1: PL001 cannot parse: 'utf-8' codec can't encode character '\udcff' in
    # position 9: surrogates not allowed', exit 1; a file with the same bytes says this.
    done = _check_stdin(tmp_path, b"result = '\xff'\n")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == b"error: -: not UTF-8 text (byte 10 is 0xff)\n"


def test_stdin_over_the_size_of_a_file_is_refused_as_a_file_is(tmp_path):
    done = _check_stdin(tmp_path, b"x = 1\n" * 200_000, "--stdin-filename", "big.py")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == b"error: big.py: over 1,000,000 bytes, the 1 MB limit\n"


def test_stdin_in_utf8_with_a_bom_passes(tmp_path):
    done = _check_stdin(tmp_path, "\ufeffresult = 'café'\n".encode())
    assert (done.returncode, done.stderr) == (0, b"The plan passed the check.\n")


def test_run_without_an_endpoint_says_what_to_set_at_a_shell(plan, capsys, monkeypatch):
    # It said 'pass base_url or set LLM_BASE_URL': planlang run has no base_url to pass.
    for name in ("LLM_BASE_URL", "PLANLANG_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    code, out, err = run(["run", plan], capsys)
    assert (code, out) == (2, "")
    assert err == ("Error: No endpoint: set LLM_BASE_URL to an OpenAI-compatible server (e.g. "
                   "https://host/v1), and LLM_API_KEY if it needs a key.\n")  # fmt: skip


def test_report_finds_a_run_by_its_id_from_a_folder_below_the_project(tmp_path, capsys,
                                                                        monkeypatch):  # fmt: skip
    # 'planlang runs' and 'show ID' found the project above; 'report ID' said "no run ID".
    from runtime.testing import FakeOpenAI

    (tmp_path / "planlang.toml").write_text("[planlang]\nretries = 0\n")
    (tmp_path / "plan.py").write_text(PLAN)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAI() as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        assert main(["run", "plan.py"]) == 0
    (folder,) = (tmp_path / ".planlang" / "runs").iterdir()
    below = tmp_path / "plans"
    below.mkdir()
    monkeypatch.chdir(below)
    capsys.readouterr()
    code, _, err = run(["report", folder.name, "-o", "page.html"], capsys)
    size = (below / "page.html").stat().st_size
    assert (code, err) == (0, f"Wrote page.html ({size:,} bytes).\n")


@pytest.mark.parametrize("source", ["# a plan to come\n", "# one\n\n   # two\n", "#\r\n"])
def test_a_plan_of_comments_only_is_empty(tmp_path, capsys, source):
    # docs/LANGUAGE.md: PL002 "the plan is empty"; a comment-only file passed the check.
    path = tmp_path / "todo.py"
    path.write_text(source)
    code, out, _ = run(["check", str(path)], capsys)
    assert code == 1
    assert out == f"{path}:1:1: PL002 the plan is empty: it has only comments\n"


def test_check_knows_the_project_s_mcp_servers(tmp_path, capsys):
    # 'planlang check mcp_plan.py' in a project naming [mcp.servers.notes] said "PL301
    # undefined name 'notes'" (docs/LANGUAGE.md: each server is a host object of the plan).
    (tmp_path / "planlang.toml").write_text('[mcp.servers.notes]\ncommand = ["nowhere"]\n')
    path = tmp_path / "plan.py"
    path.write_text('found = notes.search(query="deadline")\nresult = nodes\n')
    code, out, _ = run(["check", str(path)], capsys)
    assert code == 1
    assert out == (f"{path}:2:10: PL301 undefined name 'nodes': the plan does not define it "
                   "and no host word has that name\n")  # fmt: skip


def test_check_takes_the_project_given_by_config(tmp_path, capsys):
    # README prices examples/mcp_plan.py with --config examples/mcp.toml; 'planlang check' had
    # no --config ("No such option"), so the same plan could only be checked with PL301s.
    (tmp_path / "mcp.toml").write_text('[mcp.servers.notes]\ncommand = ["nowhere"]\n')
    path = tmp_path / "plan.py"
    path.write_text('result = notes.search(query="deadline")\n')
    code, _, err = run(["check", str(path), "--config", str(tmp_path / "mcp.toml")], capsys)
    assert (code, err) == (0, "The plan passed the check.\n")
    code, _, _ = run(["check", str(path)], capsys)
    assert code == 1  # no planlang.toml above: 'notes' is undefined
    code, _, err = run(["check", str(path), "--config", str(tmp_path / "none.toml")], capsys)
    assert code == 2
    assert "does not exist" in err


@pytest.mark.parametrize(
    ("flags", "said"),
    [(["-o", "page.html"], "-o page.html: -o writes the HTML page; add --html."),
     (["--json", "-o", "page.html"], "-o page.html: -o writes the HTML page; add --html."),
     (["--json", "--html"], "--json and --html: choose one.")],
)  # fmt: skip
@pytest.mark.parametrize("command", ["price", "show"])
def test_an_output_that_would_be_dropped_is_a_usage_error(plan, tmp_path, capsys, command, flags,
                                                          said):  # fmt: skip
    # 'planlang price plan.py -o page.html' printed the tables, wrote no page, exit 0; price
    # --json --html printed JSON, show --json --html a page.
    target = plan if command == "price" else "20261202-000000-00000000-000000"
    code, out, err = run([command, target, *flags], capsys)
    if "--json" in flags:  # the error as JSON on stdout (docs/CLI.md, JSON shapes)
        assert (code, json.loads(out), err) == (2, {"ok": False, "error": said, "problems": []}, "")
    else:
        assert (code, out) == (2, "")
        assert err.endswith(f"Error: {said}\n")
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_iter_with_two_arguments_says_so(isolation):
    # docs/LANGUAGE.md: "iter takes one argument"; the plan read "TypeError:
    # <lambda>.<locals>.<lambda>() takes 1 positional argument but 2 were given".
    import planlang

    box = planlang.Sandbox(host={}, isolation=isolation)
    with pytest.raises(planlang.PlanRuntimeError) as raised:
        box.run("xs = [1, 2]\nresult = list(iter(lambda: xs.pop(), 1))\n")
    assert str(raised.value) == (
        "plan.py:2: TypeError: iter() takes exactly one argument in a plan (2 given)"
    )
    assert box.run("result = list(iter([1, 2]))\n") == [1, 2]


def _limited_memory() -> None:  # a regression reads /dev/zero into 2 GiB, not the machine
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("command", ["check", "price"])
def test_a_plan_path_without_a_size_is_read_up_to_the_limit(tmp_path, command):
    # 'planlang check /dev/zero' read until memory ran out (a MemoryError traceback under a
    # ulimit): stat gives a device no size, so the 1 MB limit never applied.
    done = subprocess.run([sys.executable, "-m", "planlang", command, "/dev/zero"],
                          capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          preexec_fn=_limited_memory)  # fmt: skip
    assert "Traceback" not in done.stderr
    assert done.returncode == 2
    assert "/dev/zero: over 1,000,000 bytes, the 1 MB limit" in done.stderr


def test_ledger_copy_from_a_missing_file_is_refused_and_makes_nothing(tmp_path, capsys):
    # It said 'Copied 0 answers from nope.db to out.db' (exit 0) and left an empty nope.db.
    source, target = tmp_path / "nope.db", tmp_path / "out.db"
    code, _, err = run(["ledger", "copy", str(source), str(target)], capsys)
    assert (code, err) == (2, f"Error: ledger {source}: no such file\n")
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.parametrize("which", ["source", "destination"])
def test_ledger_copy_of_a_file_that_is_not_a_ledger_is_one_line(tmp_path, capsys, which):
    # Both were tracebacks: sqlite3.DatabaseError (file is not a database), and
    # FileNotFoundError for a destination in a folder that does not exist.
    from runtime import Ledger

    good = tmp_path / "answers.db"
    Ledger(str(good)).close()
    (tmp_path / "notes.txt").write_text("not a database, " * 100)
    bad = tmp_path / "notes.txt" if which == "source" else tmp_path / "no" / "such.db"
    args = [str(bad), str(good)] if which == "source" else [str(good), str(bad)]
    code, out, err = run(["ledger", "copy", *args], capsys)
    assert (code, out) == (2, "")
    said = "not an answer ledger" if which == "source" else "cannot open: No such file"
    assert err.startswith(f"Error: ledger {bad}: {said}")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("command", [["held"], ["submit", "PLAN"], ["approve", "1"]])
def test_a_gate_store_that_is_not_one_is_one_line(plan, tmp_path, capsys, command):
    # A gate.db that is not a database (a bad copy, a merge gone wrong) was a
    # sqlite3.DatabaseError traceback for held, submit, approve and run.
    state = tmp_path / ".planlang"
    state.mkdir()
    (state / "gate.db").write_text("not a database, " * 100)
    code, out, err = run([plan if arg == "PLAN" else arg for arg in command], capsys)
    assert (code, out) == (2, "")
    assert err == (f"Error: gate {state / 'gate.db'}: not a gate store (file is not a "
                   "database)\n")  # fmt: skip


def test_run_json_of_a_refused_plan_is_json(plan, tmp_path, capsys, monkeypatch):
    # 'planlang run bad.py --json' printed 'bad.py:1:1: PL101 ...' on stdout, as text.
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nresult = 1\n")
    code, out, _ = run(["run", str(bad), "--json"], capsys)
    assert code == 1
    assert json.loads(out) == {"ok": False, "problems": [
        {"filename": str(bad), "line": 1, "col": 1, "code": "PL101",
         "message": "imports are not part of the plan language; use the host words"}]}  # fmt: skip


def test_run_json_without_an_endpoint_is_json(plan, capsys, monkeypatch):
    # stdout was empty; price --json says a usage error as {"ok": false, "error": ...}.
    for name in ("LLM_BASE_URL", "PLANLANG_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    code, out, _ = run(["run", plan, "--json"], capsys)
    assert code == 2
    report = json.loads(out)
    assert (report["ok"], report["problems"]) == (False, [])
    assert report["error"].startswith("No endpoint: set LLM_BASE_URL")


def test_run_json_of_a_held_plan_is_the_plan(plan, tmp_path, capsys, monkeypatch):
    # stdout was empty; submit --json prints the held plan.
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never reached: held
    (tmp_path / "planlang.toml").write_text("[gate]\nmax_ceiling = 0.001\n")
    code, out, err = run(["run", plan, "--json"], capsys)
    assert code == 1
    held = json.loads(out)
    assert (held["id"], held["status"]) == (1, "held")
    assert held["reasons"] == ["hard ceiling 40 is over 0.001"]
    assert "is held for a person" in err


def test_github_annotations_escape_the_file_name_as_github_reads_it(tmp_path, capsys,
                                                                     monkeypatch):  # fmt: skip
    # 'a,b:c%.py' gave 'file=a,b:c%.py,line=1,...': GitHub reads the file as 'a' (a ',' ends a
    # property) and the line is lost. Properties escape % , : and CR LF; the message % CR LF.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a,b:c%.py").write_text("import os\n")
    code, out, _ = run(["check", "--output-format", "github", "a,b:c%.py"], capsys)
    assert code == 1
    assert out == ("::error file=a%2Cb%3Ac%25.py,line=1,col=1,title=PL101::PL101 imports are not "
                   "part of the plan language; use the host words\n")  # fmt: skip


def test_approving_an_approved_plan_keeps_who_decided(plan, tmp_path, capsys):
    # 'planlang approve 1' on a plan the policy approved said 'Approved plan 1 ... by a person'
    # and rewrote decided_by ('policy', then 'a person', then whoever came last).
    (tmp_path / "planlang.toml").write_text("[gate]\nmax_median = 10\n")
    code, out, _ = run(["submit", plan, "--json"], capsys)
    assert (code, json.loads(out)["decided_by"]) == (0, "policy")
    code, out, _ = run(["approve", "1", "--by", "mallory"], capsys)
    assert code == 0
    assert out.startswith("The plan 1 (") and "was approved already, by policy." in out
    code, out, _ = run(["approve", "1", "--by", "mallory", "--json"], capsys)
    assert (code, json.loads(out)["decided_by"]) == (0, "policy")


def test_approving_a_held_plan_still_names_who_let_it_go(plan, tmp_path, capsys):
    (tmp_path / "planlang.toml").write_text("[gate]\nmax_ceiling = 0.001\n")
    assert run(["submit", plan], capsys)[0] == 1
    code, out, _ = run(["approve", "1", "--by", "alice"], capsys)
    assert code == 0 and out.startswith("Approved plan 1 (") and "by alice." in out
    code, out, _ = run(["approve", "1", "--by", "bob", "--json"], capsys)
    assert (code, json.loads(out)["decided_by"]) == (0, "alice")


def test_a_ledger_locked_past_its_wait_is_not_called_not_a_ledger(tmp_path, capsys, monkeypatch):
    # "database is locked" is an sqlite3.DatabaseError too: it was worded "not an answer ledger".
    import sqlite3

    import planlang.cli_ledger as cli_ledger

    def locked(location):
        raise sqlite3.OperationalError("database is locked")

    from runtime import Ledger

    good = tmp_path / "answers.db"
    Ledger(str(good)).close()
    monkeypatch.setattr(cli_ledger, "Ledger", locked)
    code, out, err = run(["ledger", "copy", str(good), str(tmp_path / "copy.db")], capsys)
    assert (code, out) == (2, "")
    assert err == f"Error: ledger {good}: cannot open: database is locked\n"


def test_a_database_whose_answers_name_is_taken_is_not_an_answer_ledger(tmp_path, capsys):
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
        db.execute("CREATE INDEX answers ON t (x)")
    code, out, err = run(["ledger", "copy", str(other), str(tmp_path / "copy.db")], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"Error: ledger {other}: not an answer ledger (")
    assert len(err.splitlines()) == 1
