"""The wall between plan and host keeps the record true (issue 13, items 18-21).

It is an error for a plan's check callback to reach the object the run records; for a result
made of cycles or shared parts to break the gate; for streams inside ``parallel`` to deadlock;
for planlang's own words to turn a plan value into text without pricing it.
"""

import threading

import pytest

from planlang.errors import PlanRuntimeError
from planlang.gate import Gate, Policy
from planlang.price import price
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

SETTINGS = Settings(max_agents=200, default_price=0.01, concurrency=4)
VERDICT = {"type": "object", "properties": {"verdict": {"type": "string"}},
           "required": ["verdict"]}  # fmt: skip


def client(model, messages, **params):
    return Reply('{"verdict": "UNSAFE"}')


def approved(tmp_path, source, settings=SETTINGS):
    gate = Gate(Policy(max_ceiling=1000, max_median=100, allow_problems=True),
                store=tmp_path / "gate.db", settings=settings, seeds=1)  # fmt: skip
    decision = gate.submit(source)
    assert decision.approved, decision.reasons
    return decision.plan


def new_run(settings=SETTINGS):
    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(100), settings=settings)
    return Run("wall", llm=llm, settings=settings)


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


MUTUAL = """
sa = stream([lambda: next(sb)])
sb = stream([lambda: next(sa)])
result = parallel([lambda: next(sa), lambda: next(sb)])
"""
OWN = "s = stream([lambda: agent('a'), lambda: next(s)])\nresult = [r for r in s]\n"
OWN_FROM_PLAN = "s = stream([lambda: next(s)])\nresult = next(s)\n"
CYCLES = {"two-streams": (MUTUAL, {2, 3}), "own-thunk": (OWN, {1}),
          "own-from-plan": (OWN_FROM_PLAN, {1})}  # fmt: skip


@pytest.mark.parametrize("source, lines", CYCLES.values(), ids=CYCLES.keys())
def test_streams_that_wait_on_each_other_end_the_plan_with_a_plan_error_at_its_line(
    tmp_path, source, lines
):
    run = new_run().start(approved(tmp_path, source))
    with pytest.raises(PlanRuntimeError) as caught:
        run.wait(timeout=120)
    assert caught.value.error_type == "FanOutDeadlock" and caught.value.line in lines
    assert "take from" in str(caught.value) and run.status == "failed"
    swallowed = [e["error"] for e in run.events if e["kind"] == "thunk_failed"]
    assert not [error for error in swallowed if "Deadlock" in error or "generator" in error]
    report = within(120, lambda: price(source, seeds=1, settings=SETTINGS))
    [problem] = report.problems
    assert (problem.kind, problem.line in lines) == ("crash", True)
    assert problem.message.startswith("FanOutDeadlock:")


SHARED_STREAM = """
s = stream([lambda i=i: agent(f"q {i}") for i in range(6)])
result = parallel([lambda: list(s), lambda: list(s), lambda: next(s, None)])
"""


def test_one_stream_taken_from_by_parallel_thunks_at_once_gives_each_item_once(tmp_path):
    first, second, third = new_run().run_sync(approved(tmp_path, SHARED_STREAM))
    taken = [*first, *second, *([third] if third is not None else [])]
    assert sorted(index for index, _ in taken) == list(range(6))


PROGRESS = {
    "stream-in-stream": ("s = stream([lambda: list(stream([lambda: agent('x')]))])\n"
                         "result = [len(r) for _, r in s]\n", [1]),
    "parallel-in-stream": ("s = stream([lambda: parallel([lambda: agent('x'), lambda: 2])])\n"
                           "result = [r[1] for _, r in s]\n", [2]),
    "stream-in-parallel": ("result = parallel([lambda: [i for i, _ in stream([lambda: 1])]])\n",
                           [[0]]),
    "used-up": ("s = stream([lambda: 1])\nfirst = next(s)\n"
                "result = [next(s, 'none'), parallel([lambda: next(s)])]\n", ["none", [None]]),
}  # fmt: skip


@pytest.mark.parametrize("source, expected", PROGRESS.values(), ids=PROGRESS.keys())
def test_fan_out_combinations_that_can_make_progress_finish(tmp_path, source, expected):
    run = new_run()
    assert within(120, lambda: run.run_sync(approved(tmp_path, source))) == expected
    failed = [e["error"].split(":")[0] for e in run.events if e["kind"] == "thunk_failed"]
    assert failed == (["StopIteration"] if "next(s, 'none')" in source else [])  # a used-up
    # stream's next() inside a thunk is that thunk's failure, as any exception there


CHECK_TAKES = """
s = stream([lambda: agent("inner")])
result = agent("outer", check=lambda answer: None if next(s) else "empty")
"""


def test_a_check_taking_from_a_stream_with_one_agent_slot_finishes(tmp_path):
    one = Settings(max_agents=200, default_price=0.01, concurrency=1)
    plan = within(120, lambda: approved(tmp_path, CHECK_TAKES, one))
    assert within(120, lambda: new_run(one).run_sync(plan)) == '{"verdict": "UNSAFE"}'


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
