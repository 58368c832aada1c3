"""The events a picture of a run needs: queueing, budget waits and raises, retry turns.

They are new kinds (``budget``, ``worker_running``, ``resumed``, ``cap_raised``, ``retry``); the
kinds that were there before keep exactly their fields.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from runtime import LLM, Ledger, Reply, Role, Run, Settings

S = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
SETTINGS = Settings(roles={"scan": Role(model="small", price=1.0)}, default_price=1.0)

OLD_SHAPES = {
    "run_started": {"title", "concurrency", "max_agents", "mode"},
    "phase": {"name"},
    "worker_started": {"worker", "label", "role", "phase"},
    "call": {"worker", "turn", "phase", "role", "model", "cached", "standin", "credits",
             "would_credits", "seconds"},
    "paused": {"worker", "reason"},
    "worker_done": {"worker", "turns", "credits", "would_credits", "error"},
    "worker_failed": {"worker", "turns", "credits", "would_credits", "error"},
    "run_finished": {"status", "error", "accounting"},
}  # fmt: skip


def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
    first = messages[1]["content"] if messages[0]["role"] == "system" else messages[0]["content"]
    turns = sum(1 for m in messages if m["role"] == "assistant")
    if first == "repair me" and turns == 0:
        return Reply('{"wrong": true}')
    if first == "check me":
        return Reply('{"answer": "%s"}' % ("good" if turns else "bad"))
    time.sleep(0.01)
    return Reply('{"answer": "x"}')


def test_a_run_records_queueing_waits_raises_and_retry_turns(make_budget: Any) -> None:
    """The same over the process's own budget and one shared on a PostgreSQL server."""
    llm = LLM(Ledger(":memory:"), client=client, budget=make_budget(2.0), settings=SETTINGS)
    run = Run("report events", llm=llm, concurrency=2)
    prompts = ["a", "b", "c", "repair me", "check me"]

    def plan(r: Run) -> Any:
        r.phase("all")
        return r.parallel([lambda p=p: r.agent(p, schema=S, model="scan",
                           check=lambda v: None if v["answer"] != "bad" else "not bad")
                           for p in prompts])  # fmt: skip

    def raise_when_paused() -> None:
        deadline = time.monotonic() + 20
        while not run.paused and time.monotonic() < deadline:
            time.sleep(0.002)
        llm.budget.raise_to(100.0)

    raiser = threading.Thread(target=raise_when_paused)
    raiser.start()
    run.run_sync(plan)
    raiser.join()
    events = run.events
    kinds = [e["kind"] for e in events]
    assert kinds[:2] == ["run_started", "budget"]
    assert events[1]["cap"] == 2.0 and events[1]["spent"] == 0.0

    running = {e["worker"]: e for e in events if e["kind"] == "worker_running"}
    started = {e["worker"]: e for e in events if e["kind"] == "worker_started"}
    assert set(started) == {1, 2, 3, 4, 5} and set(running) >= {3, 4, 5}  # 2 slots
    for worker, e in running.items():
        assert e["queued_since"] <= started[worker]["t"] <= e["t"]
    # two slots for five thunks: the later ones queued at the pool, long before they started
    assert max(e["t"] - e["queued_since"] for e in running.values()) > 0.005

    paused = [e["worker"] for e in events if e["kind"] == "paused"]
    resumed = [e for e in events if e["kind"] == "resumed"]
    assert paused and sorted(paused) == sorted(e["worker"] for e in resumed)
    assert all(e["waited"] >= 0 for e in resumed)
    (raised,) = [e for e in events if e["kind"] == "cap_raised"]
    assert (raised["old_cap"], raised["cap"]) == (2.0, 100.0)
    assert kinds.index("cap_raised") < min(kinds.index("resumed"), len(kinds))

    retries = [e for e in events if e["kind"] == "retry"]
    assert sorted(e["why"] for e in retries) == ["check", "repair"]
    assert all(e["turn"] == 2 for e in retries)
    for e in events:
        if e["kind"] in OLD_SHAPES:
            assert set(e) - {"seq", "t", "kind"} == OLD_SHAPES[e["kind"]], e


def test_a_budget_tells_its_watchers_of_a_raise_until_they_unwatch(make_budget: Any) -> None:
    budget = make_budget(1.0)
    seen: list[tuple[float | None, float | None]] = []

    def watcher(old: float | None, new: float | None) -> None:
        seen.append((old, new))

    budget.watch(watcher)
    budget.raise_to(3.0)
    budget.raise_to(None)
    budget.unwatch(watcher)
    budget.raise_to(5.0)
    assert seen == [(1.0, 3.0), (3.0, None)]
