"""Crash recovery: a run killed by SIGKILL mid-way resumes through the ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash_plan import CONCURRENCY
from fake_key import KEY

from runtime import Ledger
from runtime.testing import FakeOpenAI

PLAN = Path(__file__).with_name("crash_plan.py")


def run_child(ledger: Path, server: FakeOpenAI, out: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    return subprocess.Popen(
        [sys.executable, str(PLAN), str(ledger), server.base_url, KEY, str(out)], env=env
    )


def stored_prompts(path: Path) -> set[str]:
    with Ledger(path) as ledger:
        # the fake answers {"answer": <the question>}, so each stored reply names its question
        return {json.loads(json.loads(row["reply"])["text"])["answer"] for row in ledger.rows()}


@pytest.mark.slow
def test_killed_run_resumes_and_pays_only_what_was_in_flight(tmp_path: Path) -> None:
    with FakeOpenAI(api_key=KEY) as reference:
        clean = run_child(tmp_path / "clean.db", reference, tmp_path / "clean.json")
        assert clean.wait(timeout=60) == 0
    expected = json.loads((tmp_path / "clean.json").read_text())
    assert len(expected["verify"]) == 30 and None not in expected["verify"]

    path = tmp_path / "answers.db"
    with FakeOpenAI(api_key=KEY) as server:
        server.hold_after = 40  # all of phase one and ten of phase two get answered ...
        child = run_child(path, server, tmp_path / "killed.json")
        deadline = time.monotonic() + 60
        while server.held < CONCURRENCY:  # ... then every worker is parked mid-call
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
        with server.lock:
            before, answered = dict(server.prompts), dict(server.answered)
        assert not (tmp_path / "killed.json").exists()

        stored_before_kill = stored_prompts(path)
        assert stored_before_kill == set(answered) and len(answered) == 40

        server.hold_after = None
        server.release()
        rerun = run_child(path, server, tmp_path / "rerun.json")
        assert rerun.wait(timeout=60) == 0
        after = dict(server.prompts)

    assert json.loads((tmp_path / "rerun.json").read_text()) == expected
    paid_again = {p for p, n in after.items() if n > 1}
    assert len(paid_again) <= CONCURRENCY  # only questions in flight at the kill
    in_flight = {p for p in before if p not in answered}
    assert paid_again <= in_flight and not paid_again & stored_before_kill
    assert sum(after.values()) == 60 + len(paid_again)
