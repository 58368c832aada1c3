"""The front door: hit, replay refusal, stand-in, admission, client, settle - in that order."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import (
    LLM,
    Budget,
    CacheMiss,
    ClientError,
    Ledger,
    Reply,
    Role,
    Settings,
    SpendRefused,
)

ASK = [{"role": "user", "content": "2 + 2?"}]
SETTINGS = Settings(roles={"scan": Role(model="small", price=0.25)}, default_price=0.5)


class Scripted:
    def __init__(self, credits: float | None = None, fail: bool = False) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.credits = credits
        self.fail = fail

    def __call__(self, model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        self.calls.append((model, params))
        if self.fail:
            raise ConnectionError("the wire broke")
        return Reply(text=f"{model} says 4", credits=self.credits)


def test_collect_pays_once_then_serves_from_the_ledger() -> None:
    client = Scripted()
    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(1.0), settings=SETTINGS)
    first = llm.chat(ASK, role="scan", temperature=0)
    again = llm.chat(ASK, role="scan", temperature=0)
    other_sample = llm.chat(ASK, role="scan", temperature=0, sample=1)
    assert client.calls == [("small", {"temperature": 0})] * 2
    assert (first.cached, first.billed, first.credits) == (False, 0.25, 0.25)
    assert (again.cached, again.billed, again.text) == (True, 0.0, first.text)
    assert other_sample.cached is False
    assert llm.budget.spent == 0.5 and llm.stats["hits"] == 1 and llm.stats["sent"] == 2


def test_settle_bills_the_actual_credits_reported() -> None:
    llm = LLM(Ledger(":memory:"), client=Scripted(credits=0.1), budget=Budget(1.0),
              settings=SETTINGS)  # fmt: skip
    assert llm.chat(ASK, role="scan").credits == 0.1
    assert llm.budget.snapshot() == (0.1, 0.0, 1.0)


def test_an_unknown_role_is_a_model_at_the_default_price() -> None:
    client = Scripted()
    llm = LLM(Ledger(":memory:"), client=client, settings=SETTINGS)
    assert llm.chat(ASK, role="big-model").credits == 0.5
    assert client.calls[0][0] == "big-model"


def test_replay_serves_hits_and_refuses_misses_without_sending() -> None:
    ledger = Ledger(":memory:")
    LLM(ledger, client=Scripted(), settings=SETTINGS).chat(ASK, role="scan")
    client = Scripted()
    replay = LLM(ledger, client=client, mode="replay", standin=Scripted(), settings=SETTINGS)
    assert replay.chat(ASK, role="scan").cached is True
    with pytest.raises(CacheMiss, match="nothing was sent") as caught:
        replay.chat([{"role": "user", "content": "new question"}], role="scan")
    assert client.calls == [] and replay.standin.calls == []  # type: ignore[union-attr]
    assert len(caught.value.key) == 64


def test_the_standin_answers_for_free_and_leaves_no_trace() -> None:
    ledger = Ledger(":memory:")
    client, standin = Scripted(), Scripted()
    llm = LLM(ledger, client=client, budget=Budget(0.0), standin=standin, settings=SETTINGS)
    reply = llm.chat(ASK, role="scan")
    assert reply.standin is True and reply.billed == 0.0
    assert reply.credits == 0.25  # what a real call of this role would have cost
    assert len(ledger) == 0 and client.calls == [] and llm.budget.spent == 0.0
    llm.standin = None
    with pytest.raises(SpendRefused):
        LLM(ledger, settings=SETTINGS).chat(ASK, role="scan")


def test_a_ledger_hit_comes_before_the_standin() -> None:
    ledger = Ledger(":memory:")
    LLM(ledger, client=Scripted(), settings=SETTINGS).chat(ASK, role="scan")
    llm = LLM(ledger, standin=Scripted(), settings=SETTINGS)
    assert llm.chat(ASK, role="scan").cached is True


def test_no_client_means_spend_refused_and_nothing_reserved() -> None:
    llm = LLM(Ledger(":memory:"), budget=Budget(1.0), settings=SETTINGS)
    with pytest.raises(SpendRefused, match="no client"):
        llm.chat(ASK, role="scan")
    assert llm.budget.snapshot() == (0.0, 0.0, 1.0)


def test_a_failing_client_is_neither_billed_nor_stored() -> None:
    ledger = Ledger(":memory:")
    llm = LLM(ledger, client=Scripted(fail=True), budget=Budget(1.0), settings=SETTINGS)
    with pytest.raises(ClientError, match="the wire broke"):
        llm.chat(ASK, role="scan")
    assert len(ledger) == 0 and llm.budget.snapshot() == (0.0, 0.0, 1.0)


def test_a_client_returning_something_else_is_an_error() -> None:
    llm = LLM(Ledger(":memory:"), client=lambda model, messages, **p: "4", settings=SETTINGS)
    with pytest.raises(ClientError, match="not a Reply"):
        llm.chat(ASK)


def test_bad_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="'record'"):
        LLM(Ledger(":memory:"), mode="record")  # type: ignore[arg-type]


def _twin_asks(client: Any, n: int = 4) -> tuple[list[Reply], LLM]:
    import threading

    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(10.0))
    messages = [{"role": "user", "content": "the same question"}]
    replies: list[Reply] = []
    lock = threading.Lock()

    def ask() -> None:
        reply = llm.chat(messages)
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=ask) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return replies, llm


def test_the_same_question_asked_at_once_is_paid_once() -> None:
    import threading
    import time

    calls: list[int] = []
    lock = threading.Lock()

    def slow_client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        with lock:
            calls.append(1)
        time.sleep(0.2)
        return Reply(text="42")

    replies, llm = _twin_asks(slow_client)
    assert len(calls) == 1
    assert [r.text for r in replies] == ["42"] * 4
    assert sum(not r.cached for r in replies) == 1
    assert llm.budget.spent == pytest.approx(llm.settings.default_price)


def test_when_the_first_ask_fails_a_twin_pays_for_itself() -> None:
    import threading
    import time

    calls: list[int] = []
    lock = threading.Lock()

    def flaky_client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        with lock:
            calls.append(1)
            first = len(calls) == 1
        time.sleep(0.1)
        if first:
            raise ClientError("the first try fails")
        return Reply(text="ok")

    llm = LLM(Ledger(":memory:"), client=flaky_client, budget=Budget(10.0))
    messages = [{"role": "user", "content": "q"}]
    results: list[str] = []

    def ask() -> None:
        try:
            results.append(llm.chat(messages).text)
        except ClientError:
            results.append("failed")

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["failed", "ok"]
    assert len(calls) == 2
    assert llm.budget.spent == pytest.approx(llm.settings.default_price)  # the failure is free
