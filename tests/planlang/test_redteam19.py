"""Red team 19: the host's JSON-schema work (10c058e, 0fb052a), attacked through ``price`` and
a real run with a scripted model. Each case fails on 0fb052a; deadlines here are hang guards
only, never the thing measured. Cases that could hold the host run in a subprocess that is
killed at its timeout.
"""

from __future__ import annotations

import pytest
from host_process import python_json

HANG_GUARD = 120.0


def _python(code: str, timeout: float = HANG_GUARD, mode: str = "process") -> dict:
    return python_json(code, timeout, mode)  # type: ignore[no-any-return]


_MEASURE = """
    import json, os, resource, time
    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
"""
_REPORT = """
    before = cpu()
    time.sleep(4.0)
    print(json.dumps({"took": took, "cpu_after": cpu() - before, "said": said}), flush=True)
    os._exit(0)
"""


# -- 1. a real model's reply checked by an unwatched validator: 2**30 evolves ------------------

_DOUBLING = """
defs = {}
for i in range(30):
    defs['d' + str(i)] = {'allOf': [{'$ref': '#/$defs/d' + str(i + 1)},
                                    {'$ref': '#/$defs/d' + str(i + 1)}]}
defs['d30'] = {'type': 'object'}
r = agent('x', schema={'$defs': defs, '$ref': '#/$defs/d0'})
result = 1
"""


@pytest.mark.parametrize("mode", ["process", "inprocess"])
def test_a_real_replys_schema_check_ends_with_the_plans_time_limit(mode: str) -> None:
    """A 300-byte schema of 30 ``$defs``, each an ``allOf`` naming the next twice: any check
    of any answer is 2**30 subschema applications (``check_schema`` accepts it: no cycle, few
    values). The stand-in's validator ticks (it stops at the deadline), but a worker's own
    check of a real model's reply (``worker.schema_problems`` with ``schema_validator``, not
    ``watched_validator``) has no clock at all: a scripted model answering ``{"a": 1}`` to a
    plan of ``seconds=2`` held the run past the 60 s wait in one process (N=16 alone took
    1.7 s, doubling each level), and under process isolation the run ended at 3.3 s while a
    host thread burned 3.0 s of CPU in the 3 s after (for hours more). A worker's check
    should stop at its plan's deadline (a watched validator ticking the run's clock or its
    cancel), or such a schema be refused when checked (a bound on the subschema
    applications a ``$ref`` graph may make)."""
    got = _python(
        _MEASURE
        + f"""
    import planlang
    from planlang.binding import plan_sandbox, run_host_words, run_plan
    from planlang.sandbox.limits import Limits
    from runtime import LLM, Ledger, Reply, Role, Run, Settings
    client = lambda model, messages, **params: Reply(text='{{"a": 1}}')
    settings = Settings(roles={{"scan": Role(model="small", price=0.2)}}, default_price=0.2)
    run = Run("t", llm=LLM(Ledger(":memory:"), client=client, settings=settings), concurrency=2)
    checked = planlang.check({_DOUBLING!r})
    words, _ = run_host_words(run)
    box = plan_sandbox(run, words, host=None, inputs=None, limits=Limits(seconds=2),
                       isolation={mode!r})
    began = time.monotonic()
    run.start(lambda r: run_plan(box, checked))
    try:
        run.wait(timeout=40)
        said = "completed"
    except Exception as error:
        said = repr(error)[:300]
    took = time.monotonic() - began
    """
        + _REPORT,
        timeout=100.0,
        mode=mode,
    )
    assert got["took"] < 2 + 13, (
        f"the run took {got['took']:.1f} s for a plan of 2 s: {got['said']}"
    )
    assert got["cpu_after"] < 1.5, f"the host spent {got['cpu_after']:.1f} s of CPU after the run"


# -- 2. searches each just under SEARCH_MOST, a clock look only each 1,024 ticks ---------------

_SLOW16 = "|".join(f"(a|e)[a-z ]{{{1000 - i}}}z" for i in range(16))
_ITEMS = (f"{{'type': 'array', 'minItems': 40, 'items': {{'type': 'string', 'minLength': 7000, "
          f"'pattern': {_SLOW16!r}}}}}")  # fmt: skip


@pytest.mark.parametrize("mode", ["process", "inprocess"])
def test_many_searches_each_within_the_bound_end_with_the_plans_time_limit(mode: str) -> None:
    """A 350-byte schema: 40 strings of 7,000 characters (280,000 in all, within
    ``ANSWER_MOST``), each to match 16 alternatives of ``(a|e)[a-z ]{1000}z`` (31,844 RE2
    instructions: 7,000 x 31,844 is just under ``SEARCH_MOST``, so each search runs, about
    1 s in C). ``tick`` reads the clock once each 1,024 steps, a step being taken as about a
    microsecond; here a step (one item made, its candidates searched) is a second, and the
    40 items are one step each: the clock is never read within a try. ``price`` of a plan of
    ``seconds=2`` took 44.8 s in one process; under process isolation it returned at 3.3 s
    while a host thread burned 3.0 s of CPU in the 3 s after (140 items: minutes). A search
    should count as many ticks as it costs (or read the clock after any search of more than
    a millisecond's cost), or an answer's searches be bounded in all, not one by one."""
    got = _python(
        _MEASURE
        + f"""
    import planlang
    from planlang.sandbox.limits import Limits
    from runtime import Settings
    began = time.monotonic()
    report = planlang.price("r = agent('x', schema={_ITEMS})\\nresult = 1\\n",
                            settings=Settings(), seeds=1, limits=Limits(seconds=2))
    took = time.monotonic() - began
    said = [p.message[:200] for p in report.problems]
    """
        + _REPORT,
        timeout=100.0,
        mode=mode,
    )
    assert got["took"] < 2 + 13, f"the price took {got['took']:.1f} s for a plan of 2 s"
    assert got["cpu_after"] < 1.5, f"the host spent {got['cpu_after']:.1f} s of CPU after the price"


# -- 3. an integer past a float's range against a float multipleOf: OverflowError -------------


@pytest.mark.parametrize("schema", [
    "{'type': 'integer', 'minimum': 10**400, 'multipleOf': 0.5}",
    "{'anyOf': [{'type': 'integer', 'minimum': 10**400}], 'multipleOf': 0.5}",
], ids=["integer", "anyOf"])  # fmt: skip
def test_a_huge_integer_against_a_float_multiple_of_is_not_an_overflow_error(schema: str) -> None:
    """Red team 18's fix made the maker answer a bound past a float's range with an integer,
    but jsonschema's ``multipleOf`` with a float step divides the answer by it
    (``instance / dB``): an int of 10**400 raises ``OverflowError: int too large to convert
    to float`` out of the stand-in's ``validator.iter_errors`` (only RecursionError is caught
    there). ``price`` reports "The client failed: OverflowError: int too large to convert to
    float", a raw error of planlang's code. It should say the stand-in cannot meet
    ``multipleOf`` beside such a bound (as ``_number`` already does for a ``number``), or the
    validator's ``multipleOf`` should treat an int past a float's range exactly
    (``Fraction``)."""
    import planlang
    from planlang.sandbox.limits import Limits
    from runtime import Settings

    report = planlang.price(f"r = agent('x', schema={schema})\nresult = 1\n", settings=Settings(),
                            seeds=1, limits=Limits(seconds=5), isolation="inprocess")  # fmt: skip
    for problem in report.problems:
        assert "OverflowError" not in problem.message, problem.message


# -- 4./5. a real model's reply that jsonschema or json cannot take ends the whole run ---------


def _reply_run(schema: dict, text: str) -> tuple[object, object]:
    """A run of one worker whose scripted model always answers ``text``: (what ``run_sync``
    returned or raised, the worker's record)."""
    from runtime import LLM, Ledger, Reply, Role, Run, Settings

    settings = Settings(roles={"scan": Role(model="small", price=0.2)}, default_price=0.2)
    client = lambda model, messages, **params: Reply(text=text)  # noqa: E731
    run = Run("t", llm=LLM(Ledger(":memory:"), client=client, settings=settings), concurrency=2)
    try:
        got: object = run.run_sync(lambda r: [r.agent("x", schema=schema), "went on"])
    except BaseException as error:  # noqa: BLE001 - what ended the run is the thing measured
        got = error
    return got, run.threads[0]


@pytest.mark.parametrize("schema,text", [
    ({"type": "number", "multipleOf": 0.1}, "1e400"),
    ({"type": "number", "multipleOf": 0.5}, "Infinity"),
    ({"type": "integer", "multipleOf": 0.1}, "1" * 4000),
], ids=["1e400", "Infinity", "4000-digit-int"])  # fmt: skip
def test_a_replys_number_past_a_float_is_the_answers_problem_not_the_runs(
    schema: dict, text: str
) -> None:
    """A model answers ``1e400`` (json.loads: inf), ``Infinity``, or a 4,000-digit integer to
    a worker whose schema has a float ``multipleOf``. jsonschema's ``multipleOf`` raises
    ``OverflowError`` ("cannot convert Infinity to integer ratio", "int too large to convert
    to float") out of ``worker.schema_problems``, which catches only RecursionError: the
    worker fails with "internal error: OverflowError: ..." and ``run_sync`` raises it, so one
    model reply ends the whole run (the plan's other work, "went on" here, never returns). The
    reply should fail its schema with a clear reason (a repair turn, then the worker fails
    and ``agent`` returns None), as a 5,000-digit integer already does ("Exceeds the limit
    (4300 digits)...")."""
    got, record = _reply_run(schema, text)
    assert got == [None, "went on"], f"the run ended with {got!r} ({record.error})"
    assert "OverflowError" not in (record.error or ""), record.error


def test_a_deeply_nested_reply_is_the_answers_problem_not_the_runs() -> None:
    """A model answers ``[[[[...]]]]`` nested 100,000 deep (200 kB, well within a reply):
    ``json.loads`` in the worker raises ``RecursionError: maximum recursion depth exceeded
    while decoding a JSON array``, which nothing catches there: the worker fails with
    "internal error: RecursionError: ..." and ``run_sync`` raises it, ending the whole run on
    one reply (a schema of ``{"type": "array"}``; any schema at all). The reply should be
    said not to be JSON the worker can read (nested too deeply: a repair turn, then the
    worker fails and ``agent`` returns None), as the validator's own RecursionError is."""
    got, record = _reply_run({"type": "array"}, "[" * 100_000 + "]" * 100_000)
    assert got == [None, "went on"], f"the run ended with {got!r} ({record.error})"
    assert "RecursionError" not in (record.error or ""), record.error


# -- 6. a number range wider than a float: the stand-in's uniform() gives inf -------------------


def test_a_number_range_of_every_double_is_answered() -> None:
    """``{"type": "number", "minimum": -1e308, "maximum": 1e308}`` (a model's way of saying
    "any double") has answers (0, 1.5). The maker picks ``round(rng.uniform(low, high), 3)``;
    ``high - low`` is 2e308, past a float's range, so ``uniform`` returns inf (or -inf)
    every try, which fails ``maximum``: ``price`` reports "no answer can satisfy the JSON
    schema (the stand-in tried 8 times): 'maximum' ...", a valid schema refused (and a plan
    priced as failing that would run). The maker should pick within a range it can compute
    (``low + (high / 2 - low / 2) * 2 * random()``, or clamp into [low, high])."""
    import planlang
    from planlang.sandbox.limits import Limits
    from runtime import Settings

    schema = "{'type': 'number', 'minimum': -1e308, 'maximum': 1e308}"
    report = planlang.price(f"r = agent('x', schema={schema})\nresult = 1\n", settings=Settings(),
                            seeds=1, limits=Limits(seconds=5), isolation="inprocess")  # fmt: skip
    assert not report.problems, [p.message for p in report.problems]
