"""Runs: fan-out, budget pause, repair and check turns, failures, backstop, cancel, events."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_key import KEY

from runtime import (
    LLM,
    Budget,
    CacheMiss,
    Ledger,
    Reply,
    Role,
    Run,
    RunCancelled,
    Settings,
    http_client,
)
from runtime.testing import FakeOpenAI

S = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
SETTINGS = Settings(roles={"scan": Role(model="small", price=0.2)}, default_price=0.2)


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.002)


def test_forty_workers_under_a_cap_of_25_calls(server: FakeOpenAI) -> None:
    """The contract example: 25 requests, paused, then raise_to and all 40 complete."""
    with http_client(server.base_url, KEY, timeout=5) as client:
        ledger = Ledger(":memory:")
        llm = LLM(ledger, client=client, budget=Budget(5.0), settings=SETTINGS)
        run = Run("forty workers", llm=llm, concurrency=10)
        run.start(
            lambda r: r.parallel([lambda i=i: r.agent(f"q {i}", schema=S) for i in range(40)])
        )
        wait_until(lambda: llm.budget.paused == 10, "ten workers paused at the cap")
        assert server.requests == 25
        assert run.paused and "PAUSED at the budget" in run.statusline()
        assert any(e["kind"] == "paused" for e in run.events)
        llm.budget.raise_to(10.0)
        results = run.wait()
    assert run.status == "completed"
    assert results == [{"answer": f"q {i}"} for i in range(40)]
    assert server.requests == 40 and llm.budget.spent == pytest.approx(8.0)
    assert len(ledger) == 40
    ledger.close()


class Script:
    """A client whose answers are scripted per prompt: a list of texts, one per turn."""

    def __init__(self, answers: dict[str, list[str]], latency: float = 0.0) -> None:
        self.answers = answers
        self.latency = latency
        self.calls: list[list[dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        with self.lock:
            self.calls.append(messages)
        if self.latency:
            time.sleep(self.latency)
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(1 for m in messages if m["role"] == "assistant")
        texts = self.answers.get(prompt.split("\n")[0], ['{"answer": "ok"}'])
        return Reply(text=texts[min(turn, len(texts) - 1)])


def make_run(client: Any, **options: Any) -> tuple[Run, LLM]:
    llm = LLM(Ledger(":memory:"), client=client, settings=options.pop("settings", SETTINGS))
    return Run("test", llm=llm, concurrency=options.pop("concurrency", 4), **options), llm


def test_a_bad_answer_gets_one_repair_turn_listing_the_problems() -> None:
    client = Script({"fix me": ['{"wrong": 1}', '{"answer": "fixed"}'], "hopeless": ["nope"]})
    run, _ = make_run(client)
    result = run.run_sync(lambda r: [r.agent("fix me", schema=S), r.agent("hopeless", schema=S)])
    assert result == [{"answer": "fixed"}, None]
    repair = client.calls[1][-1]["content"]
    assert "'answer' is a required property" in repair
    fixed, hopeless = run.threads
    assert (fixed.status, fixed.turns) == ("done", 2)
    assert hopeless.status == "failed" and "does not match its schema" in (hopeless.error or "")
    assert hopeless.turns == 2  # one repair, then it gives up
    assert run.status == "completed"


def test_check_feeds_problems_back_a_bounded_number_of_times() -> None:
    client = Script({"count": ['{"answer": "1"}', '{"answer": "2"}', '{"answer": "3"}']})
    run, _ = make_run(client)

    def at_least(n: int):
        return lambda value: None if int(value["answer"]) >= n else f"answer is below {n}"

    result = run.run_sync(
        lambda r: [
            r.agent("count", schema=S, check=at_least(3), label="reaches"),
            r.agent("count", schema=S, check=at_least(9), label="never", sample=1),
        ]
    )
    assert result == [{"answer": "3"}, None]
    assert "Not done yet: answer is below 3" in client.calls[1][-1]["content"]
    never = run.threads[1]
    assert never.turns == 1 + SETTINGS.max_check_retries == 3
    assert "answer is below 9" in (never.error or "")
    assert run.max_turns_per_worker == 4


def test_a_check_that_returns_neither_text_nor_none_fails_its_worker_in_plain_words() -> None:
    # it said "its check returned a int": the runtime cannot import planlang.errors.a_kind
    client = Script({"count": ['{"answer": "1"}']})
    run, _ = make_run(client)
    result = run.run_sync(lambda r: [r.agent("count", schema=S, check=lambda value: 7)])
    assert result == [None]
    assert "its check returned a value of type int, not a problem (a str) or None" in (
        run.threads[0].error or ""
    )


def test_worker_failures_stay_with_the_worker_and_results_keep_order() -> None:
    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        if "boom" in messages[-1]["content"]:
            raise ConnectionError("broken pipe")
        return Reply(text=messages[-1]["content"].upper())

    run, _ = make_run(client)

    def crashing_thunk() -> str:
        raise KeyError("plan bug in one thunk")

    result = run.run_sync(
        lambda r: r.parallel(
            [lambda: r.agent("a"), lambda: r.agent("boom"), crashing_thunk, lambda: r.agent("d")]
        )  # fmt: skip
    )
    assert result == ["A", None, None, "D"]
    assert run.status == "completed"
    assert [t.status for t in run.threads if t.prompt == "boom"] == ["failed"]
    assert any(e["kind"] == "thunk_failed" and "KeyError" in e["error"] for e in run.events)
    assert run.counts()["failed"] == 1


def test_stream_yields_in_completion_order_and_chains_a_second_stage() -> None:
    delays = {"slow": 0.3, "fast": 0.0}

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        word = messages[-1]["content"].split()[-1]
        time.sleep(delays.get(word, 0.0))
        return Reply(text=messages[-1]["content"])

    run, _ = make_run(client)

    def plan(r: Run) -> Any:
        order = [
            i for i, _ in r.stream([lambda: r.agent("scan slow"), lambda: r.agent("scan fast")])
        ]
        chained = dict(r.stream([lambda: r.agent("a slow"), lambda: r.agent("b fast")],
                                then=lambda text: r.agent(f"verify {text}")))  # fmt: skip
        stream = r.stream([lambda: r.agent("x")])
        seen = []
        for index, value in stream:
            seen.append((index, value))
            if index == 0:
                stream.add(lambda: r.agent("y"))
        return order, chained, seen

    order, chained, seen = run.run_sync(plan)
    assert order == [1, 0]
    assert chained == {0: "verify a slow", 1: "verify b fast"}
    assert seen == [(0, "x"), (1, "y")]


def test_nested_fan_out_inside_a_worker_does_not_deadlock() -> None:
    run, _ = make_run(lambda model, messages, **p: Reply(text="ok"), concurrency=2)
    inner = lambda r: r.parallel([lambda: r.agent("in")] * 3)  # noqa: E731
    result = run.run_sync(lambda r: r.parallel([lambda: inner(r)] * 4))
    assert result == [["ok"] * 3] * 4


def test_phase_and_role_accounting_with_the_standin(tmp_path: Path) -> None:
    settings = Settings(
        roles={"scan": Role(model="small", price=0.01), "verify": Role(model="big", price=0.5)}
    )
    ledger = Ledger(":memory:")
    standin = Script({})
    llm = LLM(ledger, standin=standin, budget=Budget(0.0), settings=settings)
    events = tmp_path / "events.jsonl"
    run = Run("rehearsal", llm=llm, concurrency=4, events_path=events)

    def plan(r: Run) -> Any:
        r.phase("scan")
        found = r.parallel([lambda i=i: r.agent(f"s{i}", schema=S, model="scan") for i in range(6)])
        r.phase("verify")
        r.log("verifying")
        return r.parallel([lambda f=f: r.agent(f"v {f}", model="verify") for f in found[:2]])

    run.run_sync(plan)
    books = run.accounting.to_dict()
    assert books["phases"]["scan"]["standin"] == 6
    assert books["phases"]["scan"]["would_credits"] == pytest.approx(0.06)
    assert books["phases"]["verify"]["would_credits"] == pytest.approx(1.0)
    assert books["roles"]["verify"]["calls"] == 2
    assert books["total"]["credits"] == 0.0 and books["total"]["sent"] == 0
    assert sorted(books["turns"].values()) == [1] * 8
    assert len(ledger) == 0 and llm.budget.spent == 0.0
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    calls = [e for e in lines if e["kind"] == "call"]
    assert len(calls) == 8 and all(e["standin"] and e["credits"] == 0.0 for e in calls)
    assert {e["would_credits"] for e in calls if e["phase"] == "verify"} == {0.5}
    assert lines[0]["kind"] == "run_started" and lines[-1]["kind"] == "run_finished"
    assert any(e["kind"] == "log" and e["message"] == "verifying" for e in lines)
    worker = run.threads_json()[0]
    assert (
        worker["would_credits"] == pytest.approx(0.01) and worker["messages"][0]["role"] == "system"
    )


def test_runaway_backstop_refuses_then_cancels() -> None:
    run, _ = make_run(lambda model, messages, **p: Reply(text="ok"), max_agents=3)
    results: list[Any] = []

    def plan(r: Run) -> None:
        for i in range(10):
            results.append(r.agent(f"q{i}"))

    with pytest.raises(RunCancelled, match="runaway"):
        run.run_sync(plan)
    assert results == ["ok", "ok", "ok", None, None]  # the 6th ask (2 x 3) cancels the run
    assert run.status == "cancelled"
    assert [e["worker"] for e in run.events if e["kind"] == "worker_refused"] == [4, 5, 6]


def test_replay_miss_ends_the_run_without_sending() -> None:
    client = Script({})
    ledger = Ledger(":memory:")
    run = Run("replay", llm=LLM(ledger, client=client, mode="replay"), concurrency=2)
    with pytest.raises(CacheMiss):
        run.run_sync(lambda r: r.parallel([lambda: r.agent("q")] * 3))
    assert run.status == "failed" and client.calls == []


def test_a_plan_crash_fails_the_run_with_its_error() -> None:
    run, _ = make_run(Script({}))
    with pytest.raises(ZeroDivisionError):
        run.run_sync(lambda r: 1 / 0)
    assert run.status == "failed" and "ZeroDivisionError" in run.events[-1]["error"]


def test_cancel_then_rerun_pays_no_question_twice(server: FakeOpenAI, tmp_path: Path) -> None:
    server.latency = 0.02
    path = tmp_path / "answers.db"
    plan = lambda r: r.parallel([lambda i=i: r.agent(f"q {i}") for i in range(30)])  # noqa: E731
    with http_client(server.base_url, KEY, timeout=5) as client:
        ledger = Ledger(path)
        run = Run("first", llm=LLM(ledger, client=client, settings=SETTINGS), concurrency=4)
        run.start(plan)
        wait_until(lambda: server.requests >= 8, "a few answers")
        run.cancel()
        with pytest.raises(RunCancelled):
            run.wait()
        assert run.status == "cancelled"
        first_requests = server.requests
        assert first_requests < 30
        stored = len(ledger)
        assert stored == first_requests  # workers already talking finished and were stored
        ledger.close()

        ledger = Ledger(path)
        rerun = Run("again", llm=LLM(ledger, client=client, settings=SETTINGS), concurrency=4)
        assert rerun.run_sync(plan) == [f"echo: q {i}" for i in range(30)]
        ledger.close()
    assert server.requests == 30
    assert max(server.prompts.values()) == 1  # no question was paid twice


@pytest.mark.parametrize(("arguments", "said"), [
    ({"model": 5}, "The worker's model is not text: int was given."),
    ({"label": ["a"]}, "The worker's label is not text: list was given."),
    ({"sample": "a"}, "The worker's sample is not a whole number of 0 or more: str was given."),
    ({"sample": -1}, "The worker's sample is not a whole number of 0 or more: -1 was given."),
    ({"sample": True}, "The worker's sample is not a whole number of 0 or more: True was given."),
])  # fmt: skip
def test_a_worker_whose_model_label_or_sample_is_wrong_fails_before_any_call(
    arguments: dict[str, Any], said: str
) -> None:
    """``model=5`` went to the endpoint as ``"model": 5`` (the run completed; the rehearsal
    blamed its client for a malformed reply), ``label=["a"]`` raised "unhashable type", and a
    sample of "a" or -1 was taken: the worker now fails, saying which argument and why."""
    client = Script({})
    run, _ = make_run(client)
    result = run.run_sync(lambda r: [r.agent("q", **arguments), r.agent("fine")])
    assert result == [None, '{"answer": "ok"}']
    wrong, fine = run.threads
    assert (wrong.status, wrong.error) == ("failed", said)
    assert fine.status == "done" and len(client.calls) == 1  # only the fine worker asked
