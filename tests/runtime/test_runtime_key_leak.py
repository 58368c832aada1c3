"""The API key travels in the Authorization header and nowhere else."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from fake_key import KEY

from runtime import LLM, Budget, ClientError, Ledger, Run, Settings, http_client
from runtime.testing import FakeOpenAI

S = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def test_the_key_never_leaks(
    server: FakeOpenAI,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("LLM_API_KEY", KEY)
    settings = Settings(retries=1, backoff_base=0.001, timeout=0.3)
    server.slow_seconds = 0.5
    # faults whose error texts must not carry the key; echo_auth repeats the header back
    server.fail_next("echo_auth", "garbage", "500", "500", "drop", "429", "slow", "slow")
    texts: list[str] = []
    db = tmp_path / "answers.db"
    events = tmp_path / "events.jsonl"
    with http_client(server.base_url, timeout=settings.timeout, retries=1,
                     backoff_base=0.001) as client:  # fmt: skip
        for _ in range(5):  # each fault surfaces as an exception; keep its text
            try:
                client("m", [{"role": "user", "content": "probe"}])
            except ClientError as exc:
                texts += [str(exc), repr(exc), repr(exc.__cause__), repr(exc.__context__)]
        ledger = Ledger(db)
        llm = LLM(ledger, client=client, budget=Budget(10.0), settings=settings)
        run = Run("leak check", llm=llm, concurrency=4, events_path=events)
        server.fail_next("echo_auth", "garbage")  # two workers fail, with the key in a body
        result = run.run_sync(
            lambda r: r.parallel([lambda i=i: r.agent(f"q{i}", schema=S) for i in range(8)])
        )
        assert result.count(None) == 2
        texts += [repr(client), str(client), repr(llm), repr(run), run.statusline()]
        texts += [repr(settings), str(settings), repr(ledger), json.dumps(run.threads_json())]
        texts += [json.dumps(run.events, default=str), json.dumps(run.accounting.to_dict())]
        texts += [json.dumps(list(ledger.rows()))]
        ledger.close()
    assert any("bad request from Bearer <redacted>" in text for text in texts)  # the echo was seen
    assert server.auth_headers.count(f"Bearer {KEY}") == len(server.auth_headers) > 10
    captured = capsys.readouterr()
    texts += [caplog.text, captured.out, captured.err, events.read_text()]
    for path in tmp_path.iterdir():  # the ledger file with its WAL, the events file
        texts.append(path.read_bytes().decode("latin-1"))
    leaks = [text[:200] for text in texts if KEY in text or KEY[:12] in text]
    assert leaks == []
