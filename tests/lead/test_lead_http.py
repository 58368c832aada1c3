"""`python -m lead audit` end to end over real HTTP: a chat-completions server on 127.0.0.1
answers as the documented simulated model (lead, scans, skeptics); the lead writes the plan from
the fact sheet, the gate approves it, the run audits the default corpus and the score is written.
A second run on the same ledger pays nothing again."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.simulated import SimulatedModel
from runtime.testing import FakeOpenAI

ROOT = Path(__file__).parents[2]
KEY = ROOT / "data" / "algos" / "hidden" / "answer_key.json"
API_KEY = "sk-lead-http-test-never-printed"


@pytest.mark.slow
def test_lead_audit_over_http_scores_and_reruns_free(tmp_path):
    simulated = SimulatedModel(ROOT / "data" / "algos", json.loads(KEY.read_text()), seed=0)

    def responder(body):
        params = {k: body[k] for k in ("response_format",) if k in body}
        return simulated(body["model"], body["messages"], **params).text

    def audit(out):
        return subprocess.run(
            [sys.executable, "-m", "lead", "audit", str(ROOT / "data" / "algos"),
             "--budget", "20", "--key", str(KEY), "--out", str(out),
             "--ledger", str(tmp_path / "ledger.db")],
            env=env, capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
        )  # fmt: skip

    with FakeOpenAI(api_key=API_KEY) as server:
        server.responder = responder
        env = {**os.environ, "LLM_BASE_URL": server.base_url, "LLM_API_KEY": API_KEY}
        first = audit(tmp_path / "first.json")
        assert first.returncode == 0, first.stderr
        paid = server.requests
        assert paid > 0
        score = json.loads(first.stdout[first.stdout.index("{") :])
        assert score["recall"] >= 0.5 and score["precision"] >= 0.5
        second = audit(tmp_path / "second.json")
        assert second.returncode == 0, second.stderr
        assert server.requests == paid  # every answer came from the ledger
    for text in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert API_KEY not in text
    assert json.loads((tmp_path / "first.json").read_text())
