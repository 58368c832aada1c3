"""Red team 24b: the gate's promise that what runs is what was priced and approved, attacked
through ``planlang run``, ``Gate.approved`` (the MCP server's ``run_plan``) and the tools'
policy. Each case fails on the commit it was written against (be13507) unless marked
otherwise. Nothing here measures time: the assertions are on decisions, calls and credits.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

from planlang.cli import main
from planlang.errors import OtherTerms, PlanRefused, TamperedPlan
from planlang.gate import Gate, Policy
from runtime import LLM, Budget, Ledger, Reply, Run, Settings
from runtime.testing import FakeOpenAI

MCP_SERVER = Path(__file__).resolve().parents[1] / "mcptools" / "mcp_tool_server.py"


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANLANG_GATE_KEY", str(tmp_path / "gate.key"))
    monkeypatch.setenv("PLANLANG_ISOLATION", "inprocess")
    fake = FakeOpenAI()
    monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
    yield tmp_path, fake
    fake.close()


def _config(price: float, inputs: str = "") -> str:
    return f"""
[planlang]
max_agents = 4
retries = 0
[planlang.roles.scan]
model = "small"
price = {price}
[plan]
{inputs}
[gate]
max_ceiling = 1
max_median = 0.5
"""


# -- 1. an approval replayed after planlang.toml changed what the plan costs -------------------

PLAN = 'result = parallel([lambda i=i: agent(f"q {i}", model="scan") for i in range(2)])\n'


def test_planlang_run_prices_again_after_a_role_price_changed(project) -> None:
    """``planlang submit`` approved the plan at 0.01 a call (median 0.02, ceiling 0.16, under
    ``max_ceiling = 1``). Then ``[planlang.roles.scan] price = 50``: the same plan now costs
    100 credits median, 800 at the ceiling, and ``planlang price`` says so. ``planlang run``
    looked its approval up by the source's sha256 and the policy alone, found the old one and
    ran it under the new prices: 2 calls sent, 100 credits spent on an approval for 0.16. The
    approval is for a price, and the price was made under those settings."""
    folder, fake = project
    (folder / "plan.py").write_text(PLAN)
    (folder / "planlang.toml").write_text(_config(0.01))
    code, out, _ = _cli("submit", "plan.py", "--json")
    assert code == 0 and json.loads(out)["status"] == "approved"
    (folder / "planlang.toml").write_text(_config(50.0))
    code, out, err = _cli("run", "plan.py", "--json")
    assert fake.requests == 0, "the plan ran under prices it was never approved at"
    assert code == 1 and json.loads(out)["status"] == "held"
    assert "hard ceiling 800 is over 1" in err


def test_planlang_run_prices_again_after_the_inputs_changed(project) -> None:
    """The plan fans out over ``inputs["items"]`` (``[plan] inputs = "items.json"``): priced
    and approved on two items at 0.2 a call (0.4 credits median, ``max_median = 0.5``). The
    file then lists four: 0.8 credits median, over the policy. ``planlang run`` ran the old
    approval on the new inputs: four calls, 0.8 credits."""
    folder, fake = project
    (folder / "plan.py").write_text(
        'result = parallel([lambda x=x: agent(x, model="scan") for x in inputs["items"]])\n'
    )
    (folder / "items.json").write_text(json.dumps({"items": ["a", "b"]}))
    (folder / "planlang.toml").write_text(_config(0.2, 'inputs = "items.json"').replace(
        "max_ceiling = 1", "max_ceiling = 4"))  # fmt: skip
    code, out, _ = _cli("submit", "plan.py", "--json")
    assert code == 0 and json.loads(out)["status"] == "approved"
    (folder / "items.json").write_text(json.dumps({"items": ["a", "b", "c", "d"]}))
    code, out, err = _cli("run", "plan.py", "--json")
    assert fake.requests == 0
    assert code == 1 and "median credits 0.8 are over 0.5" in err


def test_a_held_plan_is_held_anew_when_the_settings_changed(project) -> None:
    """A plan held under one price, then priced again under another: the person sees the
    price it would run at, not the first one, and approving it lets it run."""
    folder, fake = project
    (folder / "plan.py").write_text(PLAN)
    (folder / "planlang.toml").write_text(_config(5.0))
    code, out, _ = _cli("submit", "plan.py", "--json")
    first = json.loads(out)
    assert code == 1 and first["status"] == "held"
    (folder / "planlang.toml").write_text(_config(50.0))
    code, out, _ = _cli("approve", str(first["id"]), "--json")
    assert code == 1 and "submit it again" in json.loads(out)["error"]
    code, out, _ = _cli("submit", "plan.py", "--json")
    second = json.loads(out)
    assert second["id"] != first["id"] and second["price"]["credits"]["median"] == 100
    code, out, _ = _cli("approve", str(second["id"]), "--json")
    assert code == 0
    code, out, _ = _cli("run", "plan.py", "--json")
    assert code == 0 and json.loads(out)["spent"] == 100 and fake.requests == 2


# -- 2. an approval issued under a policy it was never decided under ---------------------------

WIDE = 'result = parallel([lambda i=i: agent(f"q {i}") for i in range(50)])\n'
SETTINGS = Settings(max_agents=100, default_price=1.0)


def _run_with(calls: list[int]) -> Run:
    def client(model, messages, **params):
        calls.append(1)
        return Reply(text="x")

    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(None), settings=SETTINGS)
    return Run("run", llm=llm, settings=SETTINGS)


def test_an_approval_under_a_looser_policy_is_not_issued_under_a_stricter_one(tmp_path) -> None:
    """Two gates on one store and key (two projects, or a team's shared store): the first has
    no limits and approves a plan of 50 credits; the second says ``max_ceiling = 1``.
    ``Gate.approved(id)`` (what the MCP server's ``run_plan(plan_id)`` calls) checked the row's
    status and seal, then sealed an ``ApprovedPlan`` under its *own* policy, so ``verify``
    passed and the stricter gate ran the plan: 50 calls, 50 credits. ``approve`` refuses such a
    row ("priced under another policy") and ``find_approved`` never finds it; ``approved``
    now refuses it too."""
    store, key = tmp_path / "gate.db", tmp_path / "gate.key"
    loose = Gate(Policy(), store=store, key_file=key, settings=SETTINGS, seeds=1,
                 isolation="inprocess")  # fmt: skip
    decision = loose.submit(WIDE)
    assert decision.approved and decision.price.ceiling == 400
    strict = Gate(Policy(max_ceiling=1), store=store, key_file=key, settings=SETTINGS, seeds=1,
                  isolation="inprocess")  # fmt: skip
    calls: list[int] = []
    with pytest.raises(PlanRefused) as refused:
        _run_with(calls).run_sync(strict.approved(decision.id))
    assert "another policy" in str(refused.value.__cause__)
    assert calls == []
    assert strict.find_approved(WIDE) is None
    assert loose.approved(decision.id).id == decision.id  # its own gate still issues it


def test_an_issued_plan_stops_running_when_the_gates_settings_change(tmp_path) -> None:
    """The embedding API's form of section 1: the gate's settings changed after it issued a
    plan (a new price list loaded); the plan verifies against what it was priced under."""
    gate = Gate(Policy(max_ceiling=1000), settings=SETTINGS, seeds=1, isolation="inprocess")
    plan = gate.submit(WIDE).plan
    assert plan is not None
    gate.settings = SETTINGS.model_copy(update={"default_price": 100.0})
    calls: list[int] = []
    with pytest.raises(TamperedPlan, match="other settings"):
        _run_with(calls).run_sync(plan)
    assert calls == []


def test_inputs_that_are_not_json_still_find_their_approval(tmp_path) -> None:
    """The terms an approval holds for digest the inputs; inputs with sets, bytes, tuples,
    keys of mixed kinds or an embedder's object digest the same way every time."""

    class Thing:
        pass

    inputs = {"s": {3, 1, 2}, "b": b"\x00\xff", "t": (1, 2), 1: "one", "x": Thing()}
    store, key = tmp_path / "gate.db", tmp_path / "gate.key"
    gate = Gate(Policy(), store=store, key_file=key, inputs=inputs, seeds=1,
                isolation="inprocess")  # fmt: skip
    gate.submit("result = 1\n")
    again = Gate(Policy(), store=store, key_file=key, inputs=dict(inputs), seeds=1,
                 isolation="inprocess")  # fmt: skip
    assert again.find_approved("result = 1\n") is not None


# -- 3. the tools' policy rests on rehearsals, and a plan can tell a rehearsal's tool answer ----


@pytest.mark.slow
def test_a_destructive_call_behind_a_real_answer_holds_the_plan(tmp_path) -> None:
    """``t.lookup(term="x")`` answers ``"x: a word"``; the stand-in answers a short text of its
    own. The plan calls ``t.drop`` (destructive) and three ``t.append_line`` (writes) only when
    the answer is the real one, so no rehearsal calls them, and ``Policy(hold_destructive=True,
    max_tool_writes=0)`` approved it; the run dropped and wrote. The plan names ``t.drop`` in
    its source (a plan can reach a method by its literal name only: no ``getattr``), so a gate
    could hold it for what it can reach, not for what the samples happened to do."""
    from planlang.mcp import McpTools, ServerConfig

    tools = McpTools([ServerConfig(name="t", command=(sys.executable, str(MCP_SERVER)))])
    out = tmp_path / "out.txt"
    source = (
        'seen = t.lookup(term="x")\n'
        "result = [seen]\n"
        'if seen == "x: a word":\n'
        '    result.append(t.drop(name="everything"))\n'
        "    for i in range(3):\n"
        '        result.append(t.append_line(path=inputs["file"], line="w"))\n'
    )
    try:
        gate = Gate(Policy(hold_destructive=True, max_tool_writes=0), host=tools,
                    inputs={"file": str(out)}, seeds=3, isolation="inprocess")  # fmt: skip
        decision = gate.submit(source)
        if decision.approved:
            assert decision.plan is not None
            with Ledger(tmp_path / "answers.db") as ledger:
                done = Run("run", llm=LLM(ledger)).run_sync(decision.plan)
            assert "dropped everything" not in done, "a destructive call ran unheld"
        assert decision.status == "held"
    finally:
        tools.close()


@pytest.mark.slow
@pytest.mark.parametrize(("source", "policy", "held_for"), [
    # a read-only tool named, a destructive one only in a text that is not its word: let go
    ('result = [t.lookup(term="drop it")]\n', Policy(hold_destructive=True, max_tool_writes=0),
     None),
    # a write named, never reached in a rehearsal: its calls are not known, so a bound holds
    ('seen = t.lookup(term="x")\nresult = [seen]\nif seen == "x: a word":\n'
     '    result.append(t.set_value(path="p", value="v"))\n', Policy(max_tool_writes=5),
     "no rehearsal called"),
    # the same write, with no bound on writes: nothing to hold for
    ('seen = t.lookup(term="x")\nresult = [seen]\nif seen == "x: a word":\n'
     '    result.append(t.set_value(path="p", value="v"))\n', Policy(hold_destructive=True),
     None),
    # a destructive tool named inside a plan function that no rehearsal runs
    ('def never():\n    return t.drop(name="all")\nresult = 1\n',
     Policy(hold_destructive=True), "destructive tools: t.drop"),
], ids=["read-only", "unrehearsed-write", "write-unbounded",
        "destructive-in-function"])  # fmt: skip
def test_the_tools_policy_reads_what_the_code_can_reach(source, policy, held_for) -> None:
    """The gate holds for tools the plan's code names, not only for those a rehearsal called;
    a tool the code never names (a text that is not its call word) holds nothing."""
    from planlang.mcp import McpTools, ServerConfig

    tools = McpTools([ServerConfig(name="t", command=(sys.executable, str(MCP_SERVER)))])
    try:
        decision = Gate(policy, host=tools, seeds=2, isolation="inprocess").submit(source)
    finally:
        tools.close()
    if held_for is None:
        assert decision.status == "approved", decision.reasons
    else:
        assert decision.status == "held" and any(held_for in r for r in decision.reasons), (
            decision.reasons
        )


# -- 4. the run's own settings: the ceiling is a number the run does not hold -------------------


def test_a_run_whose_settings_price_calls_higher_does_not_spend_past_the_ceiling() -> None:
    """The gate priced under ``default_price=0.01`` (ceiling 4 x 4 x 0.01 = 0.16, approved under
    ``max_ceiling=1``); the embedder's run is made with ``Settings()`` of another price list
    (here 5 a call), as ``Run(llm=LLM(...))`` without ``settings=`` does with the defaults. The
    run spends 10 credits on two calls: nothing compares the run's terms with the priced ones,
    and the run's budget is the embedder's, not the ceiling."""
    priced = Settings(max_agents=4, default_price=0.01)
    gate = Gate(Policy(max_ceiling=1), settings=priced, seeds=1, isolation="inprocess")
    plan = gate.submit(PLAN.replace(', model="scan"', "")).plan
    assert plan is not None and gate.approved(plan.id).id == plan.id
    dear = Settings(max_agents=4, default_price=5.0)
    llm = LLM(Ledger(":memory:"), client=lambda m, msgs, **p: Reply(text="x"),
              budget=Budget(None), settings=dear)  # fmt: skip
    run = Run("run", llm=llm, settings=dear)
    with pytest.raises(OtherTerms, match="default_price is 0.01 in the price, 5.0"):
        run.run_sync(plan)
    assert llm.budget.spent <= 0.16


@pytest.mark.parametrize(("run_settings", "llm_settings", "max_agents", "refused"), [
    (Settings(max_agents=4, default_price=0.01), Settings(max_agents=4, default_price=0.01), None,
     None),
    (Settings(max_agents=4, default_price=0.01), Settings(max_agents=4, default_price=0.01), 2,
     None),
    (Settings(max_agents=4, default_price=0.01), Settings(max_agents=4, default_price=0.01), 9,
     "max_agents is 4 in the price, 9 in the run"),
    (Settings(max_agents=4, default_price=0.01), Settings(max_agents=4, default_price=0.5), None,
     "in its LLM's settings"),
    (Settings(max_agents=8, default_price=0.01), Settings(max_agents=4, default_price=0.01), None,
     "max_agents is 4 in the price, 8 in the run's settings"),
    (Settings(max_agents=4, default_price=0.01, max_repair_turns=5),
     Settings(max_agents=4, default_price=0.01), None, "max_repair_turns"),
    (Settings(max_agents=4, default_price=0.01, concurrency=2),
     Settings(max_agents=4, default_price=0.01, concurrency=2), None, None),
], ids=["same", "fewer-agents", "more-agents", "llm-price", "settings-agents", "repair-turns",
        "concurrency-only"])  # fmt: skip
def test_an_approved_plan_runs_only_on_the_terms_it_was_priced_under(
    run_settings, llm_settings, max_agents, refused
) -> None:
    """What bounds spending (prices, roles, max_agents, turns, tool calls) must be the priced;
    fewer agents, or another concurrency (the wall time only), run as approved."""
    priced = Settings(max_agents=4, default_price=0.01)
    gate = Gate(Policy(max_ceiling=1), settings=priced, seeds=1, isolation="inprocess")
    plan = gate.submit('result = agent("q")\n').plan
    assert plan is not None
    llm = LLM(Ledger(":memory:"), client=lambda m, msgs, **p: Reply(text="x"),
              budget=Budget(None), settings=llm_settings)  # fmt: skip
    run = Run("run", llm=llm, settings=run_settings, max_agents=max_agents)
    if refused is None:
        assert run.run_sync(plan) == "x"
        assert llm.budget.spent == pytest.approx(0.01)
    else:
        with pytest.raises(OtherTerms, match=refused):
            run.run_sync(plan)
        assert llm.budget.spent == 0
