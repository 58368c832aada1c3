"""A real run under process isolation whose host word blocks past the plan's deadline (issue
12): the plan ends at its limit plus the grace, the blocked call is paid once and kept, and a
rerun replays it."""

import threading
import time

import pytest

from planlang.errors import PlanLimitError
from planlang.gate import Gate, Policy, execute
from planlang.isolation.parent import GRACE
from planlang.sandbox.limits import Limits
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

SETTINGS = Settings(max_agents=20, default_price=0.01, concurrency=4)
PLAN = (
    "a = agent('judge this', schema={'type': 'object', 'properties': {'v': {'type': 'string'}},"
    " 'required': ['v']})\nresult = a['v']\n"
)
HANG_GUARD = 20.0


def test_a_host_call_blocked_past_the_deadline_ends_the_plan_and_is_paid_once(tmp_path):
    gate = Gate(Policy(max_ceiling=1000, max_median=100), store=tmp_path / "gate.db",
                settings=SETTINGS, seeds=1, isolation="process")  # fmt: skip
    decision = gate.submit(PLAN)
    assert decision.approved, decision.reasons
    calls: list[str] = []
    release = threading.Event()

    def slow(model, messages, **params):
        calls.append(model)
        release.wait(HANG_GUARD)  # a model that answers long after the plan's deadline
        return Reply('{"v": "ok"}')

    ledger_path = tmp_path / "answers.db"
    llm = LLM(Ledger(ledger_path), client=slow, budget=Budget(100), settings=SETTINGS)
    run = Run("blocked", llm=llm, settings=SETTINGS)
    started = time.monotonic()
    run.start(lambda r: execute(decision.plan, r, limits=Limits(seconds=1)))
    with pytest.raises(PlanLimitError) as ended:
        run.wait(timeout=HANG_GUARD)
    assert ended.value.kind == "seconds"
    assert time.monotonic() - started < 1 + GRACE + 10  # the blocked call did not hold it
    assert run.status == "failed"
    release.set()  # the model answers now: the answer is kept, paid once
    deadline = time.monotonic() + HANG_GUARD
    while any(r.status == "running" for r in run.threads) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r.status for r in run.threads] == ["done"]
    assert len(calls) == 1
    spent = llm.budget.snapshot()[0]
    assert spent == pytest.approx(0.01)

    again = LLM(Ledger(ledger_path), client=slow, budget=Budget(100), settings=SETTINGS)
    rerun = Run("again", llm=again, settings=SETTINGS)
    rerun.start(lambda r: execute(decision.plan, r, limits=Limits(seconds=5)))
    assert rerun.wait(timeout=HANG_GUARD) == "ok"
    assert len(calls) == 1  # replayed from the ledger: the model was not asked again


def test_a_run_takes_its_code_from_go_or_from_itself_and_never_runs_without():
    """The host sends a run's code with ``go`` (the child loads it while the run is made):
    a run without code uses that one, a run with code its own, and one with neither fails
    as the host sending no code, before anything runs."""
    import base64
    import dataclasses
    import marshal

    import planlang
    from planlang.isolation import child as plan_process
    from planlang.isolation.codec import CodecError
    from planlang.isolation.frames import dumps, loads
    from planlang.isolation.peer import Peer

    checked = planlang.check("result = 6 * 7\n")
    assert checked.code is not None
    sent = base64.b64encode(marshal.dumps(checked.code)).decode("ascii")
    peer = Peer()
    payload = {
        "code": None, "filename": checked.filename, "sha256": checked.sha256,
        "limits": peer.encode(dataclasses.asdict(Limits(seconds=60))), "host": {},
        "deadline": peer.encode(time.monotonic() + 60),
    }  # fmt: skip
    box, again = plan_process._prepare(peer, loads(dumps(payload)), plan_process._code(sent))
    assert box.run(again) == 42
    box, again = plan_process._prepare(peer, loads(dumps({**payload, "code": sent})))
    assert box.run(again) == 42
    with pytest.raises(CodecError, match="no code"):
        plan_process._prepare(peer, loads(dumps(payload)))
