"""Review of the rehearsal hosts (planlang.rehearsal_hosts): what an embedder hands a price stays
in its process, a host that stops answering does not hold a price, and any way a host fails
leaves its seed to be rehearsed here. Deadlines here are hang guards only."""

from __future__ import annotations

import collections
import importlib
import os
import signal
import threading
from typing import Any

import pytest
from test_price_parallel import PLAN, SEEDS, SETTINGS

from planlang import HostObject, Limits, rehearsal_hosts
from planlang.price import price

price_module = importlib.import_module("planlang.price")  # planlang.price is also the function
HANG_GUARD = 240.0  # seconds: only a hang takes this long


class Tally:
    """An embedder's object, of a class the host process cannot import (this test module)."""

    def __init__(self) -> None:
        self.calls = 0

    def bump(self) -> int:
        self.calls += 1
        return self.calls


@pytest.fixture
def host() -> rehearsal_hosts.RehearsalHost:
    """The process's rehearsal host, warm (so a price hands it seeds at once)."""
    (found,) = rehearsal_hosts.start_hosts()
    assert found.ready.wait(HANG_GUARD) and not found.gone
    return found


def _facts(report: Any) -> list[Any]:
    return [(r.seed, r.result, r.accounting, r.problems, r.wall_seconds, r.workers)
            for r in report.rehearsals]  # fmt: skip


def test_the_embedders_host_objects_in_inputs_stay_here(
    host: rehearsal_hosts.RehearsalHost,
) -> None:
    # A HostObject's methods are the embedder's host words: they run on the live object here,
    # never on a copy in another process (a stdlib Counter pickles and unpickles there).
    counter: collections.Counter[str] = collections.Counter()
    inputs = {"c": HostObject(counter, methods=["update"])}
    before = host.served
    price("inputs['c'].update('a')\nresult = 1", seeds=6, settings=SETTINGS, inputs=inputs,
          isolation="process")  # fmt: skip
    assert counter["a"] == 6  # every seed's call reached the embedder's own object
    assert host.served == before and not host.gone


def test_an_object_the_host_cannot_import_neither_kills_it_nor_goes_there(
    host: rehearsal_hosts.RehearsalHost,
) -> None:
    tally = Tally()
    report = price("result = inputs['t'].bump()", seeds=4, settings=SETTINGS,
                   inputs={"t": HostObject(tally, methods=["bump"])},
                   isolation="process")  # fmt: skip
    assert tally.calls == 4 and not report.problems
    assert not host.gone  # a host process that died would be started again by the next price


def test_a_host_that_stops_answering_does_not_hold_the_price(
    host: rehearsal_hosts.RehearsalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rehearsal_hosts, "ANSWER_GRACE", 1.0, raising=False)
    assert host.process is not None
    pid = host.process.pid
    os.kill(pid, signal.SIGSTOP)  # alive, its pipes open, and silent
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(
        price(PLAN, seeds=SEEDS, settings=SETTINGS, limits=Limits(seconds=2),
              isolation="process")), daemon=True)  # fmt: skip
    try:
        worker.start()
        worker.join(HANG_GUARD)
        assert done, "the price waited on a silent rehearsal host"
        assert host.gone
    finally:
        if host.process.poll() is None:
            os.kill(pid, signal.SIGKILL)
            host.process.wait()
    monkeypatch.setattr(price_module, "REHEARSAL_HOSTS", 0)
    here = price(PLAN, seeds=SEEDS, settings=SETTINGS, limits=Limits(seconds=2),
                 isolation="process")  # fmt: skip
    assert _facts(done[0]) == _facts(here)


def test_any_failure_of_a_host_leaves_its_seed_here(
    host: rehearsal_hosts.RehearsalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(self: rehearsal_hosts.RehearsalHost, job: dict[str, Any]) -> Any:
        raise TypeError("an answer it could not read")

    monkeypatch.setattr(rehearsal_hosts.RehearsalHost, "rehearse", fails)
    hosted = price(PLAN, seeds=SEEDS, settings=SETTINGS, isolation="process")
    monkeypatch.setattr(price_module, "REHEARSAL_HOSTS", 0)
    here = price(PLAN, seeds=SEEDS, settings=SETTINGS, isolation="process")
    assert _facts(hosted) == _facts(here)


def test_the_endpoints_address_stays_out_of_the_hosts_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a base_url may carry credentials (https://user:password@...): it is cleared from the
    # settings a host gets, and so from its environment too
    for name in ("LLM_BASE_URL", "PLANLANG_BASE_URL"):
        monkeypatch.setenv(name, "https://user:pw-not-a-secret@127.0.0.1:9/v1")
    names = set(rehearsal_hosts.clean_environment())
    assert not names & {"LLM_BASE_URL", "PLANLANG_BASE_URL"}
