"""The reference design's demonstrations, in our API (issue 13).

Forty workers under a cap of 25 calls is in ``test_runtime_run`` (its first test).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from fake_key import KEY

from runtime import LLM, Budget, CacheMiss, Ledger, Role, Run, RunCancelled, Settings, http_client
from runtime.testing import FakeOpenAI

S = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
SETTINGS = Settings(roles={"scan": Role(model="small", price=1.0)}, default_price=1.0)


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 60  # a hang guard, not a timing assertion
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def fan(n: int) -> Any:
    return lambda r: r.parallel([lambda i=i: r.agent(f"q {i}", schema=S, model="scan")
                                 for i in range(n)])  # fmt: skip


def test_cache_then_strict_replay(server: FakeOpenAI, tmp_path: Any) -> None:
    ledger = Ledger(tmp_path / "answers.db")
    with http_client(server.base_url, KEY, timeout=5) as client:
        first = Run("collect", llm=LLM(ledger, client=client, settings=SETTINGS)).run_sync(fan(5))
    replay = LLM(ledger, mode="replay", settings=SETTINGS)
    assert Run("replay", llm=replay).run_sync(fan(5)) == first
    assert server.requests == 5 and replay.stats["hits"] == 5 and replay.budget.spent == 0
    with pytest.raises(CacheMiss):
        Run("replay more", llm=replay).run_sync(fan(6))  # the sixth question was never paid
    assert server.requests == 5


def test_one_workers_events_tell_its_story(server: FakeOpenAI) -> None:
    server.fail_next("length")  # the first answer is cut off: one repair turn
    with http_client(server.base_url, KEY, timeout=5) as client:
        run = Run("one", llm=LLM(Ledger(":memory:"), client=client, settings=SETTINGS))
        run.run_sync(lambda r: r.agent("q", schema=S, model="scan"))
    # worker_running says the worker queued for its slot past a millisecond: on a loaded
    # machine it may, alone as it is (runtime/waits.py); it is a wait, not part of the story
    mine = [e for e in run.events if e.get("worker") == 1 and e["kind"] != "worker_running"]
    # the repair turn is an event of its own (the run report marks it on the lane)
    assert [e["kind"] for e in mine] == ["worker_started", "call", "retry", "call", "worker_done"]
    assert [e["turn"] for e in mine if e["kind"] == "call"] == [1, 2]
    assert [(e["why"], e["turn"]) for e in mine if e["kind"] == "retry"] == [("repair", 2)]
    assert mine[-1]["credits"] == 2.0 and mine[-1]["turns"] == 2


def test_cancel_then_rerun_pays_sixty_in_all(server: FakeOpenAI, tmp_path: Any) -> None:
    ledger = Ledger(tmp_path / "answers.db")
    server.hold_after = 20
    with http_client(server.base_url, KEY, timeout=30, retries=0) as client:
        llm = LLM(ledger, client=client, budget=Budget(100), settings=SETTINGS)
        run = Run("first", llm=llm, concurrency=8).start(fan(60))
        wait_until(lambda: server.held >= 1, "a call parked after twenty answers")
        run.cancel("test")
        server.release()
        with pytest.raises(RunCancelled):
            run.wait(timeout=60)
        first_spent = llm.budget.spent
        server.hold_after = None
        again = LLM(ledger, client=client, budget=Budget(100), settings=SETTINGS)
        results = Run("rerun", llm=again, concurrency=8).run_sync(fan(60))
    assert results == [{"answer": f"q {i}"} for i in range(60)]
    assert first_spent + again.budget.spent == 60.0  # every question paid exactly once
    assert sum(server.answered.values()) == 60
