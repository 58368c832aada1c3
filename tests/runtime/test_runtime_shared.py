"""Stores shared by many runners (issue 16): locations, claims across processes, leases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from runtime import LLM, Ledger, Reply, fingerprint
from runtime.stores import StoreUnavailable, redact

MESSAGES = [{"role": "user", "content": "asked twice"}]
KEY = fingerprint("m", MESSAGES, {}, 0)


@pytest.mark.parametrize("location", ["mysql://db/answers", "postgresql:answers", "file:///x.db"])
def test_a_scheme_planlang_does_not_know_is_an_error_not_a_path(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="Unknown store location"):
        Ledger(location)
    assert list(tmp_path.iterdir()) == []  # no file, no folder named after the scheme


def test_an_unreachable_server_is_named_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreUnavailable, match=r"postgresql://bar:\*\*\*@127\.0\.0\.1:9/postgres"):
        Ledger("postgresql://bar:hunter2@127.0.0.1:9/postgres", timeout=0.5)
    assert list(tmp_path.iterdir()) == []
    assert "hunter2" not in redact("postgresql://bar:hunter2@h/db")


def test_a_question_in_flight_on_another_ledger_is_waited_for(ledger_location: str) -> None:
    # Two ledger objects on one store stand for two processes (or machines): the second ask
    # must wait for the first's answer, not pay for it again.
    first, second = Ledger(ledger_location), Ledger(ledger_location)
    assert first.claim(KEY) is None  # ours to pay for
    calls: list[str] = []

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        calls.append(model)
        return Reply(text="paid twice")

    answers: list[Reply] = []
    waiter = threading.Thread(target=lambda: answers.append(
        LLM(second, client=client).chat(MESSAGES, model="m")))  # fmt: skip
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and answers == []  # waiting on the claim
    first.put(KEY, Reply(text="paid once", model="m"))
    first.unclaim(KEY)
    waiter.join(30)
    assert [a.text for a in answers] == ["paid once"] and answers[0].cached
    assert calls == []
    first.close()
    second.close()


CLAIMER = textwrap.dedent(
    """
    import sys, time
    from runtime import Ledger
    options = {"lease": 1.0} if sys.argv[1].startswith("postgresql") else {}
    ledger = Ledger(sys.argv[1], **options)
    assert ledger.claim(sys.argv[2]) is None
    print("claimed", flush=True)
    time.sleep(600)
    """
)


def test_a_claim_whose_holder_was_killed_is_taken_over(
    tmp_path: Path, ledger_location: str
) -> None:
    script = tmp_path / "claimer.py"
    script.write_text(CLAIMER)
    child = subprocess.Popen([sys.executable, str(script), ledger_location, KEY],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None and child.stdout.readline() == "claimed\n"
    ledger = Ledger(ledger_location)
    stop = threading.Event()
    guard = threading.Timer(60, stop.set)  # a hang guard only
    guard.start()
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    child.stdout.close()
    try:
        assert ledger.claim(KEY, stop=stop.is_set) is None  # the dead runner's claim is ours
        assert not stop.is_set()
    finally:
        guard.cancel()
        ledger.close()


def test_a_raise_anywhere_wakes_a_runner_waiting_elsewhere(pg_url: str) -> None:
    from runtime.shared_budget import SharedBudget

    here, there = SharedBudget(pg_url, "team", cap=0.5), SharedBudget(pg_url, "team")
    here.settle(here.admit(0.5), 0.5)
    admitted: list[float] = []
    waiter = threading.Thread(target=lambda: admitted.append(here.admit(0.5).amount))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and here.paused == 1
    there.raise_to(1.0)  # another runner's object: nothing wakes ``here`` but its own look
    waiter.join(30)
    assert admitted == [0.5] and here.snapshot() == (0.5, 0.5, 1.0)
    here.close()
    there.close()


def test_a_snapshot_is_one_moment_even_when_the_cap_moves_between_its_reads(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A raise and a new reservation committed while a snapshot is read never show a team past
    its cap: (spent 3.0, reserved 0.01, cap 3.0) was seen in CI (four runners sharing one cap),
    from a snapshot that read the budget's row and its reservations in two statements."""
    from contextlib import contextmanager

    from runtime.shared_budget import SharedBudget

    reader, other = SharedBudget(pg_url, "team", cap=3.0), SharedBudget(pg_url, "team")
    other.settle(other.admit(3.0), 3.0)
    real = reader.server.connection
    moved: list[bool] = []

    class Interleaved:  # another runner raises the cap and reserves after the first statement
        def __init__(self, conn: Any) -> None:
            self.conn = conn

        def execute(self, *args: Any, **kwargs: Any) -> Any:
            result = self.conn.execute(*args, **kwargs)
            if not moved:
                moved.append(True)
                other.raise_to(100.0)
                other.admit(0.01)
            return result

    @contextmanager
    def connection() -> Any:
        with real() as conn:
            yield Interleaved(conn)

    monkeypatch.setattr(reader.server, "connection", connection)
    spent, reserved, cap = reader.snapshot()
    assert moved and cap is not None and spent + reserved <= cap
    assert (spent, reserved, cap) in {(3.0, 0.0, 3.0), (3.0, 0.01, 100.0)}
    monkeypatch.undo()
    assert reader.snapshot() == (3.0, 0.01, 100.0)
    reader.close()
    other.close()


def test_a_dead_runners_reservation_stops_counting_after_its_lease(pg_url: str) -> None:
    from runtime.shared_budget import SharedBudget

    dead = SharedBudget(pg_url, "team", cap=1.0, lease=0.5)
    dead.admit(1.0)
    dead._beat.close()  # it stops renewing, as a killed runner does
    alive = SharedBudget(pg_url, "team", lease=5.0)
    assert alive.admit(1.0).amount == 1.0  # waited for the lease, then admitted
    assert alive.snapshot() == (0.0, 1.0, 1.0)
    alive.close()
    dead.server.close()


def test_a_late_heartbeat_does_not_bring_back_a_lapsed_reservation(pg_url: str) -> None:
    """A runner stalled past its lease (a stopped process, a paused machine) whose heartbeat
    then beats again must not revive a reservation whose room another runner was given: the
    team would hold more reserved than its cap."""
    from runtime.shared_budget import SharedBudget

    stalled = SharedBudget(pg_url, "team", cap=1.0, lease=0.5)
    stalled.admit(1.0)
    stalled._beat.close()  # it stops beating ...
    alive = SharedBudget(pg_url, "team", lease=5.0)
    assert alive.admit(1.0).amount == 1.0  # ... its lease runs out, the room goes to another
    stalled._renew(stalled._beat.holder, 5.0)  # ... and then it beats once more
    spent, reserved, cap = alive.snapshot()
    assert (spent, reserved, cap) == (0.0, 1.0, 1.0)
    alive.close()
    stalled.server.close()


def test_the_schema_is_made_once_by_runners_starting_together(pg_url: str) -> None:
    import psycopg

    opened: list[Ledger] = []
    start = threading.Barrier(4)

    def open_one() -> None:
        start.wait()
        opened.append(Ledger(pg_url))

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(opened) == 4
    for ledger in opened:
        ledger.close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM planlang_schema").fetchall() == [(1,)]
        conn.execute("INSERT INTO planlang_schema VALUES (99)")
    with pytest.raises(StoreUnavailable, match="schema is version 99, newer than this planlang"):
        Ledger(pg_url)
