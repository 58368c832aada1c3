"""Review 18: the stand-in's deadline (red team 17/18 fixes), its number bounds, and the new
``MatchTooCostly`` met by code that catches only ``PatternError``. Each case fails on 0fb052a.
"""

from __future__ import annotations

import random
import time
from types import SimpleNamespace

import jsonschema
import pytest
from host_process import python_json

# least answer 999,000 items (within ANSWER_MOST); the maker never meets ``contains``, so every
# try is built and checked in full (the red team 17 case the deadline was added for)
# A satisfiable chain of $defs each naming the next twice in an allOf: quick to build (a part
# met twice merges once), 2**30 subschemas to check, so only the plan's deadline ends it. (The
# array of 999,000 integers containing "zz" this test held first is now found unsatisfiable at
# once: the stand-in reads its contains against its items.)
_CONTAINS = {
    "$defs": {
        **{f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(30)},
        "d30": {"type": "integer"},
    },
    "$ref": "#/$defs/d0",
}


def _python(code: str, timeout: float, mode: str) -> dict:
    return python_json(code, timeout, mode)  # type: ignore[no-any-return]


def test_a_parallel_thunks_stand_in_answer_stops_at_the_plans_deadline_in_one_process() -> None:
    """``StandIn.__call__`` reads the plan's deadline from ``current_meter()``, a thread-local
    set only on the plan's own thread (``_execute``) and on the host threads serving a plan's
    process (``parent.serve``). In one process, ``parallel``'s thunks run on ``FanOut``'s pool
    threads, where it is never set: the stand-in runs with no deadline. The same plan and
    schema that stop at the limit when called directly ("the stand-in stopped making its
    answer at the plan's time limit", 3.4 s) run on inside ``parallel`` (7.5 s, and more for
    each call, ``concurrency`` of them at once), and end with the misleading "asks for an
    answer of more than 1,000,000 items" (its least answer is 999,000) once the tries have
    spent the budget. The pool should carry the submitting thread's meter (or the runtime
    pass the deadline), so the stand-in stops at the plan's limit here too."""
    got = _python(
        f"""
        import json, time
        import planlang
        from planlang.sandbox.limits import Limits
        from runtime import Settings
        plan = "r = parallel([lambda: agent('x', schema={_CONTAINS!r})])\\nresult = 1\\n"
        began = time.monotonic()
        report = planlang.price(plan, settings=Settings(), seeds=1, limits=Limits(seconds=2),
                                isolation="inprocess")
        print(json.dumps({{"took": time.monotonic() - began,
                           "problems": [p.message for p in report.problems]}}), flush=True)
        """,
        timeout=120.0,
        mode="inprocess",
    )
    assert not any("more than 1,000,000" in m for m in got["problems"]), got["problems"]
    assert any("stopped making its answer at the plan's time limit" in m
               for m in got["problems"]), got["problems"]  # fmt: skip
    assert got["took"] < 5.5, f"the price took {got['took']:.1f} s for a plan of 2 s"


def test_an_mcp_tools_stand_in_answer_stops_at_the_plans_deadline(monkeypatch) -> None:
    """``planlang/mcp/tools.py``'s ``standin()`` calls ``value_for(schema, rng)`` with no
    ``deadline``: a tool's ``outputSchema`` answered by the stand-in during ``price`` is built
    and checked with no look at the plan's clock, even on a thread whose ``current_meter()``
    says the plan's time is up (here, already past): ~8 s of host CPU for one tool call, ending
    in "asks for an answer of more than 1,000,000 items". It should pass
    ``current_meter().deadline`` (as ``StandIn.__call__`` does) and fail at the limit."""
    from planlang.mcp import tools as mcp_tools
    from planlang.sandbox import inprocess
    from planlang.sandbox.limits import Limits, Meter
    from runtime.tools import ToolSpec

    class Door:
        def call(self, spec, arguments, *, send, standin):
            return standin()

    monkeypatch.setattr(mcp_tools, "tool_door", lambda run: Door())
    spec = ToolSpec("srv", "big", read_only=True, destructive=False, idempotent=True)
    tool = mcp_tools.Tool(spec, "big", "", {"type": "object"}, _CONTAINS)
    run = SimpleNamespace(llm=SimpleNamespace(standin=SimpleNamespace(seed=0)))
    word = mcp_tools._word(tool, run, connection=None)
    meter = Meter(Limits(seconds=1))
    meter.deadline = time.monotonic() - 1.0  # the plan's time is already up
    monkeypatch.setattr(inprocess._running, "meter", meter)
    began = time.monotonic()
    with pytest.raises(Exception) as caught:
        word()
    took = time.monotonic() - began
    assert "more than 1,000,000" not in str(caught.value), str(caught.value)
    assert took < 1.5, f"the tool's stand-in answer took {took:.1f} s past the plan's deadline"


def test_a_long_f_string_phase_name_does_not_break_the_timeline() -> None:
    """``planlang.timeline._line_of`` matches a phase name against the plan's f-string
    ``phase(f"...")`` patterns with ``linear_regex.fullmatch`` and catches ``PatternError``
    only. This session's ``fullmatch`` raises ``MatchTooCostly`` (a ValueError, not a
    PatternError) when text length times program size passes 250,000,000: a phase named by a
    20,000-character f-string makes ``build_timeline`` (``planlang timeline``, the HTML
    report) raise instead of drawing the run. ``_line_of`` should catch it (no line for that
    phase, or compare the literal parts)."""
    from planlang.timeline import build_timeline

    source = 'x = 1\nphase(f"' + "a" * 20000 + '{x}")\nresult = 1\n'
    events = [{"kind": "phase", "t": 0.0, "name": "a" * 20000 + "1"}]
    timeline = build_timeline(events, {"id": "r", "status": "ok"}, [], source)
    assert timeline is not None


@pytest.mark.parametrize(("schema", "valid"), [
    ({"type": "integer", "exclusiveMinimum": 1.5, "maximum": 2}, 2),
    ({"type": "integer", "minimum": 1, "exclusiveMaximum": 1.5}, 1),
    ({"type": "number", "minimum": 0, "exclusiveMaximum": 0.0005}, 0),
    ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.001}, 0.0005),
], ids=["int-above-1.5", "int-below-1.5", "number-below-0.0005", "number-in-0-0.001"])  # fmt: skip
def test_a_range_jsonschema_satisfies_is_answered_not_called_unsatisfiable(schema, valid) -> None:
    """``standin_maker.bounds`` steps past an exclusive bound by a fixed gap (1 for an
    integer, 1e-3 for a number) before ``math.ceil``/``floor``: ``exclusiveMinimum: 1.5`` for
    an integer gives a least value of 3, not 2, and ``exclusiveMaximum: 0.0005`` beside
    ``minimum: 0`` a greatest of -0.0005. The stand-in then raises UnsatisfiableSchema, "no
    integer is at least 3 and at most 2 (minimum above maximum)", for a schema jsonschema
    satisfies (the value shown here) and whose minimum is not above its maximum: the plan's
    author is told to mend a schema that is fine. For an integer the least value above ``a``
    is ``floor(a) + 1``; for a number an exclusive gap should shrink to the range's width."""
    from planlang.standin import value_for

    jsonschema.validate(valid, schema)  # an answer exists
    value = value_for(schema, random.Random(0))
    jsonschema.validate(value, schema)


def test_a_number_range_as_wide_as_the_floats_is_answered() -> None:
    """``bounds`` says it returns finite bounds, and ``Maker._number`` answers
    ``round(rng.uniform(low, high), 3)``; for ``minimum: -1.7e308, maximum: 1.7e308``
    ``high - low`` overflows to ``inf`` and every try answers an infinity, so the stand-in
    fails "(the stand-in tried 8 times): 'maximum' at schema path maximum" for a range that
    holds 0. It should pick within the range (e.g. ``low + (high / 2 - low / 2) * 2 * u``,
    or clamp)."""
    from planlang.standin import value_for

    schema = {"type": "number", "minimum": -1.7e308, "maximum": 1.7e308}
    value = value_for(schema, random.Random(0))
    jsonschema.validate(value, schema)


def test_many_strings_each_just_within_the_search_bound_stop_at_the_deadline() -> None:
    """``SEARCH_MOST`` bounds one search (text length times program size, about a second),
    not their sum: 32 strings of 31,203 characters (998,496 in all, within ``ANSWER_MOST``)
    under red team 18's four-alternative pattern (8,012 instructions) each pass the bound, and
    the maker's pattern candidates search each for ~1.2 s. ``Maker.make`` calls ``tick()``
    once per node and the clock is read every 1,024 ticks (``_TICKS``), so 32 nodes never
    read it: ``value_for(..., deadline=now + 2)`` runs 39 s. The validator's ``pattern``
    keyword likewise searches with no look at the clock. A search that costs about a second
    should read the clock (``tick_chunk()`` before it, or ticks weighted by
    ``len(text) * program_size``), so the answer stops at the deadline."""
    got = _python(
        """
        import json, random, time
        from planlang.standin import value_for
        from planlang.standin_size import OutOfTime
        P = '|'.join(f'(a|e)[a-z ]{{{1000 - i}}}z' for i in range(4))
        S = {'type': 'array', 'minItems': 32, 'maxItems': 32,
             'items': {'type': 'string', 'minLength': 31203, 'pattern': P}}
        began = time.monotonic()
        try:
            value_for(S, random.Random(0), deadline=time.monotonic() + 2)
            how = 'answered'
        except OutOfTime:
            how = 'out of time'
        print(json.dumps({"took": time.monotonic() - began, "how": how}), flush=True)
        """,
        timeout=150.0,
        mode="inprocess",
    )
    assert got["took"] < 2 + 3, f"value_for took {got['took']:.1f} s for a deadline 2 s away"
