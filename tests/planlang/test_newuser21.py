"""Defects a new user met (newuser21): each test fails until its defect is mended.

Every endpoint is a local server started by the test; nothing depends on machine load.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_calls import run

from runtime import http_client
from runtime.errors import ClientError
from runtime.testing import FakeOpenAI

KEY = "sk-test-secret-0123456789abcdef0123456789"


def _echo_server(status: int, pad: int) -> tuple[ThreadingHTTPServer, str]:
    """A server that quotes the request's Authorization header ``pad`` characters into its
    body, as some proxies and gateways do in their error pages."""

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = ("x" * pad + f"{self.headers.get('Authorization')} was refused").encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host!s}:{port}/v1"


@pytest.mark.parametrize(("status", "pad"), [(401, 185), (200, 100)])
def test_an_error_excerpt_never_holds_the_start_of_the_key(status: int, pad: int) -> None:
    # runtime/http.py cuts the body to 200 (or 120) characters and only then replaces the
    # key: a key that straddles the cut is not found whole, and its first characters are
    # quoted in the worker's error (and so in stderr, threads.json and the report).
    server, base = _echo_server(status, pad)
    try:
        client = http_client(base, KEY, retries=0)
        with pytest.raises(ClientError) as caught:
            client("m", [{"role": "user", "content": "hi"}])
        client.close()
    finally:
        server.shutdown()
        server.server_close()
    assert "sk-test" not in str(caught.value)


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plan: str, toml: str = "") -> None:
    (tmp_path / "planlang.toml").write_text("[planlang]\nretries = 0\n" + toml)
    (tmp_path / "plan.py").write_text(plan)
    monkeypatch.chdir(tmp_path)


def test_result_of_a_run_whose_plan_failed_says_it_has_none(tmp_path, monkeypatch, capsys):
    # docs/CLI.md: `result` of "a run with none: the error shape below, exit 1". A failed
    # plan never bound `result`, yet `planlang result ID` printed `null` and exited 0 (a
    # script doing `planlang result ID > out.json && use out.json` took it as an answer).
    _project(tmp_path, monkeypatch, 'r = agent("q")\nassert r is not None\nresult = r\n')
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: it fails
    monkeypatch.setenv("LLM_API_KEY", KEY)
    code, out, _ = run(["run", "plan.py", "--json"], capsys, never=[KEY])
    ran = json.loads(out)
    assert (code, ran["status"]) == (1, "failed")
    code, out, err = run(["result", ran["id"]], capsys)
    assert code == 1, f"exit {code}, stdout {out!r}"
    assert out == "" and "has no result" in err


def test_result_of_a_run_stopped_at_budget_says_it_has_none(tmp_path, monkeypatch, capsys):
    # The same for a run stopped at its cap: it printed `null`, exit 0.
    plan = 'xs = parallel([lambda i=i: agent(f"q{i}", model="dear") for i in range(4)])\n'
    plan += "result = xs\n"
    toml = '[planlang.roles.dear]\nmodel = "m"\nprice = 1.0\n[gate]\nmax_median = 10\n'
    _project(tmp_path, monkeypatch, plan, toml)
    with FakeOpenAI(api_key=KEY) as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_API_KEY", KEY)
        code, out, _ = run(["run", "plan.py", "--budget", "1", "--json"], capsys, never=[KEY])
    ran = json.loads(out)
    assert (code, ran["status"]) == (1, "stopped-at-budget")
    code, out, err = run(["result", ran["id"]], capsys)
    assert code == 1, f"exit {code}, stdout {out!r}"
    assert "has no result" in err


def test_price_names_the_plans_model_argument_not_the_client(tmp_path, monkeypatch, capsys):
    # `agent("x", model=5)`: the rehearsal blamed "The client returned a malformed Reply: its
    # field model is 5 (int)", while a real run sends {"model": 5} to the endpoint and
    # completes. The mistake is the plan's argument; rehearsal and run should agree on it.
    _project(tmp_path, monkeypatch, 'result = agent("x", model=5)\n')
    code, out, _ = run(["price", "plan.py", "--json", "--seeds", "1"], capsys)
    problems = json.loads(out)["problems"]
    assert code == 1 and problems
    assert "client returned" not in problems[0]["message"]


# -- planlang mcp serve -------------------------------------------------------------------------


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[object, object]]:
    from planlang.mcp.server import PlanService
    from planlang.project import load_project

    (tmp_path / "planlang.toml").write_text(
        '[planlang]\nretries = 0\n[planlang.roles.dear]\nmodel = "m"\nprice = 1.0\n'
        '[gate]\nmax_median = 10\n[state]\ngate_key = "gate.key"\n'
    )
    monkeypatch.chdir(tmp_path)
    with FakeOpenAI(api_key=KEY) as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_API_KEY", KEY)
        yield PlanService(load_project(tmp_path / "planlang.toml")), fake


def _wait(service: object, run_id: str) -> dict[str, object]:
    for _ in range(400):  # a hang guard only
        status = service.run_status(run_id)  # type: ignore[attr-defined]
        if status["status"] not in ("created", "running") or "PAUSED" in status["statusline"]:
            return status  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError("the run did not end")


def test_mcp_two_runs_of_one_plan_in_one_second_keep_two_records(service, monkeypatch):
    # The MCP server names a run by the second, the sha256 prefix and the plan id: two
    # run_plan calls in the same second got the same id, so the second replaced the first in
    # run_status/run_result and both wrote one folder (events.jsonl held two run_started).
    # docs/CLI.md: "its folder is created exclusively, so two runs ... keep two records".
    import planlang.run_records as records

    monkeypatch.setattr(records.time, "strftime", lambda fmt, *a: "20250101-000000")
    plans, _fake = service
    submitted = plans.submit_plan('result = agent("one question")\n')
    assert submitted["status"] == "approved", submitted
    first = plans.run_plan(submitted["id"])["run_id"]
    second = plans.run_plan(submitted["id"])["run_id"]
    _wait(plans, first)
    _wait(plans, second)
    assert first != second


def test_mcp_run_is_listed_by_planlang_runs_while_it_is_live(service, capsys):
    # docs/MCP.md: the same runs folder as the CLI, "so planlang held, approve, runs and show
    # see what it did". A run of the MCP server wrote meta.json only at its end: while it
    # was live (or after the server was killed) `planlang runs` did not list it, `show` said
    # "no run", and `planlang raise`/`cancel` could not reach it.
    plans, fake = service
    fake.hold_after = 0  # every call waits at the server until released: the run is live
    submitted = plans.submit_plan('result = agent("held question")\n')
    assert submitted["status"] == "approved", submitted
    run_id = plans.run_plan(submitted["id"])["run_id"]
    try:
        code, out, err = run(["runs", "--json"], capsys)
        listed = {meta["id"]: meta["status"] for meta in json.loads(out)["runs"]}
        assert listed.get(run_id) == "running", (listed, err)
        code, out, err = run(["cancel", run_id], capsys)
        assert code == 0, err  # the live run takes a request from another shell
    finally:
        fake.release()
    status = _wait(plans, run_id)
    assert status["status"] == "cancelled", status
    code, out, err = run(["show", run_id, "--json"], capsys)
    assert json.loads(out)["meta"]["status"] == "cancelled"


def test_mcp_run_paused_at_its_cap_does_not_wait_for_ever(service):
    # Not on a terminal, `planlang run` stops cleanly at the cap (stopped-at-budget). A run of
    # the MCP server waits at its cap for ever, saying "raise the cap to go on", though no MCP
    # tool raises a cap and `planlang raise` does not find the run.
    plans, _fake = service
    plan = 'xs = parallel([lambda i=i: agent(f"p{i}", model="dear") for i in range(3)])\n'
    submitted = plans.submit_plan(plan + "result = xs\n")
    run_id = plans.run_plan(submitted["id"], budget=1.0)["run_id"]
    deadline = time.monotonic() + 120  # a hang guard only: the run ends at once at its cap
    status = plans.run_status(run_id)
    while status["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
        status = plans.run_status(run_id)
    if status["status"] == "running":
        plans._runs[run_id].run.cancel("test over")
    assert status["status"] == "stopped-at-budget", status["statusline"]
