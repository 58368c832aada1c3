"""The wall between plan and host keeps the record true (issue 13, items 18-21).

It is an error for a plan's check callback to reach the object the run records; for a result
made of cycles or shared parts to break the gate; for streams inside ``parallel`` to deadlock;
for planlang's own words to turn a plan value into text without pricing it.
"""

import threading

import pytest

from planlang.gate import Gate, Policy
from planlang.price import price
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

SETTINGS = Settings(max_agents=200, default_price=0.01, concurrency=4)
VERDICT = {"type": "object", "properties": {"verdict": {"type": "string"}},
           "required": ["verdict"]}  # fmt: skip


def client(model, messages, **params):
    return Reply('{"verdict": "UNSAFE"}')


def approved(tmp_path, source):
    gate = Gate(Policy(max_ceiling=1000, max_median=100, allow_problems=True),
                store=tmp_path / "gate.db", settings=SETTINGS, seeds=1)  # fmt: skip
    decision = gate.submit(source)
    assert decision.approved, decision.reasons
    return decision.plan


def new_run():
    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(100), settings=SETTINGS)
    return Run("wall", llm=llm, settings=SETTINGS)


def within(seconds, fn):
    """fn() on a thread, with a hang guard: a hang fails the test instead of the suite."""
    box = {}
    thread = threading.Thread(target=lambda: box.update(value=fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "still running: it hangs"
    return box["value"]


TAMPER = f"""
def tamper(answer):
    answer["verdict"] = "SAFE (rewritten by the plan)"
    return None
result = agent("judge this", schema={VERDICT!r}, check=tamper)
"""


def test_a_check_callback_cannot_rewrite_what_the_run_records(tmp_path):
    run = new_run()
    result = run.run_sync(approved(tmp_path, TAMPER))
    assert run.threads_json()[0]["result"] == {"verdict": "UNSAFE"}
    assert result == {"verdict": "UNSAFE"}


CYCLE = "x = []\nx.append(x)\nresult = x\n"
SHARED = "x = [1]\nfor i in range(40):\n    x = [x, x]\nresult = x\n"


@pytest.mark.parametrize("source", [CYCLE, SHARED], ids=["cycle", "shared-40-deep"])
def test_a_cyclic_or_shared_result_passes_the_gate_and_its_report(tmp_path, source):
    plan = within(120, lambda: approved(tmp_path, source))
    assert plan is not None
    report = within(120, lambda: price(source, seeds=1, settings=SETTINGS))
    assert report.to_dict()["ok"] is True


STREAMS = """
streams = [stream([lambda i=i: agent(f"q {i}")]) for i in range(128)]
result = parallel([lambda s=s: next(s) for s in streams])
"""


def test_streams_each_consumed_inside_parallel_do_not_deadlock_the_pool(tmp_path):
    run = new_run().start(approved(tmp_path, STREAMS))
    result = run.wait(timeout=120)
    assert len(result) == 128 and all(tuple(r) == (0, '{"verdict": "UNSAFE"}') for r in result)


SHARED_VALUE = "x = [1]\nfor i in range(40):\n    x = [x, x]\n"
UNPRICED = {
    "log": SHARED_VALUE + "log(x)\n",
    "phase": SHARED_VALUE + "phase(x)\n",
    "check-problem": SHARED_VALUE + "result = agent('q', check=lambda a: x)\n",
}


@pytest.mark.parametrize("source", UNPRICED.values(), ids=UNPRICED.keys())
def test_planlangs_words_price_the_text_of_a_plan_value(source):
    report = within(120, lambda: price(source, seeds=1, settings=SETTINGS))
    assert not report.ok
    [problem] = report.problems
    assert problem.kind in ("limit", "worker")
    assert "size" in problem.message or "not a problem (a str)" in problem.message


def test_log_and_phase_still_take_small_values_as_text(tmp_path):
    run = new_run()
    run.run_sync(approved(tmp_path, "phase(3)\nlog({'a': [1, 2]})\nresult = 1\n"))
    assert run.phase_name == "3"
    assert [e["message"] for e in run.events if e["kind"] == "log"] == ["{'a': [1, 2]}"]
