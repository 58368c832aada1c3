"""The HTTP client against a live local server, with faults injected on demand."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import pytest
from fake_key import KEY

from runtime import LLM, Budget, ClientError, HTTPClient, Ledger, Run, RunCancelled, http_client
from runtime.testing import FakeOpenAI

ASK = [{"role": "user", "content": "hello"}]


class RecordingSleep:
    """Records the delays the client asks for, then sleeps a tiny bit (keeps tests fast)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def client_for(server: FakeOpenAI, **options: object) -> tuple[HTTPClient, RecordingSleep]:
    sleep = RecordingSleep()
    settings: dict[str, object] = {"timeout": 2.0, "retries": 3, "backoff_base": 0.001}
    settings.update(options)
    client = http_client(server.base_url, KEY, sleep=sleep, **settings)  # type: ignore[arg-type]
    return client, sleep


def test_a_plain_answer_with_usage(server: FakeOpenAI) -> None:
    server.cost = 0.0042
    client, _ = client_for(server)
    with client:
        reply = client("small", ASK, temperature=0)
    assert reply.text == "echo: hello"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.credits) == (11, 7, 0.0042)
    assert reply.model == "small"
    assert server.auth_headers == [f"Bearer {KEY}"]  # the key travels in the header


def test_reads_endpoint_and_key_from_the_environment(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("LLM_API_KEY", KEY)
    with http_client() as client:
        assert client("m", ASK).text == "echo: hello"
    monkeypatch.delenv("LLM_BASE_URL")
    with pytest.raises(ValueError, match="LLM_BASE_URL"):
        http_client()


def test_429_is_retried_after_retry_after(server: FakeOpenAI) -> None:
    server.retry_after = "0.25"
    server.fail_next("429", "429")
    client, sleep = client_for(server)
    with client:
        assert client("m", ASK).text == "echo: hello"
    assert len(sleep.delays) == 2 and all(d >= 0.25 for d in sleep.delays)
    assert server.requests == 3


@pytest.mark.parametrize("fault", ["500", "drop", "slow"])
def test_transient_faults_are_retried(server: FakeOpenAI, fault: str) -> None:
    server.slow_seconds = 0.6
    server.fail_next(fault)
    client, sleep = client_for(server, timeout=0.2)
    with client:
        assert client("m", ASK).text == "echo: hello"
    assert server.requests == 2 and len(sleep.delays) == 1


def test_backoff_grows_exponentially_and_gives_up(server: FakeOpenAI) -> None:
    server.fail_next("500", "500", "500", "500")
    client, sleep = client_for(server, retries=3, backoff_base=1.0)
    with client, pytest.raises(ClientError, match="HTTP 500") as caught:
        client("m", ASK)
    assert caught.value.status == 500
    assert server.requests == 4 and len(sleep.delays) == 3
    assert [d <= 2**i for i, d in enumerate(sleep.delays)] == [True] * 3  # full jitter bounds


@pytest.mark.parametrize("fault", ["garbage", "wrongshape"])
def test_a_body_that_is_not_a_completion_is_an_error(server: FakeOpenAI, fault: str) -> None:
    server.fail_next(fault)
    client, sleep = client_for(server)
    with client, pytest.raises(ClientError, match="not a chat completion"):
        client("m", ASK)
    assert server.requests == 1 and sleep.delays == []


def test_a_wrong_key_fails_cleanly_without_retry(server: FakeOpenAI) -> None:
    with http_client(server.base_url, "sk-wrong", retries=3) as client:
        with pytest.raises(ClientError, match="HTTP 401"):
            client("m", ASK)
    assert server.requests == 1


def test_unreachable_server_is_a_client_error() -> None:
    with FakeOpenAI() as gone:
        url = gone.base_url
    sleep = RecordingSleep()
    with http_client(url, KEY, retries=1, sleep=sleep) as client:
        with pytest.raises(ClientError, match="is unreachable"):
            client("m", ASK)
    assert len(sleep.delays) == 1


@pytest.mark.parametrize("fault", ["garbage", "500", "echo_auth", "wrongshape"])
def test_failed_calls_are_neither_billed_nor_stored(server: FakeOpenAI, fault: str) -> None:
    server.fail_next(*[fault] * 4)
    client, _ = client_for(server, retries=3)
    ledger = Ledger(":memory:")
    llm = LLM(ledger, client=client, budget=Budget(1.0))
    with client:
        with pytest.raises(ClientError):
            llm.chat(ASK, role="scan")
        assert len(ledger) == 0
        assert llm.budget.snapshot() == (0.0, 0.0, 1.0)
        server.faults.clear()
        reply = llm.chat(ASK, role="scan")  # the next call is paid once and stored
    assert reply.text == "echo: hello" and len(ledger) == 1
    assert llm.budget.spent == pytest.approx(0.01)
    ledger.close()


# -- a cancelled run retries nothing ---------------------------------------------------------
# The bound each test waits (30 s) is far below what the old client took (the retries' sleeps:
# an hour of Retry-After, or backoffs of up to an hour) and far above what a cancel takes.


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.005)


def _one_agent(client: HTTPClient) -> tuple[Run, LLM, Ledger]:
    ledger = Ledger(":memory:")
    llm = LLM(ledger, client=client, budget=Budget(1.0))
    return Run("one agent", llm=llm).start(lambda r: r.agent("hello")), llm, ledger


def test_a_cancel_ends_the_backoff_sleep_and_starts_no_retry(server: FakeOpenAI) -> None:
    """Ctrl-C while the server keeps answering 429 with an hour's Retry-After: the run ends at
    once, not after four sleeps of an hour; the failed call is neither billed nor stored."""
    server.retry_after = "3600"
    server.fail_next(*["429"] * 5)
    with http_client(server.base_url, KEY, timeout=5.0, retries=4) as client:
        run, llm, ledger = _one_agent(client)
        _wait_until(lambda: server.requests >= 1, "the first attempt")
        run.cancel("interrupted (Ctrl-C)")
        with pytest.raises(RunCancelled):
            run.wait(timeout=30)  # the old client: TimeoutError (it sleeps an hour)
    assert server.requests == 1
    assert run.status == "cancelled" and run.threads[0].status == "cancelled"
    assert "not tried again" in (run.threads[0].error or "")
    assert llm.budget.snapshot() == (0.0, 0.0, 1.0) and len(ledger) == 0
    ledger.close()


def test_a_hung_attempt_at_a_cancel_is_not_tried_again(server: FakeOpenAI) -> None:
    """A call that hangs (the server never answers) when the run is cancelled ends with its
    attempt's timeout, not with the next attempts' (each preceded by a backoff of up to an
    hour)."""
    server.hold_after = 0  # every request is parked, unanswered
    with http_client(server.base_url, KEY, timeout=1.0, retries=4, backoff_base=3600.0,
                     backoff_max=3600.0) as client:  # fmt: skip
        run, llm, ledger = _one_agent(client)
        _wait_until(lambda: server.held >= 1, "the first attempt to hang")
        run.cancel("interrupted (Ctrl-C)")
        with pytest.raises(RunCancelled):
            run.wait(timeout=30)
    assert server.requests == 1
    assert llm.budget.snapshot() == (0.0, 0.0, 1.0) and len(ledger) == 0
    ledger.close()


def test_the_attempt_on_the_wire_at_a_cancel_is_stored_and_billed_once(
    server: FakeOpenAI,
) -> None:
    """A cancel does not abandon the attempt on the wire (the provider bills it): its answer
    is stored and billed, once."""
    server.slow_seconds = 1.0
    server.fail_next("slow")
    with http_client(server.base_url, KEY, timeout=10.0, retries=4) as client:
        run, llm, ledger = _one_agent(client)
        _wait_until(lambda: server.requests >= 1, "the attempt")
        run.cancel("interrupted (Ctrl-C)")
        # RunCancelled, or (a test thread starved past the answer) the run's result: either
        # way the answer is kept, paid once
        with contextlib.suppress(RunCancelled):
            run.wait(timeout=30)
    assert server.requests == 1 and len(ledger) == 1
    assert llm.budget.spent == pytest.approx(0.01)
    ledger.close()
