"""Defects a new user met (newuser24): each test fails until its defect is mended.

Every endpoint is a local server started by the test; nothing depends on machine load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_calls import fake_endpoint, run
from cli_calls import write_project as _project

from runtime.testing import FakeOpenAI


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    yield from fake_endpoint(monkeypatch)


# -- the gate under another key --------------------------------------------------------------------


def _held_under_another_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A plan held under one gate key, then read under another (a second shell's setting)."""
    _project(tmp_path, monkeypatch, 'result = agent("q")\n', "[gate]\nmax_median = 0\n")
    monkeypatch.setenv("PLANLANG_GATE_KEY", str(tmp_path / "first.key"))
    code, _, _ = run(["submit", "plan.py"], capsys)
    assert code == 1
    monkeypatch.setenv("PLANLANG_GATE_KEY", str(tmp_path / "second.key"))


@pytest.mark.parametrize("as_json", [False, True])
def test_reject_of_a_row_whose_seal_fails_is_one_line_not_a_traceback(
    tmp_path, monkeypatch, capsys, as_json
):
    """`planlang reject 1` of a row sealed with another key crashed with TamperedPlan's
    traceback, where `approve 1` and `held` say it in one line, exit 1."""
    _held_under_another_key(tmp_path, monkeypatch, capsys)
    code, out, err = run(["reject", "1", *(["--json"] if as_json else [])], capsys)
    assert code == 1, (out, err)
    said = json.loads(out)["error"] if as_json else err
    assert "does not match its seal" in said, (out, err)


# -- a run stopped at its cap: thunks cut off by the stop did not fail ----------------------------


def test_a_thunk_cut_off_by_the_runs_end_is_not_a_fanned_out_failure():
    """A run stopped at its budget said "3 fanned-out function(s) failed: PlanLimitError: The
    plan has ended." (and listed them in --json's thunk_failures): the thunks whose callbacks
    the stop cut off, in the plan's ended process, raised, and were counted as the plan's own
    failures. A thunk that raises once the run is closed was cancelled, not failed."""
    from runtime import LLM, Run, RunCancelled

    def plan(r: Run) -> object:
        def thunk() -> object:
            r.cancel("stopped at the budget")
            raise ValueError("The plan has ended.")  # what the ended plan's callback raises

        return r.parallel([thunk])

    run = Run("cut off", llm=LLM())
    with pytest.raises(RunCancelled):
        run.run_sync(plan)
    assert [e for e in run.events if e["kind"] == "thunk_failed"] == []


# -- -o FILE of a page ---------------------------------------------------------------------------


def test_a_page_written_to_a_path_ending_in_a_slash_is_refused(tmp_path, monkeypatch, capsys):
    """`planlang price plan.py --html -o out/` said "Wrote out/ (… bytes)." and wrote a file
    named `out`: Path() drops the trailing slash that said the user meant a folder."""
    _project(tmp_path, monkeypatch, 'result = agent("q")\n')
    code, _, err = run(["price", "plan.py", "--seeds", "1", "--html", "-o", "out/"], capsys)
    assert code == 2, err
    assert "out/: cannot write" in err, err
    assert not (tmp_path / "out").exists()


# -- run --wait-at-budget, not on a terminal ---------------------------------------------------


def test_a_run_waiting_at_its_cap_off_a_terminal_says_so_once_with_its_id(tmp_path, capsys):
    """`planlang run --budget 0.02 --wait-at-budget 2>log` paused at the cap said nothing at
    all: the log showed no pause and no run id to `planlang raise` (printed only at the end)."""
    from planlang import run_watch
    from runtime import LLM, Budget, Run

    run = Run("waits", llm=LLM(budget=Budget(0.02)))
    folder = tmp_path / "20260101-000000-abcdef12-123456"
    ending = run_watch._Ending()
    for _ in range(3):  # three ticks of the same pause
        assert run_watch._budget_decision(run, folder, False, True, ending)
    err = capsys.readouterr().err
    assert err.count("Paused at the budget") == 1, err
    assert f"planlang raise {folder.name}" in err, err


# -- planlang mcp serve: run_plan's budget -------------------------------------------------------


@pytest.mark.parametrize("budget", [-1.0, float("inf"), float("nan")])
def test_mcp_run_plan_refuses_a_budget_that_is_no_cap_saying_why(
    tmp_path, monkeypatch, endpoint, budget
):
    """MCP run_plan(budget=-1) answered "Error executing tool run_plan" with no why (a raw
    ValueError, its traceback in the server's log), where price_plan(seeds=-1) says what is
    wrong and `planlang run --budget -1` is a usage error."""
    pytest.importorskip("mcp")
    from planlang.mcp.server import PlanService, ServiceError
    from planlang.project import load_project

    _project(tmp_path, monkeypatch, 'result = agent("q")\n', "[gate]\nmax_median = 5\n")
    service = PlanService(load_project(tmp_path / "planlang.toml"))
    plan_id = service.submit_plan('result = agent("q")\n')["id"]
    with pytest.raises(ServiceError, match="budget"):
        service.run_plan(plan_id, budget=budget)
    assert endpoint.requests == 0
    assert not (tmp_path / ".planlang" / "runs").exists() or not list(
        (tmp_path / ".planlang" / "runs").iterdir()
    )


# -- planlang run of a plan the gate holds ---------------------------------------------------------


def test_run_of_a_held_plan_names_the_problem_that_held_it(tmp_path, monkeypatch, capsys):
    """`planlang run plan.py` of a plan whose rehearsal crashed said only "Plan 1 is held for a
    person: 1 problem(s) met in rehearsal." — not which problem, where `run --json` and
    `submit` name it (plan.py:2: crash: NameError: name 'agnet' is not defined)."""
    _project(tmp_path, monkeypatch, 'x = agent("q")\nresult = agnet(x)\n',
             "[gate]\nmax_median = 5\n")  # fmt: skip
    code, _, err = run(["run", "plan.py"], capsys)
    assert code == 1, err
    assert "plan.py:2: crash: NameError: name 'agnet' is not defined" in err, err


# -- planlang result of a record that is not JSON --------------------------------------------------


@pytest.mark.parametrize("command", [["result"], ["result", "--json"], ["show"]])
def test_result_of_a_result_file_that_is_not_json_is_refused(
    tmp_path, monkeypatch, capsys, endpoint, command
):
    """`planlang result ID` (and `--json`, and `show`) printed a result.json that is not JSON
    (truncated, edited) as it was, exit 0, where `show --json` says it is unreadable, exit 2."""
    _project(tmp_path, monkeypatch, 'result = agent("q")\n', "[gate]\nmax_median = 5\n")
    code, _, _ = run(["run", "plan.py"], capsys)
    assert code == 0
    (folder,) = (tmp_path / ".planlang" / "runs").iterdir()
    (folder / "result.json").write_text('{"cut off": [1, 2')
    code, out, err = run([command[0], folder.name, *command[1:]], capsys)
    assert code == 2, (out, err)
    said = json.loads(out)["error"] if "--json" in command else err
    assert "result.json is unreadable" in said, (out, err)


# -- docs/examples/test_fuzz_my_host_words.py, copied into a user's suite --------------------------


def test_the_fuzz_example_copied_into_a_suite_has_no_deadline():
    """The example "copy this into your tests" failed there (hypothesis FlakyFailure, Deadline
    Exceeded: 257 ms over 200 ms): its first plan starts the isolated plan processes, slower
    than hypothesis's default deadline; the project's own suite sets deadline=None for it."""
    import importlib.util

    path = Path(__file__).parents[2] / "docs" / "examples" / "test_fuzz_my_host_words.py"
    spec = importlib.util.spec_from_file_location("copied_fuzz_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("test_my_host_words_survive_generated_plans",
                 "test_my_policy_refuses_every_near_miss_at_its_line"):  # fmt: skip
        chosen = getattr(module, name)._hypothesis_internal_use_settings
        assert chosen.deadline is None, (name, chosen.deadline)


# -- runs and show of a run without an end record (live, or killed) --------------------------------


def _unended_run(tmp_path: Path, pid: int) -> str:
    """A run folder as `planlang run` leaves it when killed (SIGKILL) after two paid calls:
    its start record, its events (the last line half-written), no end record."""
    from planlang.run_records import new_run_folder, write_start

    folder = new_run_folder(tmp_path / ".planlang" / "runs", "ab" * 32)
    write_start(folder, filename="plan.py", sha256="ab" * 32, mode="collect", cap=None)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "pid": pid}))
    call = {"kind": "call", "worker": 1, "turn": 1, "phase": "ask", "role": None,
            "model": "default", "cached": False, "standin": False, "credits": 0.01,
            "would_credits": 0.0, "seconds": 1.0}  # fmt: skip
    lines = [{"seq": 0, "t": 0.0, "kind": "run_started"}, call, {**call, "worker": 2},
             {**call, "worker": 3, "cached": True, "credits": 0.0}]  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines) + '{"seq": 9, "kind": "ca'
    (folder / "events.jsonl").write_text(text)
    return folder.name


@pytest.mark.parametrize("alive", [True, False])
def test_runs_and_show_of_a_run_without_an_end_record_say_what_it_spent(
    tmp_path, monkeypatch, capsys, alive
):
    """A run killed (SIGKILL) after 8 paid calls was listed by `planlang runs` as "interrupted
    … 0 calls 0 credits", and `show` said "Total: 0 calls, 0 paid, 0 credits": the start
    record's zeros, though every call was in events.jsonl as it happened (`report` drew it
    with its 0.08 credits)."""
    import subprocess
    import sys

    _project(tmp_path, monkeypatch, "result = 1\n")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    run_id = _unended_run(tmp_path, os.getpid() if alive else int(gone.stdout))
    code, out, _ = run(["runs", "--json"], capsys)
    (meta,) = json.loads(out)["runs"]
    assert code == 0 and meta["status"] == ("running" if alive else "interrupted"), meta
    total = meta["accounting"]["total"]
    assert (total["calls"], total["sent"], total["cached"]) == (3, 2, 1), total
    assert total["credits"] == pytest.approx(0.02), total
    code, out, _ = run(["show", run_id], capsys)
    assert code == 0 and "Total: 3 calls, 2 paid, 0.02 credits" in out, out


def test_a_held_plan_whose_seal_fails_is_not_called_the_approved_plan(
    tmp_path, monkeypatch, capsys
):
    """`planlang approve 1` of a held plan read under another key said "The approved plan was
    tampered with: the stored decision on plan 1 does not match its seal …": the plan was never
    approved, and the likelier cause is the key."""
    _held_under_another_key(tmp_path, monkeypatch, capsys)
    for command in (["approve", "1"], ["held"]):
        code, out, err = run(command, capsys)
        assert code == 1, (command, out, err)
        assert "The approved plan" not in err and "does not match its seal" in err, err
        assert "another key" in err, err


# -- planlang run --replay of a question never asked -----------------------------------------------


def test_replay_that_misses_names_the_plan_line_that_asked(tmp_path, monkeypatch, capsys):
    """`planlang run plan.py --replay` of a plan whose line 2 asks a question the ledger lacks
    says "The run failed: CacheMiss: Replay mode has no stored answer for a call to model
    'default' (fingerprint 808abb3229b6b195...)": nothing the user can find in the plan."""
    _project(tmp_path, monkeypatch, 'x = 1\nresult = agent("never asked")\n',
             "[gate]\nmax_median = 5\n")  # fmt: skip
    code, _, err = run(["run", "plan.py", "--replay"], capsys)
    assert code == 1 and "CacheMiss" in err, err
    assert "plan.py:2" in err or "line 2" in err, err


def test_replay_that_misses_in_a_fanned_out_function_names_its_line(tmp_path, monkeypatch,
                                                                    capsys):  # fmt: skip
    """The same miss asked by a thunk that ``parallel`` runs: the thunk's own line (3)."""
    plan = 'x = 1\nresult = parallel([\n    lambda: agent("never asked"),\n])\n'
    _project(tmp_path, monkeypatch, plan, "[gate]\nmax_median = 5\n")
    code, _, err = run(["run", "plan.py", "--replay"], capsys)
    assert code == 1 and "CacheMiss" in err, err
    assert "plan.py:3" in err, err


# -- planlang price of a plan whose result is not plain data ---------------------------------------


def test_price_of_a_result_that_is_not_plain_data_names_its_line(tmp_path, monkeypatch, capsys):
    """`result = {"c": 1j}` (line 2) is priced "plan.py: crash: TypeError: The plan's result
    gave a complex, which is not plain data." with "line": null, where every other crash
    names the plan's line."""
    _project(tmp_path, monkeypatch, 'x = 1\nresult = {"c": 1j}\n')
    code, out, _ = run(["price", "plan.py", "--seeds", "1", "--json"], capsys)
    (problem,) = json.loads(out)["problems"]
    assert code == 1 and problem["kind"] == "crash", problem
    assert problem["line"] == 2, problem


@pytest.mark.parametrize("mode", ["inprocess", "process"])
def test_a_result_that_is_not_plain_data_names_the_line_that_wrote_it(mode):
    """Both modes, through the embedding API: the last line that stores ``result``."""
    from planlang import PlanRuntimeError, Sandbox

    src = 'result = 1\nif result:\n    result = {"c": 1j}\nx = 2\n'
    with pytest.raises(PlanRuntimeError) as caught:
        Sandbox(isolation=mode).run(src)
    assert caught.value.line == 3 and "complex" in caught.value.message, caught.value


def test_mcp_run_result_of_a_run_whose_workers_failed_says_why(tmp_path, monkeypatch, endpoint):
    """MCP run_result of a run whose two workers got HTTP 500 answered {"status": "failed",
    "result": [null, null], "error": null}: failed, and nothing says why (`planlang run
    --json` lists the failures by reason)."""
    pytest.importorskip("mcp")
    from planlang.mcp.server import PlanService
    from planlang.project import load_project

    plan = 'result = [agent("a"), agent("b")]\n'
    _project(tmp_path, monkeypatch, plan, "[gate]\nmax_median = 5\n")
    service = PlanService(load_project(tmp_path / "planlang.toml"))
    plan_id = service.submit_plan(plan)["id"]
    endpoint.fail_next("500", "500")
    run_id = service.run_plan(plan_id)["run_id"]
    assert service._runs[run_id].saved.wait(60)  # a hang guard only
    answer = service.run_result(run_id)
    assert answer["status"] == "failed", answer
    reasons = [group["reason"] for group in answer.get("failures", [])]
    assert reasons and "HTTP 500" in reasons[0], answer
    status = service.run_status(run_id)
    assert status["status"] == "failed" and " · failed · " in status["statusline"], status


# -- planlang price --json: what the wall time assumes -----------------------------------------


def test_price_json_says_what_its_wall_time_assumes(tmp_path, monkeypatch, capsys):
    """`planlang price` says "Estimated wall time: 6 s (a call takes 3 s, 2 at a time)";
    `--json` had the 6 s and neither the 3 s nor the 2."""
    _project(tmp_path, monkeypatch, 'result = [agent("a"), agent("b")]\n', "concurrency = 2\n")
    code, out, _ = run(["price", "plan.py", "--seeds", "1", "--latency", "3", "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["wall_seconds"]["median"] == 6.0, report
    assert report.get("wall_basis") == {"latency": 3.0, "concurrency": 2}, report


# -- planlang check FOLDER -------------------------------------------------------------------------


def test_check_of_a_folder_leaves_out_a_subfolder_named_like_a_plan(tmp_path, monkeypatch, capsys):
    """`planlang check .` beside a folder named `tools.py` said "error: tools.py: is a directory,
    not a plan file" and exited 2: the folder's *.py matched the folder itself."""
    _project(tmp_path, monkeypatch, "result = 1\n")
    (tmp_path / "tools.py").mkdir()
    (tmp_path / "tools.py" / "inner.py").write_text("result = 2\n")
    code, out, err = run(["check", ".", "--json"], capsys)
    checked = json.loads(out)
    assert code == 0 and checked["errors"] == [], (out, err)
    assert checked["checked"] == 2, checked


# -- the sandbox: a host word's iterator as the plan's result --------------------------------------


@pytest.mark.parametrize("mode", ["inprocess", "process"])
def test_a_host_iterator_as_the_result_is_called_an_iterator(mode):
    """`result = gen()` of a host word returning an iterator said "The plan's result gave a
    _ThawedItems, which is not plain data.": planlang's private class, not what the plan holds."""
    import planlang

    box = planlang.Sandbox(host={"gen": lambda: iter([1, 2])}, isolation=mode)
    with pytest.raises(planlang.PlanRuntimeError) as raised:
        box.run("result = gen()\n")
    assert "_ThawedItems" not in str(raised.value), raised.value
    assert "gave an iterator, which is not plain data" in str(raised.value), raised.value


# -- [plan] inputs = "FILE" that cannot be read ----------------------------------------------------


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda path: path.mkdir(), "cannot be read: Is a directory"),
        (lambda path: path.write_bytes(b"\xff\xfe{}"), "is not UTF-8 text (byte 0 is 0xff)"),
        (lambda path: path.write_text("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    ],
    ids=["a folder", "not UTF-8", "too deep"],
)
def test_an_inputs_file_that_cannot_be_read_is_one_line(tmp_path, monkeypatch, capsys, make, said):
    """`[plan] inputs = "in.json"` naming a folder, a file that is not UTF-8, or JSON nested
    past Python's recursion limit crashed `planlang price` with a traceback (IsADirectoryError,
    UnicodeDecodeError, RecursionError), where a missing or non-JSON file is one line, exit 2."""
    _project(tmp_path, monkeypatch, "result = inputs\n", '[plan]\ninputs = "in.json"\n')
    make(tmp_path / "in.json")
    code, _, err = run(["price", "plan.py", "--seeds", "1"], capsys)
    assert code == 2, err
    assert "the inputs file 'in.json'" in err and said in err, err


# -- planlang run past max_agents --------------------------------------------------------------


def test_workers_refused_past_max_agents_are_one_group(tmp_path, monkeypatch, capsys, endpoint):
    """Five workers under max_agents = 3 said "1 × past max_agents=3 (worker 4 asked to start)
    (workers 4)" and "1 × … (worker 5 …)": one line per refused worker (a thousand of them, a
    thousand lines), because the reason held the worker's number."""
    plan = 'xs = parallel([lambda i=i: agent(f"m{i}") for i in range(5)])\nresult = xs\n'
    _project(tmp_path, monkeypatch, plan,
             "max_agents = 3\n[gate]\nmax_median = 5\nallow_problems = true\n")  # fmt: skip
    code, out, err = run(["run", "plan.py", "--json"], capsys)
    failures = json.loads(out)["failures"]
    assert code == 1, err
    assert [(f["count"], f["workers"]) for f in failures] == [(2, [4, 5])], failures


def test_a_run_the_runaway_backstop_cancelled_says_why(tmp_path, monkeypatch, capsys, endpoint):
    """A run cancelled by the runaway backstop (twice max_agents asked for) ended "Run …:
    cancelled. No result" with no word of why on stderr (only --json's error said "runaway")."""
    plan = 'xs = parallel([lambda i=i: agent(f"m{i}") for i in range(7)])\nresult = xs\n'
    _project(tmp_path, monkeypatch, plan,
             "max_agents = 3\n[gate]\nmax_median = 5\nallow_problems = true\n")  # fmt: skip
    code, _, err = run(["run", "plan.py"], capsys)
    assert code == 1 and ": cancelled." in err, err
    # the ask that reaches 6 cancels; a 7th racing it on another thread may say it first
    assert re.search(r"cancelled: runaway: [67] workers asked for, twice max_agents=3", err), err


# -- planlang run --retry-failed ----------------------------------------------------------------


def test_retry_failed_of_a_run_whose_workers_record_is_broken_is_one_line(
    tmp_path, monkeypatch, capsys, endpoint
):
    """`planlang run plan.py --retry-failed` after a run whose threads.json is not JSON (cut
    off) crashed with a JSONDecodeError traceback; and on a first run it said "Retrying 0
    failed worker(s) under a fresh sample index." of a run that never was."""
    _project(tmp_path, monkeypatch, 'result = agent("q")\n', "[gate]\nmax_median = 5\n")
    code, _, err = run(["run", "plan.py", "--retry-failed"], capsys)
    assert code == 0 and "Retrying 0" not in err and "No earlier run of this plan" in err, err
    (folder,) = (tmp_path / ".planlang" / "runs").iterdir()
    (folder / "threads.json").write_text('[{"id": 1, "sta')
    code, out, err = run(["run", "plan.py", "--retry-failed", "--json"], capsys)
    assert code == 2, (out, err)
    assert "threads.json is unreadable" in json.loads(out)["error"], out


# -- planlang approve / reject --by ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["approve", "reject"])
def test_a_blank_by_is_a_usage_error(tmp_path, monkeypatch, capsys, command):
    """`planlang reject 4 --by ""` was taken: "Rejected plan 4 (rej.py) by ." and later
    "Plan 4 was rejected by ; submit it again."; the decision names no one."""
    _project(tmp_path, monkeypatch, 'result = agent("q")\n', "[gate]\nmax_median = 0\n")
    code, _, _ = run(["submit", "plan.py"], capsys)
    assert code == 1
    code, _, err = run([command, "1", "--by", " "], capsys)
    assert code == 2 and "--by" in err, err
    code, out, _ = run(["held", "--json"], capsys)
    assert [plan["id"] for plan in json.loads(out)["held"]] == [1]  # still held, undecided


# -- Ctrl-C outside a run, with --json ----------------------------------------------------------


def test_ctrl_c_before_a_run_starts_is_json_with_json(tmp_path, monkeypatch, capsys):
    """Ctrl-C while `planlang run plan.py --json` still submitted the plan (its rehearsals)
    printed "Aborted." on stderr and nothing on stdout, exit 130: --json's stdout not JSON."""
    from planlang import commands

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    _project(tmp_path, monkeypatch, 'result = agent("q")\n')
    monkeypatch.setattr(commands, "run_command", interrupted)
    code, out, _ = run(["run", "plan.py", "--json"], capsys)
    assert code == 130
    assert json.loads(out) == {"ok": False, "error": "Interrupted (Ctrl-C).", "problems": []}


def test_mcp_check_plan_names_a_misspelled_host_word(tmp_path, monkeypatch):
    """`planlang check` reports `agnt` (PL301); MCP check_plan said ok, and the client's model
    found out only from a rehearsal's NameError."""
    pytest.importorskip("mcp")
    from planlang.mcp.server import PlanService
    from planlang.project import load_project

    (tmp_path / "planlang.toml").write_text("[gate]\nmax_median = 5\n")
    monkeypatch.chdir(tmp_path)
    service = PlanService(load_project(tmp_path / "planlang.toml"))
    checked = service.check_plan('x = 1\nresult = agnt("q")\n')
    assert checked["ok"] is False, checked
    assert [(p["code"], p["line"]) for p in checked["problems"]] == [("PL301", 2)], checked
    ok = 'phase("a")\nlog("b")\nresult = [agent("q"), inputs, parallel([]), list(stream([]))]\n'
    assert service.check_plan(ok) == {"ok": True, "problems": []}
