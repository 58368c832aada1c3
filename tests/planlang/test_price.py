"""planlang.price: rehearsals against the stand-in, per phase and role, ceiling and problems."""

import json
import random
import time

import pytest
from schemas import SCHEMAS

import planlang
from planlang.price import price
from planlang.standin import StandIn, schema_of, value_for
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

FINDINGS = {
    "type": "object",
    "properties": {
        "bugs": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["bugs", "confidence"],
}

FIXED_FAN_OUT = f"""
S = {json.dumps(FINDINGS)}
phase("scan")
scans = parallel([lambda i=i: agent(f"scan shard {{i}}", schema=S, model="scan") for i in range(7)])
phase("judge")
verdicts = parallel([lambda i=i: agent(f"judge {{i}}", schema={{"type": "boolean"}}, model="judge")
                     for i in range(4)])
summary = agent("summarise", model="judge")
result = {{"scans": len(scans), "verdicts": verdicts}}
"""

SETTINGS = Settings(
    roles={"scan": {"model": "small", "price": 0.02}, "judge": {"model": "big", "price": 0.25}},
    max_agents=50,
)


def scripted_client(model, messages, **params):
    """A real-run stand-in: valid answers, never the same generator as the rehearsal's."""
    schema = schema_of(messages, params)
    if schema is None:
        return Reply(text="fine")
    data = value_for(schema, random.Random(7))
    return Reply(text=json.dumps(data), data=data)


def test_price_reports_calls_and_credits_per_phase_and_role():
    report = price(FIXED_FAN_OUT, settings=SETTINGS, seeds=3)
    assert report.ok, report.problems
    assert report.seeds == (0, 1, 2)
    assert report.phases["scan"]["calls"].median == 7
    assert report.phases["judge"]["calls"].median == 5
    assert report.roles["scan"]["credits"].max == pytest.approx(0.14)
    assert report.roles["judge"]["credits"].max == pytest.approx(1.25)
    assert report.total["credits"].median == pytest.approx(1.39)


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_price_keeps_none_of_its_rehearsals_runs(isolation):
    """Each rehearsal's run, with its workers, is let go once the report is made (the tool
    door each rehearsal opens held its run for good: a long-lived process grew with every
    price, and each full collection of the garbage collector walked them all)."""
    import gc

    from runtime.records import WorkerRecord

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, Run | WorkerRecord))

    def settled() -> int:
        """What stays alive: a finished isolated run is closed off its path, on the discard
        thread, which holds it until then (a deadline only as a hang guard)."""
        deadline = time.monotonic() + 30
        while (count := alive()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return count

    price(FIXED_FAN_OUT, settings=SETTINGS, seeds=1, isolation=isolation)  # warm
    assert settled() == 0
    report = price(FIXED_FAN_OUT, settings=SETTINGS, seeds=3, isolation=isolation)
    assert report.ok, report.problems
    assert settled() == 0


def test_predicted_credits_equal_a_scripted_real_run_exactly():
    report = price(FIXED_FAN_OUT, settings=SETTINGS)
    llm = LLM(Ledger(":memory:"), client=scripted_client, budget=Budget(100), settings=SETTINGS)
    run = Run("real", llm=llm, settings=SETTINGS)
    box = planlang.Sandbox(host=_words(run), passthrough=())
    run.run_sync(lambda r: box.run(FIXED_FAN_OUT))
    spent = run.accounting.to_dict()
    assert spent["total"]["credits"] == report.total["credits"].min == report.total["credits"].max
    for phase, tally in spent["phases"].items():
        assert tally["credits"] == report.phases[phase]["credits"].median
    assert llm.budget.spent == pytest.approx(spent["total"]["credits"])


def _words(run):
    from planlang.binding import run_host_words

    words, _ = run_host_words(run)
    return words


def test_the_ceiling_is_max_agents_times_turns_times_the_dearest_price():
    report = price(FIXED_FAN_OUT, settings=SETTINGS, seeds=1)
    turns = 1 + SETTINGS.max_repair_turns + SETTINGS.max_check_retries
    assert report.ceiling == pytest.approx(50 * turns * 0.25)
    assert report.ceiling_basis["turns_per_worker"] == turns


def test_answer_dependent_fan_out_shows_a_spread_over_seeds():
    source = f"""
S = {json.dumps(FINDINGS)}
first = agent("scan", schema=S)
checks = [agent(f"check {{b}}", schema={{"type": "boolean"}}) for b in first["bugs"]]
"""
    report = price(source, settings=SETTINGS, seeds=8)
    calls = report.total["calls"]
    assert calls.min >= 1 and calls.max <= 4
    assert calls.min < calls.max


def test_wall_time_estimate_counts_sequential_calls_and_overlaps_parallel_ones():
    settings = Settings(concurrency=4)
    sequential = price("for i in range(6):\n    agent(f'q {i}')\n", settings=settings, seeds=1,
                       latency=1.0)  # fmt: skip
    parallel = price("parallel([lambda i=i: agent(f'q {i}') for i in range(6)])\n",
                     settings=settings, seeds=1, latency=1.0)  # fmt: skip
    assert sequential.wall_seconds.median == pytest.approx(6.0)
    assert parallel.wall_seconds.median == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("source", "kind", "line"),
    [
        ("x = 1\ny = {}\nz = y['missing']\n", "crash", 3),
        ("x = 1\nwhile True:\n    x += 1\n", "limit", 2),
        ("x = 1\nbad = agent('q', schema={'type': 'array', 'minItems': 3, 'maxItems': 1})\n",
         "worker", 2),
        ("parallel([lambda i=i: agent(f'q {i}') for i in range(12)])\n", "runaway", 1),
    ],
    ids=["crash", "limit", "unsatisfiable-schema", "runaway"],
)  # fmt: skip
def test_problems_met_in_rehearsal_carry_the_plans_line(source, kind, line):
    settings = Settings(max_agents=10)
    report = price(source, settings=settings, seeds=2, limits=planlang.Limits(steps=20_000))
    assert not report.ok
    matching = [p for p in report.problems if p.kind == kind]
    assert matching, report.problems
    assert any(p.line in (line, line + 1) for p in matching), matching
    assert matching[0].seeds  # which rehearsals met it


def test_a_refused_plan_is_not_priced():
    with pytest.raises(planlang.PlanRefused):
        price("import os\n")


def test_rehearsal_never_touches_the_ledger_or_a_client():
    report = price(FIXED_FAN_OUT, settings=SETTINGS, seeds=2)
    for rehearsal in report.rehearsals:
        total = rehearsal.accounting["total"]
        assert total["sent"] == 0 and total["cached"] == 0
        assert total["standin"] == total["calls"] > 0


def test_the_stand_in_is_seeded_and_repeatable():
    messages = [{"role": "user", "content": "scan"}]
    params = {"response_format": {"type": "json_schema",
                                  "json_schema": {"name": "a", "schema": FINDINGS}}}  # fmt: skip
    assert StandIn(3)("m", messages, **params) == StandIn(3)("m", messages, **params)
    answers = {json.dumps(StandIn(s)("m", messages, **params).data) for s in range(10)}
    assert len(answers) > 1


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_stand_in_answers_every_schema_with_valid_data(schema):
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    for seed in range(20):
        assert validator.is_valid(value_for(schema, random.Random(seed)))


def _schemas():
    from hypothesis import strategies as st

    leaf = st.one_of(
        st.builds(lambda lo, span: {"type": "integer", "minimum": lo, "maximum": lo + span},
                  st.integers(-50, 50), st.integers(0, 20)),
        st.builds(lambda lo, span: {"type": "string", "minLength": lo, "maxLength": lo + span},
                  st.integers(0, 10), st.integers(0, 10)),
        st.just({"type": "boolean"}),
        st.just({"type": "null"}),
        st.builds(lambda xs: {"enum": xs}, st.lists(st.integers(), min_size=1, max_size=4)),
    )  # fmt: skip

    def extend(children):
        return st.one_of(
            st.builds(lambda item, lo, span: {"type": "array", "items": item, "minItems": lo,
                                               "maxItems": lo + span},
                      children, st.integers(0, 3), st.integers(0, 3)),
            st.dictionaries(st.sampled_from("abcde"), children, max_size=4).flatmap(
                lambda props: st.builds(
                    lambda req: {"type": "object", "properties": props, "required": req},
                    st.lists(st.sampled_from(sorted(props)), unique=True) if props
                    else st.just([]))),
        )  # fmt: skip

    return st.recursive(leaf, extend, max_leaves=8)


def test_stand_in_answers_are_valid_for_generated_schemas():
    from hypothesis import given
    from hypothesis import strategies as st
    from jsonschema import Draft202012Validator

    @given(schema=_schemas(), seed=st.integers(0, 2**32))
    def prop(schema, seed):
        assert Draft202012Validator(schema).is_valid(value_for(schema, random.Random(seed)))

    prop()


def test_a_deep_tuple_hashed_in_a_parallel_thunk_does_not_crash_a_rehearsal():
    """The run's worker threads get a stack that fits the step limit (sandbox.deep_stack)."""
    import subprocess
    import sys

    code = (
        "from planlang.price import price\n"
        "src = ('def deep():\\n    t = ()\\n    for i in range(400000):\\n        t = (t,)\\n'\n"
        "       '    return len({t: 1})\\nresult = parallel([deep])')\n"
        "print(price(src, seeds=1).ok)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.strip() == "True"
