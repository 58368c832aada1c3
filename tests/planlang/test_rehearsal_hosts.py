"""Rehearsals in a host process of their own (planlang.rehearsal_hosts): the same report as
rehearsals here, never an embedder's host words there, and never the endpoint's key."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pytest
from test_price_parallel import PLAN, SEEDS, SETTINGS

from planlang import rehearsal_hosts
from planlang.price import price
from runtime import Settings

price_module = importlib.import_module("planlang.price")  # planlang.price is also the function
FAKE_KEY = "sk-test-rehearsal-host-not-a-key"


@pytest.fixture
def host() -> rehearsal_hosts.RehearsalHost:
    """The process's rehearsal host, warm (so a price hands it seeds at once)."""
    (found,) = rehearsal_hosts.start_hosts()
    assert found.ready.wait(120) and not found.gone
    return found


def _facts(report: Any) -> list[Any]:
    return [(r.seed, r.result, r.accounting, r.problems, r.wall_seconds, r.workers)
            for r in report.rehearsals]  # fmt: skip


def test_a_price_with_a_rehearsal_host_is_the_price_made_here(
    host: rehearsal_hosts.RehearsalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = host.served
    hosted = price(PLAN, seeds=SEEDS, settings=SETTINGS, isolation="process")
    assert host.served > before  # it did take seeds
    monkeypatch.setattr(price_module, "REHEARSAL_HOSTS", 0)
    here = price(PLAN, seeds=SEEDS, settings=SETTINGS, isolation="process")
    assert hosted.to_dict() == here.to_dict()
    assert _facts(hosted) == _facts(here)
    assert [r.seed for r in hosted.rehearsals] == list(SEEDS)
    assert hosted.problems and hosted.problems[0].line == 9  # a crash, with the plan's line


def test_a_price_with_the_embedders_host_words_stays_here(
    host: rehearsal_hosts.RehearsalHost,
) -> None:
    before = host.served
    words = {"note": lambda text: len(text)}
    report = price("result = note('abc')", seeds=4, settings=SETTINGS, host=words,
                   isolation="process")  # fmt: skip
    assert [r.result for r in report.rehearsals] == [3] * 4
    assert host.served == before


def test_in_one_process_no_seed_goes_to_a_host(host: rehearsal_hosts.RehearsalHost) -> None:
    before = host.served
    price(PLAN, seeds=4, settings=SETTINGS, isolation="inprocess")
    assert host.served == before


def test_the_host_process_gets_neither_the_key_nor_the_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLM_API_KEY", FAKE_KEY)
    monkeypatch.setenv("PLANLANG_API_KEY", FAKE_KEY)
    env = rehearsal_hosts.clean_environment()
    assert "LLM_API_KEY" not in env and "PLANLANG_API_KEY" not in env
    here = str(Path(rehearsal_hosts.__file__).resolve().parent.parent)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == here  # this very code runs there
    fresh = rehearsal_hosts.RehearsalHost()
    fresh.start()
    try:
        assert not fresh.gone and fresh.process is not None
        environ = Path(f"/proc/{fresh.process.pid}/environ").read_bytes()
        assert FAKE_KEY.encode() not in environ
    finally:
        fresh.stop()
    settings = Settings(api_key=FAKE_KEY, base_url="http://127.0.0.1:9/v1")
    job = price_module._remote_jobs("x = 1", "plan.py", settings, None, None, 2.0)
    assert job is not None
    sent = job(0)["settings"]
    assert sent.api_key is None and sent.base_url is None
    assert sent.model_dump(exclude={"api_key", "base_url"}) == settings.model_dump(
        exclude={"api_key", "base_url"}
    )


def test_a_seed_the_host_cannot_rehearse_is_rehearsed_here(
    host: rehearsal_hosts.RehearsalHost,
) -> None:
    job = price_module._remote_jobs(PLAN, "plan.py", SETTINGS, None, None, 2.0)
    assert job is not None
    broken = {**job(0), "settings": None}  # rehearse() raises there: the caller's to raise
    with pytest.raises(rehearsal_hosts.HostGone):
        host.rehearse(broken)
    served = host.served
    assert host.rehearse(job(1)).seed == 1  # and it goes on serving
    assert host.served == served + 1


def test_a_host_that_dies_leaves_its_seeds_here_and_is_replaced(
    host: rehearsal_hosts.RehearsalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert host.process is not None
    # a rehearsal slower than START_AFTER (any, on a loaded machine) would start a host of
    # its own: that is the next test's; here only start_hosts replaces the dead one
    monkeypatch.setattr(rehearsal_hosts, "START_AFTER", float("inf"))
    host.process.kill()
    host.process.wait()
    report = price(PLAN, seeds=SEEDS, settings=SETTINGS, isolation="process")
    assert host.gone
    monkeypatch.setattr(price_module, "REHEARSAL_HOSTS", 0)
    assert _facts(report) == _facts(price(PLAN, seeds=SEEDS, settings=SETTINGS,
                                          isolation="process"))  # fmt: skip
    assert rehearsal_hosts.running_hosts() == []
    (replaced,) = rehearsal_hosts.start_hosts()
    assert replaced is not host
    assert replaced.ready.wait(120) and not replaced.gone
    assert replaced.process is not None and os.path.exists(f"/proc/{replaced.process.pid}")


def test_a_host_starts_only_after_a_rehearsal_that_took_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rehearsal_hosts, "_hosts", [])
    # however loaded the machine, no rehearsal "took long" until START_AFTER is 0 below
    monkeypatch.setattr(rehearsal_hosts, "START_AFTER", float("inf"))
    price(PLAN, seeds=3, settings=SETTINGS, isolation="process")
    assert rehearsal_hosts.running_hosts() == []
    monkeypatch.setattr(rehearsal_hosts, "START_AFTER", 0.0)
    price(PLAN, seeds=3, settings=SETTINGS, host={"note": len}, isolation="process")
    assert rehearsal_hosts.running_hosts() == []  # a price it could not take starts none
    price(PLAN, seeds=3, settings=SETTINGS, isolation="process")
    (started,) = rehearsal_hosts.running_hosts()
    assert started.ready.wait(120) and not started.gone
    started.stop()
