"""`planlang mcp serve`, driven by the SDK's own client over stdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_project import ENDPOINT, ROOT, lines, make_project, planlang

pytestmark = pytest.mark.slow

PLAN = """phase("write")
t.append_line(path=inputs["file"], line="one")
t.append_line(path=inputs["file"], line="two")
result = t.lookup(term="done")
"""


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, the structured answer or the error's text)."""
    answer = await client.call_tool(tool, arguments)
    if answer.is_error:
        return True, " ".join(block.text for block in answer.content)
    return False, answer.structured_content


def test_every_tool_answers_and_run_plan_refuses_a_held_plan(tmp_path: Path) -> None:
    out = make_project(tmp_path, gate="max_tool_writes = 1")  # two appends: held
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "planlang", "mcp", "serve"],
        cwd=str(tmp_path),
        env={"PYTHONPATH": str(ROOT), **ENDPOINT},
    )
    seen: dict[str, Any] = {}

    async def session() -> None:
        async with Client(params, read_timeout_seconds=240) as client:
            listed = await client.list_tools()
            seen["tools"] = sorted(tool.name for tool in listed.tools)
            seen["check_bad"] = await _call(client, "check_plan", source="import os\n")
            seen["check_good"] = await _call(client, "check_plan", source=PLAN)
            seen["price"] = await _call(client, "price_plan", source=PLAN, seeds=2)
            seen["submit"] = await _call(client, "submit_plan", source=PLAN)
            plan_id = seen["submit"][1]["id"]
            seen["run_held"] = await _call(client, "run_plan", plan_id=plan_id)
            seen["run_missing"] = await _call(client, "run_plan", plan_id=999)
            seen["lines_before_approval"] = lines(out)
            approve = planlang(tmp_path, "approve", str(plan_id))
            assert approve.returncode == 0, approve.stderr
            seen["run"] = await _call(client, "run_plan", plan_id=plan_id)
            run_id = seen["run"][1]["run_id"]
            for _ in range(2400):  # a hang guard only
                seen["status"] = await _call(client, "run_status", run_id=run_id)
                if seen["status"][1]["status"] not in ("created", "running"):
                    break
                await anyio.sleep(0.05)
            seen["result"] = await _call(client, "run_result", run_id=run_id)
            seen["no_run"] = await _call(client, "run_status", run_id="nope")
            resource = await client.read_resource("planlang://language")
            seen["language"] = resource.contents[0].text

    anyio.run(session)
    assert seen["tools"] == sorted(["check_plan", "price_plan", "submit_plan", "run_plan",
                                    "run_status", "run_result"])  # fmt: skip
    error, bad = seen["check_bad"]
    assert not error and bad["ok"] is False and bad["problems"][0]["code"] == "PL101"
    assert seen["check_good"] == (False, {"ok": True, "problems": []})
    error, report = seen["price"]
    assert not error and report["tools"]["t.append_line"]["calls"]["median"] == 2
    error, submitted = seen["submit"]
    assert not error and submitted["status"] == "held"
    assert "2 calls of tools that are not read-only are over 1" in submitted["reasons"]
    error, text = seen["run_held"]
    assert error and "held" in text and f"planlang approve {submitted['id']}" in text
    assert seen["run_missing"][0] and "no plan 999" in seen["run_missing"][1]
    error, status = seen["status"]
    assert not error and status["status"] == "completed"
    assert seen["result"] == (False, {"run_id": seen["run"][1]["run_id"], "status": "completed",
                                      "result": "done: a word", "error": None,
                                      "failures": [], "thunk_failures": []})  # fmt: skip
    assert seen["no_run"][0] and "no run 'nope'" in seen["no_run"][1]
    assert seen["lines_before_approval"] == []  # the held plan touched nothing
    assert lines(out) == ["one", "two"]
    assert "# The plan language" in seen["language"]
    assert '"call": "t.append_line(...)"' in seen["language"]
    assert "idempotentHint" in seen["language"]
