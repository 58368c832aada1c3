"""`planlang price` and `planlang run` of plans that call a real MCP server's tools (stdio).

The commands run in this process (``planlang_here``) but for a killed run, which is a process
of its own, and the two command lines that end before any server starts."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from mcp_project import (
    SERVER,
    end_hanging_server,
    lines,
    make_project,
    planlang,
    planlang_here,
    said,
    start,
)

pytestmark = pytest.mark.slow

WRITES = """phase("write")
meaning = t.lookup(term="plan")
t.append_line(path=inputs["file"], line="one")
t.append_line(path=inputs["file"], line="two")
counts = t.stats(text="a b c")
t.set_value(path=inputs["file"] + ".value", value="v")
result = {"meaning": meaning, "words": counts["words"]}
"""


def first_run_id(folder: Path) -> str:
    """The run started first, as ``planlang runs`` orders them: ids hold their second only,
    so runs of one second sorted by id were in the order of their random part."""
    from planlang.run_records import list_runs

    return str(list_runs(folder / ".planlang" / "runs")[0]["id"])


def write_plan(folder: Path, source: str) -> None:
    (folder / "plan.py").write_text(source, encoding="utf-8")


def test_price_touches_no_tool_and_counts_each(tmp_path: Path) -> None:
    out = make_project(tmp_path)
    write_plan(tmp_path, WRITES)
    done = planlang_here(tmp_path, "price", "plan.py", "--json", "--seeds", "2")
    assert done.returncode == 0, done.stderr
    assert not out.exists() and not Path(str(out) + ".value").exists()
    report = json.loads(done.stdout)
    calls = {name: t["calls"]["median"] for name, t in report["tools"].items()}
    assert calls == {"t.append_line": 2, "t.lookup": 1, "t.set_value": 1, "t.stats": 1}
    assert report["tools"]["t.append_line"]["credits"]["median"] == 1.0  # 2 x 0.5
    assert report["total"]["credits"]["median"] == 1.0
    assert report["tool_hints"]["t.lookup"]["read_only"] is True
    assert report["ceiling_basis"]["dearest_tool_price"] == 0.5


def test_run_makes_each_effect_once_and_a_rerun_none(tmp_path: Path) -> None:
    out = make_project(tmp_path)
    write_plan(tmp_path, WRITES)
    first = planlang_here(tmp_path, "run", "plan.py")
    assert first.returncode == 0, first.stderr
    assert lines(out) == ["one", "two"]
    again = planlang_here(tmp_path, "run", "plan.py")
    assert again.returncode == 0, again.stderr
    assert lines(out) == ["one", "two"]  # answered from the ledger: nothing sent again
    replay = planlang_here(tmp_path, "run", "plan.py", "--replay")
    assert replay.returncode == 0, replay.stderr
    assert lines(out) == ["one", "two"]
    shown = planlang_here(tmp_path, "show", first_run_id(tmp_path))
    assert "Tools (MCP)" in said(shown) and "t.append_line │ 2 │ 2 │ 0 │ 1" in said(shown)
    results = sorted((tmp_path / ".planlang" / "runs").glob("*/result.json"))
    assert [json.loads(r.read_text()) for r in results] == [
        {"meaning": "plan: a word", "words": 3}
    ] * 3


def test_replay_sends_nothing_to_any_server(tmp_path: Path) -> None:
    out = make_project(tmp_path)
    write_plan(tmp_path, 'result = t.lookup(term="x")\n')
    assert planlang_here(tmp_path, "run", "plan.py").returncode == 0
    config = tmp_path / "planlang.toml"  # from now on the server cannot even start
    config.write_text(config.read_text().replace(str(SERVER), "/nonexistent/server.py"))
    replay = planlang_here(tmp_path, "run", "plan.py", "--replay")
    assert replay.returncode == 0, replay.stderr
    write_plan(tmp_path, 't.append_line(path=inputs["file"], line="new")\n')
    miss = planlang_here(tmp_path, "run", "plan.py", "--replay")
    assert miss.returncode == 1
    assert "ToolCacheMiss" in said(miss) and "t.append_line" in said(miss)
    assert not out.exists()


def test_replay_without_a_recorded_listing_is_refused(tmp_path: Path) -> None:
    make_project(tmp_path)
    write_plan(tmp_path, 'result = t.lookup(term="x")\n')
    replay = planlang_here(tmp_path, "run", "plan.py", "--replay")
    assert replay.returncode == 2
    assert "no listing of its tools was recorded" in said(replay)


def _kill_when(child, condition, what: str) -> None:
    deadline = time.monotonic() + 120  # a hang guard only
    while not condition():
        assert child.poll() is None, f"the run ended before {what}: {child.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within 120 s"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    child.communicate()


def test_killed_run_does_not_repeat_effects_and_names_the_unknown_call(tmp_path: Path) -> None:
    out = make_project(tmp_path)
    write_plan(
        tmp_path,
        """for line in ["a", "b", "hang c", "d"]:
    t.append_line(path=inputs["file"], line=line)
result = "done"
""",
    )
    child = start(tmp_path, "run", "plan.py")
    try:
        _kill_when(child, lambda: len(lines(out)) == 3, "third line")
    finally:
        end_hanging_server(out)
    rerun = planlang_here(tmp_path, "run", "plan.py")
    assert rerun.returncode == 1
    assert "OutcomeUnknown" in said(rerun) and "t.append_line" in said(rerun)
    assert "hang c" in said(rerun)
    assert lines(out) == ["a", "b", "hang c"]  # a and b not repeated, the unknown one not resent


def test_killed_idempotent_call_is_sent_again(tmp_path: Path) -> None:
    out = make_project(tmp_path)
    value = Path(str(out) + ".value")
    Path(str(value) + ".hang").write_text("hang once", encoding="utf-8")
    write_plan(
        tmp_path,
        """t.append_line(path=inputs["file"], line="a")
t.set_value(path=inputs["file"] + ".value", value="x")
t.append_line(path=inputs["file"], line="b")
result = "done"
""",
    )
    child = start(tmp_path, "run", "plan.py")
    try:
        _kill_when(child, lambda: Path(str(value) + ".pid").exists(), "hanging set_value")
    finally:
        end_hanging_server(value)
    rerun = planlang_here(tmp_path, "run", "plan.py")
    assert rerun.returncode == 0, rerun.stderr
    assert lines(out) == ["a", "b"] and value.read_text() == "x"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('x = 1\nt.append_line(path=inputs["file"], line=3)\n', ["plan.py:2", "inputSchema"]),
        ('x = 1\nt.append_line(path=inputs["file"])\n', ["plan.py:2", "'line' is a required"]),
        ('t.append_line(inputs["file"], "a")\n', ["plan.py:1", "by name"]),
        ('x = 1\n\nt.stats(text="break")\n', ["plan.py:3", "outputSchema", "words"]),
        ('t.fail(reason="no way")\n', ["plan.py:1", "ToolError", "refused: no way"]),
    ],
    ids=["wrong-type", "missing", "positional", "output-schema", "tool-error"],
)
def test_plan_errors_name_the_plans_line(tmp_path: Path, source: str, expected: list[str]) -> None:
    out = make_project(tmp_path, gate="allow_problems = true")  # run what rehearsal would hold
    write_plan(tmp_path, source)
    done = planlang_here(tmp_path, "run", "plan.py")
    assert done.returncode == 1
    for text in expected:
        assert text in said(done)
    assert "Traceback" not in said(done)
    assert not out.exists()  # nothing was sent: the bad calls never reached append_line


def test_bad_arguments_are_a_rehearsal_problem_at_the_line(tmp_path: Path) -> None:
    make_project(tmp_path)
    write_plan(tmp_path, 'x = 1\nt.append_line(path=inputs["file"], line=3)\n')
    done = planlang_here(tmp_path, "price", "plan.py", "--json", "--seeds", "1")
    assert done.returncode == 1
    (problem,) = json.loads(done.stdout)["problems"]
    assert problem["line"] == 2 and "inputSchema" in problem["message"]


def test_a_server_dying_mid_run_fails_the_run_naming_it(tmp_path: Path) -> None:
    out = make_project(tmp_path)
    write_plan(tmp_path, 't.append_line(path=inputs["file"], line="a")\nt.die(code=3)\n')
    done = planlang_here(tmp_path, "run", "plan.py")
    assert done.returncode == 1
    assert "ToolUnavailable" in said(done) and "MCP server 't'" in said(done)
    assert "Traceback" not in said(done)
    assert lines(out) == ["a"]


def test_the_gate_holds_destructive_and_too_many_writing_calls(tmp_path: Path) -> None:
    out = make_project(tmp_path, gate="hold_destructive = true\nmax_tool_writes = 1")
    write_plan(
        tmp_path,
        """t.drop(name="x")
t.append_line(path=inputs["file"], line="a")
t.append_line(path=inputs["file"], line="b")
""",
    )
    done = planlang_here(tmp_path, "run", "plan.py")
    assert done.returncode == 1
    assert "held for a person" in said(done)
    assert "destructive tools: t.drop" in said(done)
    assert "3 calls of tools that are not read-only are over 1" in said(done)
    assert not out.exists()


def test_a_server_that_cannot_start_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "planlang.toml").write_text(
        '[mcp.servers.t]\ncommand = ["/nonexistent/server"]\n', encoding="utf-8"
    )
    write_plan(tmp_path, "result = 1\n")
    done = planlang(tmp_path, "price", "plan.py")
    assert done.returncode == 2
    assert "MCP server 't'" in said(done) and "Traceback" not in said(done)


def test_held_and_approve_start_no_server(tmp_path: Path) -> None:
    (tmp_path / "planlang.toml").write_text(
        '[mcp.servers.t]\ncommand = ["/nonexistent/server"]\n', encoding="utf-8"
    )
    held = planlang(tmp_path, "held")
    assert held.returncode == 0 and "No plan is held." in said(held)
    approve = planlang(tmp_path, "approve", "7")
    assert approve.returncode == 2 and "no plan 7" in said(approve)
