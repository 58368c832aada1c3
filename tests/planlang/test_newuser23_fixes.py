"""Around newuser23's two mended defects: `planlang raise` decided by the live run (a cap must
be above what it has spent), and `show` / `runs` of a run without its end record saying what it
has done so far, from its events.

Every endpoint is a local server started by the test; nothing depends on machine load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from cli_calls import KEY, fake_endpoint, run
from test_newuser23 import _ended, _paused_run, _project

from planlang.run_requests import cap_refusal, send_request, take_requests
from planlang.run_so_far import read_events, so_far
from runtime import Budget
from runtime.testing import FakeOpenAI


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    yield from fake_endpoint(monkeypatch)


# -- planlang raise: the live run decides ----------------------------------------------------------


def test_raise_to_exactly_what_is_spent_is_refused_in_one_line(
    tmp_path, monkeypatch, capsys, endpoint
):
    """`raise ID 0.02` with 0.02 spent: exit 1, one line saying why; the live run says it too,
    and a cap above it (0.03) is then taken."""
    live, run_id = _paused_run(tmp_path, monkeypatch)
    try:
        code, out, err = run(["raise", run_id, "0.02"], capsys)
        assert code == 1 and out == "", (code, out)
        assert err.strip().splitlines() == [
            f"Run {run_id} did not take the request: The new cap must be above what is spent "
            "(0.02)."
        ], err
        code, out, err = run(["raise", run_id, "0.03"], capsys)
        assert (code, out.strip()) == (0, f"Run {run_id}: the cap is now 0.03."), err
    finally:
        run(["cancel", run_id], capsys)
        _, stderr = _ended(live)
    assert "A raise to 0.02 was refused (planlang raise): The new cap must be above" in stderr
    assert "The cap was raised to 0.03 (planlang raise)." in stderr, stderr
    meta = json.loads((tmp_path / ".planlang" / "runs" / run_id / "meta.json").read_text())
    assert meta["cap"] == pytest.approx(0.03), meta


def test_raise_json_below_what_is_spent_says_why(tmp_path, monkeypatch, capsys, endpoint):
    """`raise ID 0.01 --json`: taken false, why, exit 1; nothing is left in the inbox."""
    live, run_id = _paused_run(tmp_path, monkeypatch)
    try:
        code, out, _ = run(["raise", run_id, "0.01", "--json"], capsys)
    finally:
        run(["cancel", run_id], capsys)
        _ended(live)
    said = json.loads(out)
    assert code == 1, (code, out)
    assert said == {"id": run_id, "request": {"raise": 0.01}, "taken": False,
                    "why": "The new cap must be above what is spent (0.02)."}  # fmt: skip
    assert list((tmp_path / ".planlang" / "runs" / run_id / "requests").iterdir()) == []


def test_raise_of_a_finished_run_is_refused(tmp_path, monkeypatch, capsys, endpoint):
    """A run that ended takes no request: exit 2, one line (JSON with --json), nothing left."""
    _project(tmp_path, monkeypatch, 'result = agent("q")\n', "[gate]\nmax_median = 5\n")
    code, out, err = run(["run", "plan.py", "--json"], capsys, never=[KEY])
    assert code == 0, err
    run_id = json.loads(out)["id"]
    code, out, err = run(["raise", run_id, "5"], capsys)
    assert code == 2 and err.strip() == f"Error: run {run_id!r} is not running (completed)", err
    code, out, _ = run(["raise", run_id, "5", "--json"], capsys)
    assert code == 2 and json.loads(out)["error"] == f"run {run_id!r} is not running (completed)"
    assert not (tmp_path / ".planlang" / "runs" / run_id / "requests").exists()


def _spent(amount: float) -> Any:
    """A stand-in for a live run: a budget of cap ``amount`` that spent all of it."""
    budget = Budget(amount)
    budget.settle(budget.admit(amount), amount)
    events: list[tuple[str, dict[str, Any]]] = []
    cancelled: list[str] = []
    emit = lambda kind, **fields: events.append((kind, fields))  # noqa: E731
    return SimpleNamespace(
        llm=SimpleNamespace(budget=budget),
        cancelled=cancelled,
        log_events=SimpleNamespace(emit=emit),
        cancel=cancelled.append,
    )


@pytest.mark.parametrize(
    ("cap", "why"),
    [
        (0.01, "The new cap must be above what is spent (0.02)."),
        (0.02, "The new cap must be above what is spent (0.02)."),
        (float("inf"), "The new cap must be a finite number of credits, not inf."),
        (float("nan"), "The new cap must be a finite number of credits, not nan."),
        (0.03, None),
    ],
)
def test_the_cap_rule_is_one_for_the_terminal_and_for_requests(cap, why):
    assert cap_refusal(cap, _spent(0.02)) == why


def test_requests_are_answered_and_a_bad_one_refused(tmp_path):
    """Each request is answered beside it (taken, or why not); one that is not JSON, or not a
    number, is refused and answered, never left for the sender to wait on."""
    live = _spent(0.02)
    inbox = tmp_path / "requests"
    inbox.mkdir()
    (inbox / "1-a.json").write_text('{"raise": "lots"}')
    (inbox / "2-b.json").write_text("{not json")
    (inbox / "3-c.json").write_text('{"raise": 0.01}')
    (inbox / "4-d.json").write_text('{"raise": 0.05}')
    (inbox / "5-e.json").write_text('{"cancel": true}')
    taken = [ok for _, ok in take_requests(live, tmp_path)]
    assert taken == [False, False, False, True, True]
    answers = {p.name: json.loads(p.read_text()) for p in sorted(inbox.iterdir())}
    assert sorted(answers) == ["1-a.answer", "2-b.answer", "3-c.answer", "4-d.answer",
                               "5-e.answer"]  # fmt: skip
    assert answers["1-a.answer"] == {"taken": False,
                                     "why": "The new cap is not a number: 'lots'."}  # fmt: skip
    assert answers["3-c.answer"]["why"] == "The new cap must be above what is spent (0.02)."
    assert answers["4-d.answer"] == {"taken": True, "why": None}
    assert live.llm.budget.cap == pytest.approx(0.05) and live.cancelled


def test_a_request_no_run_takes_is_withdrawn(tmp_path):
    """No answer within the wait: not taken, and the request is gone, so no run takes it later."""
    assert send_request(tmp_path, {"raise": 5}, wait=0.2) == (
        False, "no answer within 0.2 s (the request is withdrawn); is it still running?"
    )  # fmt: skip
    assert list((tmp_path / "requests").iterdir()) == []


# -- show and runs of a run without its end record -------------------------------------------------


def test_runs_lists_a_live_run_with_what_it_spent(tmp_path, monkeypatch, capsys, endpoint):
    """`runs` of a run paused at its cap: running, 2 calls, 0.02 credits, from its events."""
    live, run_id = _paused_run(tmp_path, monkeypatch)
    try:
        code, text, _ = run(["runs"], capsys)
        _, out, _ = run(["runs", "--json"], capsys)
        _, shown, _ = run(["show", run_id], capsys)
    finally:
        run(["cancel", run_id], capsys)
        _ended(live)
    assert code == 0 and f"{run_id}  running" in text and "2 calls  0.02 credits" in text, text
    (meta,) = json.loads(out)["runs"]
    assert (meta["status"], meta["from_events"], meta["cap"]) == ("running", True, 0.02), meta
    assert meta["spent"] == pytest.approx(0.02) and meta["counts"]["done"] == 2, meta
    assert "So far, from its events.jsonl" in shown and "Total: 2 calls, 2 paid, 0.02 credits" in (
        shown
    ), shown
    _, out, _ = run(["runs", "--json"], capsys)  # ended: its own end record again
    (meta,) = json.loads(out)["runs"]
    assert meta["status"] == "cancelled" and "from_events" not in meta, meta


def test_the_events_count_as_the_end_record_does(tmp_path, monkeypatch, capsys, endpoint):
    """A finished run's events, read as a live run's are, give its recorded accounting, counts
    and spent: bought calls and, on a rerun, answers from the ledger alike."""
    plan = 'xs = parallel([lambda i=i: agent(f"w{i}") for i in range(3)])\n'
    plan += 'phase("judge")\nresult = [xs, agent("q", model="judge")]\n'
    toml = '[planlang.roles.judge]\nmodel = "judge-model"\nprice = 0.5\n[gate]\nmax_median = 5\n'
    _project(tmp_path, monkeypatch, plan, toml)
    for _ in range(2):  # the second run answers every question from the ledger
        code, out, err = run(["run", "plan.py", "--json"], capsys, never=[KEY])
        assert code == 0, err
        folder = tmp_path / ".planlang" / "runs" / json.loads(out)["id"]
        meta = json.loads((folder / "meta.json").read_text())
        derived, workers = so_far(folder, {**meta, "cap": None})
        assert json.loads(json.dumps(derived["accounting"])) == meta["accounting"]
        assert (derived["counts"], derived["spent"]) == (meta["counts"], meta["spent"])
        recorded = json.loads((folder / "threads.json").read_text())
        keys = ("id", "label", "role", "model", "phase", "status", "turns", "credits", "error")
        assert [{k: w[k] for k in keys} for w in workers] == [
            {k: w[k] for k in keys} for w in recorded
        ]
    assert meta["accounting"]["total"]["cached"] == 4


def test_a_killed_run_is_shown_with_what_its_events_hold(tmp_path, monkeypatch, capsys):
    """A run SIGKILLed mid-run (its meta.json says running, its process is gone, its last event
    half written): interrupted, with the calls its whole events hold."""
    _project(tmp_path, monkeypatch, "result = 1\n")
    folder = tmp_path / ".planlang" / "runs" / "20260101-000000-00000000-aaaaaa"
    folder.mkdir(parents=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    meta = {"id": folder.name, "filename": "plan.py", "status": "running", "pid": gone.pid,
            "started": 1.0, "finished": None, "cap": 1.0,
            "accounting": {"total": {"calls": 0, "credits": 0.0}}, "error": None}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    events = [
        {"seq": 1, "t": 0.0, "kind": "budget", "spent": 0.0, "reserved": 0.0, "cap": 1.0},
        {"seq": 2, "t": 0.1, "kind": "worker_started", "worker": 1, "label": "a", "role": None,
         "phase": "main"},
        {"seq": 3, "t": 0.2, "kind": "call", "worker": 1, "turn": 1, "phase": "main",
         "role": None, "model": "m", "cached": False, "standin": False, "credits": 0.25,
         "would_credits": 0.0, "seconds": 0.1},
    ]  # fmt: skip
    text = "".join(json.dumps(e) + "\n" for e in events) + '{"seq": 4, "t": 0.3, "kind": "ca'
    (folder / "events.jsonl").write_text(text)
    assert len(read_events(folder / "events.jsonl")) == 3
    code, out, err = run(["show", folder.name, "--json"], capsys)
    assert code == 0, err
    shown = json.loads(out)
    assert shown["meta"]["status"] == "interrupted" and shown["meta"]["spent"] == 0.25
    workers = [(w["id"], w["status"], w["credits"]) for w in shown["workers"]]
    assert workers == [(1, "running", 0.25)], workers
    code, text_out, _ = run(["runs"], capsys)
    assert "interrupted" in text_out and "1 calls  0.25 credits" in text_out, text_out
