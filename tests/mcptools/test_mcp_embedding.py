"""The embedding API of docs/MCP.md: McpTools as the host of price, Gate and a run."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp_project import SERVER, end_hanging_server, lines

from planlang.errors import PlanRuntimeError
from planlang.gate import Gate, Policy
from planlang.mcp import McpTools, ServerConfig
from planlang.price import price
from runtime import LLM, Ledger, OutcomeUnknown, Run, RunCancelled, Settings, ToolUnavailable

pytestmark = pytest.mark.slow

PLAN = """t.append_line(path=inputs["file"], line="a")
t.append_line(path=inputs["file"], line="a")
result = t.stats(text="one two")
"""


@pytest.fixture(scope="module")
def tools():
    made = McpTools([ServerConfig(name="t", command=(sys.executable, str(SERVER)),
                                  prices={"append_line": 0.25})])  # fmt: skip
    yield made
    made.close()


def test_price_and_gate_and_run_with_mcp_tools_as_the_host(tools, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    inputs = {"file": str(out)}
    report = price(PLAN, seeds=2, host=tools, inputs=inputs)
    assert report.ok and report.tools["t.append_line"]["calls"].median == 2
    assert report.total["credits"].median == 0.5 and not out.exists()
    # stats says no readOnlyHint: by MCP's defaults it counts as a write, like the two appends
    gate = Gate(Policy(max_tool_writes=3), host=tools, inputs=inputs, seeds=2)
    decision = gate.submit(PLAN)
    assert decision.approved and decision.plan is not None
    with Ledger(tmp_path / "answers.db") as ledger:  # no model client: tools need none
        first = Run("one", llm=LLM(ledger)).run_sync(decision.plan)
        again = Run("two", llm=LLM(ledger)).run_sync(decision.plan)
    assert first == again == {"words": 2, "chars": 7}
    assert lines(out) == ["a", "a"]  # two identical calls, each made once, none on the rerun
    strict = Gate(Policy(max_tool_writes=2), host=tools, inputs=inputs, seeds=2)
    held = strict.submit(PLAN)
    assert held.status == "held" and held.reasons == (
        "3 calls of tools that are not read-only are over 2",
    )


def test_a_tool_error_in_an_embedded_run_is_a_plan_error_at_its_line(tools) -> None:
    gate = Gate(Policy(allow_problems=True), host=tools, seeds=1)
    decision = gate.submit('x = 1\nresult = t.fail(reason="nope")\n')
    with pytest.raises(PlanRuntimeError, match="refused: nope") as failed:
        Run("fail", llm=LLM(None)).run_sync(decision.plan)
    assert failed.value.line == 2


def test_a_server_that_dies_ends_the_run_naming_it(tmp_path: Path) -> None:
    mortal = McpTools([ServerConfig(name="t", command=(sys.executable, str(SERVER)))])
    try:
        gate = Gate(Policy(), host=mortal, seeds=1, settings=Settings())
        decision = gate.submit("t.die(code=1)\nresult = 1\n")
        with pytest.raises(ToolUnavailable, match="The MCP server 't'"):
            Run("die", llm=LLM(None)).run_sync(decision.plan)
        with pytest.raises(ToolUnavailable, match="The MCP server .t. "):  # and stays failed
            Run("after", llm=LLM(None)).run_sync(decision.plan)
    finally:
        mortal.close()


def test_a_bad_call_in_a_fanned_out_function_is_a_rehearsal_problem(tools) -> None:
    report = price("found = parallel([lambda: t.lookup(term=1)])\nresult = found\n", seeds=1,
                   host=tools)  # fmt: skip
    assert [p.kind for p in report.problems] == ["thunk"]
    assert "t.lookup(): the arguments do not match the tool's inputSchema" in (
        report.problems[0].message
    )


def test_a_cancel_during_a_long_call_leaves_its_outcome_unknown(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    slow = McpTools([ServerConfig(name="t", command=(sys.executable, str(SERVER)))])
    try:
        gate = Gate(Policy(), host=slow, inputs={"file": str(out)}, seeds=1)
        decision = gate.submit('t.append_line(path=inputs["file"], line="hang on")\nresult = 1\n')
        with Ledger(tmp_path / "answers.db") as ledger:
            run = Run("cancelled", llm=LLM(ledger))
            run.start(decision.plan)
            for _ in range(2400):  # a hang guard only
                if Path(str(out) + ".pid").exists():
                    break
                time.sleep(0.05)
            run.cancel("by the test")
            with pytest.raises(RunCancelled):
                run.wait(timeout=60)
            with pytest.raises(OutcomeUnknown, match="hang on"):
                Run("rerun", llm=LLM(ledger)).run_sync(decision.plan)
    finally:
        end_hanging_server(out)
        slow.close()
    assert lines(out) == ["hang on"]


def test_a_server_over_streamable_http(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a free port on the loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    web = McpTools([ServerConfig(name="web", url=f"http://127.0.0.1:{port}/mcp")])
    try:
        for _ in range(1200):  # a hang guard only: wait until it listens
            with socket.socket() as knock:
                if knock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        out = tmp_path / "out.txt"
        gate = Gate(Policy(), host=web, inputs={"file": str(out)}, seeds=1)
        decision = gate.submit('web.append_line(path=inputs["file"], line="over http")\n'
                               'result = web.stats(text="a b")\n')  # fmt: skip
        assert decision.approved and not out.exists()
        assert Run("http", llm=LLM(None)).run_sync(decision.plan) == {"words": 2, "chars": 3}
        assert lines(out) == ["over http"]
    finally:
        web.close()
        server.kill()
        server.wait(timeout=30)
