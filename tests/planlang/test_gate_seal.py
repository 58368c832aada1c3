"""Gate decisions are sealed with a key kept outside the gate's database (issue 13, item 13).

Whoever can write ``gate.db`` must not be able to get a plan issued that was never priced:
each row carries a MAC over sha256, policy, price and decision, keyed by a file only the user
can read, and a row whose seal does not verify is refused.
"""

import os
import sqlite3
import stat

import pytest

from planlang.check import source_sha256
from planlang.errors import PlanRefused
from planlang.gate import Gate, Policy, TamperedPlan
from planlang.gate_seal import KeyFileError, load_key
from runtime import Settings

CHEAP = 'result = agent("one question", schema={"type": "object"})\n'
NEVER_PRICED = "result = [agent(f'q{i}') for i in range(150)]\n"
SETTINGS = Settings(max_agents=200, default_price=0.1)


def _gate(tmp_path, **kwargs):
    kwargs.setdefault("key_file", tmp_path / "keys" / "gate.key")
    return Gate(Policy(max_median=1.0), store=tmp_path / "gate.db", settings=SETTINGS,
                seeds=1, **kwargs)  # fmt: skip


def _forge(db_path, plan_id, source):
    """What anyone who can write gate.db can do: both columns edited, consistently."""
    db = sqlite3.connect(db_path)
    db.execute("UPDATE plans SET source = ?, sha256 = ? WHERE id = ?",
               (source, source_sha256(source), plan_id))  # fmt: skip
    db.commit()
    db.close()


def test_editing_source_and_sha256_in_gate_db_is_refused(tmp_path):
    gate = _gate(tmp_path)
    decision = gate.submit(CHEAP)
    assert decision.approved
    gate.close()
    _forge(tmp_path / "gate.db", decision.id, NEVER_PRICED)
    reopened = _gate(tmp_path)
    with pytest.raises(TamperedPlan, match="seal"):
        reopened.find_approved(NEVER_PRICED)
    with pytest.raises(TamperedPlan, match="seal"):
        reopened.approved(decision.id)
    reopened.close()


def test_a_held_row_flipped_to_approved_in_the_store_is_refused(tmp_path):
    gate = _gate(tmp_path)
    decision = gate.submit(NEVER_PRICED)
    assert decision.status == "held"
    db = sqlite3.connect(tmp_path / "gate.db")
    db.execute("UPDATE plans SET status = 'approved' WHERE id = ?", (decision.id,))
    db.commit()
    db.close()
    with pytest.raises(TamperedPlan, match="seal"):
        gate.find_approved(NEVER_PRICED)
    gate.close()


def test_a_sealed_decision_is_honoured_by_another_gate_with_the_same_key(tmp_path):
    gate = _gate(tmp_path)
    decision = gate.submit(CHEAP)
    gate.close()
    again = _gate(tmp_path)
    plan = again.find_approved(CHEAP)
    assert plan is not None and plan.id == decision.id
    plan.verify()
    again.close()


def test_a_decision_sealed_with_another_key_is_refused(tmp_path):
    gate = _gate(tmp_path)
    gate.submit(CHEAP)
    gate.close()
    stranger = _gate(tmp_path, key_file=tmp_path / "other.key")
    with pytest.raises(TamperedPlan, match="seal"):
        stranger.find_approved(CHEAP)
    stranger.close()


def test_the_key_file_is_made_readable_by_the_user_only(tmp_path):
    path = tmp_path / "keys" / "gate.key"
    key = load_key(path)
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_key(path) == key  # the same key next time


def test_a_key_file_others_can_read_is_refused_with_its_path(tmp_path):
    path = tmp_path / "gate.key"
    load_key(path)
    os.chmod(path, 0o644)
    with pytest.raises(KeyFileError, match=r"gate\.key.*others can read"):
        load_key(path)


def test_the_key_lives_outside_the_database(tmp_path):
    gate = _gate(tmp_path)
    gate.submit(CHEAP)
    gate.close()
    key = (tmp_path / "keys" / "gate.key").read_bytes().strip()
    assert key not in (tmp_path / "gate.db").read_bytes()


def test_a_decision_on_one_machine_is_honoured_on_another_over_postgresql(tmp_path, pg_url):
    # Two gates on one shared server, each with its own copy of the team's key file.
    key = load_key(tmp_path / "team.key")
    copy = tmp_path / "elsewhere" / "team.key"
    copy.parent.mkdir()
    copy.write_text(key.hex())
    copy.chmod(0o600)
    here = Gate(Policy(max_median=1.0), store=pg_url, key_file=tmp_path / "team.key",
                settings=SETTINGS, seeds=1)  # fmt: skip
    decision = here.submit(CHEAP)
    there = Gate(Policy(max_median=1.0), store=pg_url, key_file=copy, settings=SETTINGS, seeds=1)
    plan = there.find_approved(CHEAP)
    assert plan is not None and plan.id == decision.id
    plan.verify()
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE planlang_plans SET source = %s, sha256 = %s WHERE id = %s",
                     (NEVER_PRICED, source_sha256(NEVER_PRICED), decision.id))  # fmt: skip
    with pytest.raises(TamperedPlan, match="seal"):
        there.find_approved(NEVER_PRICED)
    here.close()
    there.close()


def test_planlang_run_refuses_a_forged_approval_and_sends_nothing(tmp_path, monkeypatch, capsys):
    from planlang.cli import main
    from runtime.testing import FakeOpenAI

    (tmp_path / "planlang.toml").write_text(
        "[planlang]\ndefault_price = 0.1\nmax_agents = 200\n[gate]\nmax_median = 1.0\n"
        f'[state]\ngate_key = "{tmp_path / "gate.key"}"\n'
    )
    (tmp_path / "cheap.py").write_text(CHEAP)
    (tmp_path / "dear.py").write_text(NEVER_PRICED)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAI(api_key="sk-forge-test") as server:
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_API_KEY", "sk-forge-test")
        assert main(["run", "cheap.py"]) == 0
        sent = server.requests
        _forge(tmp_path / ".planlang" / "gate.db", 1, NEVER_PRICED)
        capsys.readouterr()
        assert main(["run", "dear.py"]) == 1
        assert server.requests == sent  # nothing of the forged plan ran
    err = capsys.readouterr().err
    assert "tampered with" in err and "seal" in err and "Traceback" not in err


# -- rejections are sealed like every other decision --------------------------------------

UNREJECTIONS = {
    "rejection-deleted": ["DELETE FROM {r} WHERE plan_id = {id}"],
    "rejection-moved": ["UPDATE {r} SET plan_id = {id} + 1000 WHERE plan_id = {id}"],
    "deleted-then-approved": ["DELETE FROM {r} WHERE plan_id = {id}",
                              "UPDATE {t} SET status = 'approved' WHERE id = {id}"],
}  # fmt: skip


def _rejected_plan(tmp_path, store):
    gate = Gate(Policy(max_median=1.0), store=store, key_file=tmp_path / "gate.key",
                settings=SETTINGS, seeds=1)  # fmt: skip
    decision = gate.submit(NEVER_PRICED)
    assert decision.status == "held"
    assert gate.reject(decision.id, by="bob")["status"] == "rejected"
    return gate, decision.id


def _edit(store, statements, plan_id):
    """What anyone who can write the store can do, on either backend."""
    if str(store).startswith("postgresql://"):
        import psycopg

        names = {"t": "planlang_plans", "r": "planlang_rejections"}
        with psycopg.connect(str(store), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.format(id=plan_id, **names))
        return
    db = sqlite3.connect(store)
    for statement in statements:
        db.execute(statement.format(id=plan_id, t="plans", r="rejections"))
    db.commit()
    db.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        return tmp_path / "gate.db"
    return request.getfixturevalue("pg_url")


@pytest.mark.parametrize("forgery", UNREJECTIONS.values(), ids=UNREJECTIONS.keys())
def test_a_forged_unrejection_is_refused(tmp_path, store, forgery):
    gate, plan_id = _rejected_plan(tmp_path, store)
    _edit(store, forgery, plan_id)
    with pytest.raises(TamperedPlan, match="seal"):
        gate.approve(plan_id, by="mallory")
    with pytest.raises(TamperedPlan, match="seal"):
        gate.summary(plan_id)
    try:
        assert gate.find_approved(NEVER_PRICED) is None  # it reads as held: never issued
    except TamperedPlan as refused:  # it reads as approved: its seal says otherwise
        assert "seal" in str(refused)
    gate.close()


def test_a_rejected_row_flipped_to_approved_beside_its_rejection_is_never_issued(tmp_path, store):
    gate, plan_id = _rejected_plan(tmp_path, store)
    _edit(store, ["UPDATE {t} SET status = 'approved' WHERE id = {id}"], plan_id)
    assert gate.find_approved(NEVER_PRICED) is None
    with pytest.raises(PlanRefused):
        gate.approved(plan_id)
    assert gate.summary(plan_id)["status"] == "rejected"
    gate.close()


def test_a_rejection_reads_back_sealed_and_a_new_submission_is_held_anew(tmp_path, store):
    gate, plan_id = _rejected_plan(tmp_path, store)
    summary = gate.summary(plan_id)
    assert (summary["status"], summary["decided_by"]) == ("rejected", "bob")
    again = gate.submit(NEVER_PRICED)
    assert again.status == "held" and again.id != plan_id
    assert [row["id"] for row in gate.held()] == [again.id]
    gate.close()
