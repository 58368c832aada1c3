"""Many runner processes, one ledger and one cap, against a real PostgreSQL server (issue 16).

Each runner is ``shared_runner.py``: calls through ``Run.agent`` with a client that writes
every question it is paid for to a file, so "paid twice" is counted at the client.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from runtime import Ledger, Reply

try:
    from runtime.shared_budget import SharedBudget
except ImportError:  # no psycopg: the pg_url fixture fails (CI) or skips, saying so
    SharedBudget = None  # type: ignore[assignment,misc]

RUNNER = Path(__file__).with_name("shared_runner.py")
PRICE = 0.01
pytestmark = pytest.mark.slow


def start(ledger: str, budget_url: str, cap: str, calls: int, questions: int, seed: int,
          paid: Path, lease: float = 10.0, delay: float = 0.002, timeout: float = 10.0,
          ) -> subprocess.Popen[str]:  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    args = [ledger, budget_url, cap, "team", str(calls), str(questions), str(seed), str(paid),
            str(lease), str(delay), str(timeout)]  # fmt: skip
    return subprocess.Popen([sys.executable, str(RUNNER), *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def paid_lines(folder: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for file in folder.glob("paid-*.txt"):
        counts.update(line for line in file.read_text().splitlines() if line)
    return counts


def finish(child: subprocess.Popen[str], timeout: float = 240) -> tuple[int, str]:
    _, err = child.communicate(timeout=timeout)
    return child.returncode, err


class Sampler:
    """Reads the team's budget over and over while runners run; keeps what broke the cap."""

    def __init__(self, budget: SharedBudget) -> None:
        self.budget, self.samples, self.over = budget, 0, []  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            spent, reserved, cap = self.budget.snapshot()
            self.samples += 1
            if cap is not None and spent + reserved > cap + 1e-9:
                self.over.append((spent, reserved, cap))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def test_four_runners_share_one_ledger_and_one_cap(tmp_path: Path, pg_url: str) -> None:
    # 4 x 500 calls over 800 questions: most questions are asked by several runners at once.
    runners, calls, questions = 4, 500, 800
    team = SharedBudget(pg_url, "team", cap=3.0)  # below what the work needs: runners pause
    sampler = Sampler(team)
    children = [start(pg_url, pg_url, "keep", calls, questions, seed, tmp_path / f"paid-{seed}.txt")
                for seed in range(runners)]  # fmt: skip
    deadline = time.monotonic() + 240  # a hang guard only
    while team.snapshot()[0] < 3.0 - 1e-9:  # every runner ends up waiting at the cap ...
        assert all(c.poll() is None for c in children) and time.monotonic() < deadline
        time.sleep(0.05)
    team.raise_to(100.0)  # ... and a raise from here wakes them in their own processes
    outcomes = [finish(child) for child in children]
    sampler.stop()
    assert [code for code, _ in outcomes] == [0] * runners, outcomes
    paid = paid_lines(tmp_path)
    twice = {q: n for q, n in paid.items() if n > 1}
    assert twice == {}  # no question paid twice, anywhere
    with Ledger(pg_url) as ledger:
        assert len(ledger) == len(paid)
    spent, reserved, _ = team.snapshot()
    assert reserved == 0 and spent == pytest.approx(len(paid) * PRICE)
    assert sampler.samples > 10 and sampler.over == []
    team.close()


def test_four_runners_on_one_sqlite_file_pay_each_question_once(tmp_path: Path) -> None:
    # The same overlap on SQLite (each runner with its own budget): claims hold across processes.
    path = str(tmp_path / "answers.db")
    children = [start(path, "-", "-", 300, 450, seed, tmp_path / f"paid-{seed}.txt")
                for seed in range(4)]  # fmt: skip
    outcomes = [finish(child) for child in children]
    assert [code for code, _ in outcomes] == [0] * 4, outcomes
    paid = paid_lines(tmp_path)
    assert {q: n for q, n in paid.items() if n > 1} == {}
    with Ledger(path) as ledger:
        assert len(ledger) == len(paid)


def test_a_killed_runner_gives_its_reservations_back_and_a_rerun_pays_only_the_rest(
    tmp_path: Path, pg_url: str
) -> None:
    lease = 1.0
    team = SharedBudget(pg_url, "team", cap=100.0)
    paid_file = tmp_path / "paid-0.txt"
    child = start(pg_url, pg_url, "keep", 400, 400, 7, paid_file, lease=lease)
    deadline = time.monotonic() + 120  # hang guards only
    while len(paid_lines(tmp_path)) < 100:
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    finish(child)
    with Ledger(pg_url) as ledger:
        stored = {Reply.from_json(row["reply"]).text.removeprefix("answer to ")
                  for row in ledger.rows()}  # fmt: skip
    paid_before = paid_lines(tmp_path)
    in_flight = set(paid_before) - stored
    assert stored <= set(paid_before) and len(in_flight) <= 8  # at most `concurrency` calls
    while team.snapshot()[1] > 0:  # its reservations stop counting once the lease runs out
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # Billed: every answer settled before the kill. One stored but killed before its settle
    # is not billed (its reservation is released, as the lease says): at most one per slot.
    spent_at_kill = team.spent
    assert (len(stored) - 8) * PRICE - 1e-9 <= spent_at_kill <= len(stored) * PRICE + 1e-9

    rerun = start(pg_url, pg_url, "keep", 400, 400, 7, tmp_path / "paid-rerun.txt", lease=lease)
    assert finish(rerun)[0] == 0
    paid_again = Counter((tmp_path / "paid-rerun.txt").read_text().splitlines())
    assert set(paid_again) == {f"question {q}" for q in range(400)} - stored
    twice = {q for q, n in paid_lines(tmp_path).items() if n > 1}
    assert twice <= in_flight  # only what was in flight at the kill was paid for again
    assert team.spent == pytest.approx(spent_at_kill + len(paid_again) * PRICE)
    team.close()


def test_a_server_stopped_mid_run_fails_the_runners_cleanly_and_a_rerun_completes(
    tmp_path: Path,
) -> None:
    from pgserver import Cluster, require_binaries

    cluster = Cluster(require_binaries())  # its own server: this test stops it
    try:
        url = cluster.new_database()
        team = SharedBudget(url, "team", cap=100.0)
        team.close()
        # Slow calls (50 ms, 8 at a time): the runners are still busy when the server stops.
        # Their stores wait 3 s for a connection, not the default 10: a runner meets the dead
        # server several times on its way out (a call's answer, its claim, ...), each a full wait.
        children = [start(url, url, "keep", 800, 1000, seed, tmp_path / f"paid-{seed}.txt",
                          delay=0.05, timeout=3.0) for seed in range(2)]  # fmt: skip
        deadline = time.monotonic() + 120
        paid_files = [tmp_path / f"paid-{seed}.txt" for seed in range(2)]
        while not all(f.exists() and f.read_text().count("\n") >= 30 for f in paid_files):
            assert all(c.poll() is None for c in children) and time.monotonic() < deadline
            time.sleep(0.01)  # both runners are paying for questions ...
        cluster.stop()  # ... when the server goes away
        outcomes = [finish(child, timeout=120) for child in children]
        for code, err in outcomes:
            assert code == 3, err
            assert "StoreUnavailable: The PostgreSQL store postgresql://postgres@/" in err
            assert "Traceback" not in err
        cluster.start()
        with Ledger(url) as ledger:  # every row whole: each decodes to a full answer
            rows = list(ledger.rows())
            assert all(Reply.from_json(r["reply"]).text.startswith("answer to ") for r in rows)
            assert 0 < len(rows) < len(paid_lines(tmp_path)) + 1
        reruns = [start(url, url, "keep", 800, 1000, seed, tmp_path / f"again-{seed}.txt")
                  for seed in range(2)]  # fmt: skip
        assert [finish(child)[0] for child in reruns] == [0, 0]
        with Ledger(url) as ledger:
            stored = {Reply.from_json(r["reply"]).text for r in ledger.rows()}
        asked = {q for seed in range(2) for q in random.Random(seed).sample(range(1000), 800)}
        assert {f"answer to question {q}" for q in asked} == stored
    finally:
        cluster.remove()
