"""Properties of pricing over generated plans (issue 4).

For any plan the strategies generate: what a scripted real run spends never exceeds the price's
hard ceiling, and rehearsing never touches the ledger or the network.
"""

import json
import random
import socket

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planlang
from planlang.binding import run_host_words
from planlang.price import price
from planlang.standin import schema_of, value_for
from planlang.strategies import DEFAULT_HOST_WORDS, plans
from runtime import LLM, Budget, Ledger, Reply, Run, RunError, Settings

SETTINGS = Settings(max_agents=40, default_price=0.25, concurrency=4)
LIMITS = planlang.Limits(steps=200_000, seconds=20)


def scripted_client(seed):
    def client(model, messages, **params):
        schema = schema_of(messages, params)
        if schema is None:
            return Reply(text="ok")
        rng = random.Random(f"{seed}:{json.dumps(messages, sort_keys=True)}")
        data = value_for(schema, rng)
        return Reply(text=json.dumps(data), data=data)

    return client


def scripted_spend(source, seed):
    llm = LLM(Ledger(":memory:"), client=scripted_client(seed), budget=Budget(None),
              settings=SETTINGS)  # fmt: skip
    run = Run("scripted", llm=llm, settings=SETTINGS)
    words, _ = run_host_words(run)
    box = planlang.Sandbox(host=words, limits=LIMITS, passthrough=(RunError,))
    try:
        run.run_sync(lambda r: box.run(source))
    except (planlang.PlanError, RunError):
        pass  # a plan may fail; what it spent until then still counts
    return llm.budget.spent


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a rehearsal tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(httpx.Client, "send", refuse)


@settings(max_examples=60)
@given(source=plans(DEFAULT_HOST_WORDS), seed=st.integers(0, 1000))
def test_a_scripted_run_never_spends_more_than_the_ceiling(source, seed):
    report = price(source, settings=SETTINGS, seeds=2, limits=LIMITS)
    spent = scripted_spend(source, seed)
    assert spent <= report.ceiling + 1e-9


# The patch holds for every example: nothing in a rehearsal may reset it.
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=plans(DEFAULT_HOST_WORDS))
def test_rehearsal_never_touches_the_ledger_or_the_network(no_network, source):
    report = price(source, settings=SETTINGS, seeds=2, limits=LIMITS)
    for rehearsal in report.rehearsals:
        total = rehearsal.accounting["total"]
        assert total["sent"] == 0
        assert total["cached"] == 0
        assert total["credits"] == 0
        assert total["standin"] == total["calls"]
