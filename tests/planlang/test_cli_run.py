"""`planlang run` end to end against a real OpenAI-compatible server on 127.0.0.1."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from cli_calls import run as cli_run

from runtime.testing import FakeOpenAI

KEY = "sk-planlang-cli-test-never-printed"
PLAN = """
phase("scan")
answers = parallel([lambda i=i: agent(f"question {i}", schema={"type": "object",
    "properties": {"answer": {"type": "string"}}, "required": ["answer"]}, model="scan")
    for i in range(5)])
phase("sum")
log(f"{len(answers)} answers")
result = [a["answer"] for a in answers]
"""
CONFIG = """
[planlang]
max_agents = 20
concurrency = 4
retries = 1
backoff_base = 0.01
[planlang.roles.scan]
model = "small"
price = 0.5
[gate]
max_median = 10
"""


@pytest.fixture
def server():
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


@pytest.fixture
def project(tmp_path, monkeypatch, server):
    (tmp_path / "planlang.toml").write_text(CONFIG)
    (tmp_path / "plan.py").write_text(PLAN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("LLM_API_KEY", KEY)
    return tmp_path


def run(args, capsys):
    return cli_run(args, capsys, never=(KEY,))


def test_run_pays_once_writes_events_and_result_and_reruns_free(project, server, capsys):
    code, _, err = run(["run", "plan.py"], capsys)
    assert code == 0, err
    assert server.requests == 5
    folders = sorted((project / ".planlang" / "runs").iterdir())
    assert len(folders) == 1
    result = json.loads((folders[0] / "result.json").read_text())
    assert result == ["question 0", "question 1", "question 2", "question 3", "question 4"]
    events = [json.loads(line) for line in (folders[0] / "events.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("call") == 5 and "phase" in kinds and "log" in kinds
    meta = json.loads((folders[0] / "meta.json").read_text())
    assert meta["status"] == "completed"
    assert meta["accounting"]["total"]["credits"] == 2.5

    time.sleep(1.1)  # run ids have a one-second clock
    code, _, _ = run(["run", "plan.py"], capsys)
    assert code == 0
    assert server.requests == 5  # every answer came from the ledger

    code, out, _ = run(["runs"], capsys)
    assert code == 0 and out.count("completed") == 2
    code, out, _ = run(["show", folders[0].name], capsys)
    assert code == 0 and "scan" in out and "2.5" in out
    for path in (project / ".planlang").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_replay_answers_from_the_ledger_only(project, server, capsys):
    code, _, err = run(["run", "plan.py", "--replay"], capsys)
    assert code == 1
    assert "CacheMiss: Replay mode has no stored answer" in err
    assert server.requests == 0
    assert run(["run", "plan.py"], capsys)[0] == 0
    time.sleep(1.1)
    assert run(["run", "plan.py", "--replay"], capsys)[0] == 0
    assert server.requests == 5


def test_a_budget_too_small_pauses_then_ctrl_c_cancels_cleanly(project, server, ctrl_c):
    env = {**os.environ, "LLM_BASE_URL": server.base_url, "LLM_API_KEY": KEY}
    with subprocess.Popen(
        [sys.executable, "-m", "planlang", "run", "plan.py", "--budget", "1.0", "--wait-at-budget"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while server.requests < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()  # a run still going after a failed assertion is not left behind
    assert proc.returncode == 130, err
    assert "cancelled" in err.lower()
    assert "Traceback" not in err
    assert server.requests == 2  # the cap covered two calls; nothing more was sent
    meta = next((project / ".planlang" / "runs").glob("*/meta.json"))
    assert json.loads(meta.read_text())["status"] == "interrupted"
