"""The HTTP client against a live local server, with faults injected on demand."""

from __future__ import annotations

import pytest
from fake_key import KEY

from runtime import LLM, Budget, ClientError, HTTPClient, Ledger, http_client
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
