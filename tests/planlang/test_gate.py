"""planlang.Gate: approve under a policy or hold; ApprovedPlan is sealed to its exact source."""

import dataclasses
import json
import sqlite3

import pytest

import planlang
from planlang.gate import ApprovedPlan, Gate, Policy, TamperedPlan
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

PLAN = """
phase("scan")
answers = parallel([lambda i=i: agent(f"question {i}", schema={"type": "integer"})
                    for i in range(4)])
result = sum(a for a in answers if a is not None)
"""
SETTINGS = Settings(max_agents=10, default_price=0.1)


def client(model, messages, **params):
    return Reply(text="3", data=3)


def new_run(title="run"):
    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(10), settings=SETTINGS)
    return Run(title, llm=llm, settings=SETTINGS)


@pytest.fixture
def gate(tmp_path):
    g = Gate(Policy(max_ceiling=10, max_median=1.0), store=tmp_path / "gate.db",
             settings=SETTINGS, seeds=2)  # fmt: skip
    yield g
    g.close()


def test_a_plan_within_the_policy_is_approved_and_runs(gate):
    decision = gate.submit(PLAN)
    assert decision.approved and decision.status == "approved"
    assert decision.reasons == ()
    assert decision.price.total["calls"].median == 4
    assert new_run().run_sync(decision.plan) == 12


def test_a_plan_over_the_policy_is_held_with_reasons_and_stored(tmp_path):
    gate = Gate(Policy(max_median=0.1, max_ceiling=1.0), store=tmp_path / "g.db",
                settings=SETTINGS, seeds=1)  # fmt: skip
    decision = gate.submit(PLAN)
    assert decision.status == "held" and decision.plan is None
    assert any("median credits 0.4" in r for r in decision.reasons)
    assert any("hard ceiling" in r for r in decision.reasons)
    held = gate.held()
    assert [h["id"] for h in held] == [decision.id]
    approved = gate.approve(decision.id, by="reviewer")
    assert gate.held() == []
    assert new_run().run_sync(approved) == 12
    gate.close()


def test_rehearsal_problems_hold_the_plan_unless_the_policy_allows_them(tmp_path):
    crashing = "x = {}\ny = x['missing']\n"
    strict = Gate(Policy(), store=tmp_path / "a.db", settings=SETTINGS, seeds=1)
    assert strict.submit(crashing).status == "held"
    lenient = Gate(Policy(allow_problems=True), store=tmp_path / "b.db", settings=SETTINGS,
                   seeds=1)  # fmt: skip
    assert lenient.submit(crashing).status == "approved"


def test_a_refused_plan_never_reaches_a_decision(gate):
    with pytest.raises(planlang.PlanRefused):
        gate.submit("import os\n")
    assert gate.held() == []


# -- tampering, at every step ------------------------------------------------------------------


def test_one_changed_character_of_an_approved_plan_is_refused(gate):
    plan = gate.submit(PLAN).plan
    changed = dataclasses.replace(plan, source=plan.source.replace("4", "5"))
    with pytest.raises(TamperedPlan, match="source"):
        new_run().run_sync(changed)


def test_changing_the_source_in_place_is_refused(gate):
    plan = gate.submit(PLAN).plan
    object.__setattr__(plan, "source", plan.source + "#")
    with pytest.raises(TamperedPlan):
        new_run().run_sync(plan)


def test_swapping_in_code_checked_from_another_source_is_refused(gate):
    plan = gate.submit(PLAN).plan
    other = planlang.check("result = 'evil'\n")
    with pytest.raises(TamperedPlan):
        new_run().run_sync(dataclasses.replace(plan, check_result=other))
    forged = dataclasses.replace(other, sha256=plan.sha256)
    with pytest.raises(TamperedPlan):
        new_run().run_sync(dataclasses.replace(plan, check_result=forged))


def test_a_hand_made_approval_is_refused(gate):
    checked = planlang.check("result = 1\n")
    fake = ApprovedPlan(1, "result = 1\n", checked.sha256, gate.policy.sha256(), "0" * 64,
                        checked, "0" * 64, gate)  # fmt: skip
    with pytest.raises(TamperedPlan, match="seal"):
        new_run().run_sync(fake)


def test_an_approval_from_another_gate_key_is_refused(gate, tmp_path):
    plan = gate.submit(PLAN).plan
    other = Gate(gate.policy, store=tmp_path / "other.db", settings=SETTINGS, seeds=1)
    with pytest.raises(TamperedPlan, match="seal"):
        new_run().run_sync(dataclasses.replace(plan, gate=other))


def test_a_changed_policy_needs_a_new_decision(gate):
    plan = gate.submit(PLAN).plan
    gate.policy = Policy(max_ceiling=1000)
    with pytest.raises(TamperedPlan, match="policy"):
        new_run().run_sync(plan)
    assert gate.find_approved(PLAN) is None


def test_a_source_changed_in_the_store_is_refused(gate):
    decision = gate.submit(PLAN)
    db = sqlite3.connect(gate.store.location)
    db.execute("UPDATE plans SET source = source || '#' WHERE id = ?", (decision.id,))
    db.commit()
    db.close()
    with pytest.raises(TamperedPlan, match="stored source"):
        gate.approved(decision.id)


def test_the_runtime_does_not_run_source_or_code(gate):
    for not_a_plan in (PLAN, planlang.check(PLAN).code):
        run = new_run()
        with pytest.raises(TypeError, match="must pass planlang's gate"):
            run.run_sync(not_a_plan)
        assert run.status == "created"  # refused before anything started


def test_an_approval_is_found_again_only_for_the_exact_source(gate):
    gate.submit(PLAN)
    assert gate.find_approved(PLAN) is not None
    assert gate.find_approved(PLAN + " ") is None


def test_the_stored_price_is_the_decisions_price(gate):
    decision = gate.submit(PLAN)
    (row,) = gate.store._execute("SELECT price_json FROM plans WHERE id = ?", (decision.id,))
    assert json.loads(row["price_json"])["sha256"] == decision.price.sha256


def test_the_seal_holds_while_other_code_shares_the_plans_constants(gate):
    # marshal's bytes of a code object depend on reference counts (a constant referenced
    # twice is written as a back-reference), so a seal over them broke whenever a worker
    # happened to hold one of the plan's strings at the moment the run verified it.
    plan = gate.submit(PLAN).plan
    held = list(plan.code.co_consts)
    plan.verify()
    assert held  # the extra references were alive during verify


def test_code_compiled_from_another_source_is_named_as_such(gate):
    plan = gate.submit(PLAN).plan
    other = planlang.check("result = 'evil'\n")
    forged = dataclasses.replace(other, sha256=plan.sha256)
    with pytest.raises(TamperedPlan, match="compiled from another source"):
        dataclasses.replace(plan, check_result=forged).verify()
