"""The front door tells the truth about each answer (issue 13, items 15-17).

It is an error for a malformed Reply to reach the budget or the ledger; for the finish reason
to be lost; for ``Run.start`` not to return the run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_key import KEY

from runtime import LLM, Budget, ClientError, Ledger, Reply, Role, Run, Settings, http_client
from runtime.testing import FakeOpenAI

S = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
SETTINGS = Settings(roles={"scan": Role(model="small", price=0.2)}, default_price=0.2)
ASK = [{"role": "user", "content": "2 + 2?"}]


def test_the_reference_positional_form_means_what_it_says() -> None:
    reply = Reply('{"answer": "ok"}', "stop", 10, 5, 0.05, "small")
    assert (reply.finish, reply.prompt_tokens, reply.completion_tokens) == ("stop", 10, 5)
    assert (reply.seconds, reply.model, reply.credits) == (0.05, "small", None)
    assert not reply.cut_off and Reply("x", "length").cut_off


MALFORMED = [
    Reply('{"answer": "ok"}', "stop", 10, 5, 0.05, "small", None, "gpt-4o"),  # type: ignore[arg-type]
    Reply('{"answer": "ok"}', prompt_tokens="ten"),  # type: ignore[arg-type]
    Reply('{"answer": "ok"}', credits=-1.0),
    Reply('{"answer": "ok"}', seconds=float("nan")),
    Reply(b"bytes", model="small"),  # type: ignore[arg-type]
    Reply('{"answer": "ok"}', finish=3),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("bad", MALFORMED, ids=lambda r: repr(r)[:60])
def test_a_malformed_reply_is_a_client_error_for_that_call(bad: Reply) -> None:
    ledger = Ledger(":memory:")
    llm = LLM(ledger, client=lambda model, messages, **_: bad, budget=Budget(1.0),
              settings=SETTINGS)  # fmt: skip
    with pytest.raises(ClientError, match="malformed Reply: its field"):
        llm.chat(ASK, role="scan")
    assert llm.budget.snapshot() == (0.0, 0.0, 1.0)  # nothing billed, reservation released
    assert len(ledger) == 0 and llm.stats["failed"] == 1


def test_forty_workers_with_malformed_replies_fail_clearly_and_consistently() -> None:
    bad = Reply('{"answer": "ok"}', "stop", 10, 5, 0.05, "small", None, "gpt-4o")  # type: ignore[arg-type]
    ledger = Ledger(":memory:")
    llm = LLM(ledger, client=lambda model, messages, **_: bad, budget=Budget(10.0),
              settings=SETTINGS)  # fmt: skip
    run = Run("malformed", llm=llm, concurrency=8)
    results = run.run_sync(
        lambda r: r.parallel([lambda i=i: r.agent(f"q {i}", schema=S) for i in range(40)])
    )
    assert results == [None] * 40
    assert run.counts() == {"running": 0, "done": 0, "failed": 40, "refused": 0, "cancelled": 0}
    assert all("malformed Reply: its field credits is 'gpt-4o'" in t["error"]
               for t in run.threads_json())  # fmt: skip
    assert llm.budget.snapshot() == (0.0, 0.0, 10.0) and len(ledger) == 0
    assert sum(e["kind"] == "worker_failed" for e in run.events) == 40


def test_a_defect_below_the_worker_still_ends_its_record() -> None:
    def broken(model: str, messages: list[dict[str, Any]], **_: Any) -> Reply:
        raise KeyboardInterrupt  # not an Exception: passes the client wrapper

    llm = LLM(Ledger(":memory:"), client=broken, budget=Budget(1.0), settings=SETTINGS)
    run = Run("defect", llm=llm).start(lambda r: r.agent("q"))
    with pytest.raises(KeyboardInterrupt):
        run.wait()
    assert [t["status"] for t in run.threads_json()] == ["failed"]
    assert llm.budget.snapshot() == (0.0, 0.0, 1.0)


def test_run_start_returns_the_run() -> None:
    llm = LLM(Ledger(":memory:"), client=lambda m, msgs, **_: Reply("hi"), settings=SETTINGS)
    run = Run("start", llm=llm).start(lambda r: r.agent("q"))
    assert isinstance(run, Run) and run.wait() == "hi"


def test_the_finish_reason_is_kept_in_the_reply_the_record_and_the_ledger(
    server: FakeOpenAI,
) -> None:
    server.fail_next("length")
    with http_client(server.base_url, KEY, timeout=5) as client:
        ledger = Ledger(":memory:")
        llm = LLM(ledger, client=client, budget=Budget(5.0), settings=SETTINGS)
        run = Run("cut off", llm=llm)
        assert isinstance(run.run_sync(lambda r: r.agent("q", schema=S)), dict)
    [record] = run.threads_json()
    assert [reply["finish"] for reply in record["replies"]] == ["length", "stop"]
    repair = record["messages"][3]["content"]
    assert "cut off" in repair and "finish_reason 'length'" in repair
    stored = [ledger.get(key) for key in ledger.keys()]
    assert sorted(r.finish for r in stored if r is not None) == ["length", "stop"]


def test_a_cut_off_answer_that_stays_broken_says_it_was_cut_off(server: FakeOpenAI) -> None:
    server.fail_next("length", "length")
    with http_client(server.base_url, KEY, timeout=5) as client:
        llm = LLM(Ledger(":memory:"), client=client, budget=Budget(5.0), settings=SETTINGS)
        run = Run("cut off twice", llm=llm)
        assert run.run_sync(lambda r: r.agent("q", schema=S)) is None
    [record] = run.threads_json()
    assert "cut off at the length limit" in record["error"]


def test_a_reply_stored_before_finish_was_kept_reads_as_unknown() -> None:
    old = json.dumps({"text": "hi", "prompt_tokens": 1, "model": "m"})
    assert Reply.from_json(old).finish is None
    assert Reply.from_json(Reply("hi", "length").to_json()).finish == "length"
