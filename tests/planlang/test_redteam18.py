"""Red team 18: the stand-in's deadline, bounds and uniqueItems (62bb5a3), attacked through
``price``. Each case fails on 62bb5a3; deadlines here are hang guards only, never the thing
measured. Cases that could hold the host run in a subprocess that is killed at its timeout.
"""

from __future__ import annotations

import pytest
from host_process import python_json

HANG_GUARD = 120.0


def _python(code: str, timeout: float = HANG_GUARD, mode: str = "process") -> dict:
    return python_json(code, timeout, mode)  # type: ignore[no-any-return]


# -- 1. one RE2 search of a long answer, far past the plan's deadline --------------------------

_SLOW_PATTERN = "|".join(f"(a|e)[a-z ]{{{1000 - i}}}z" for i in range(4))
_LONG_PATTERNED = f"{{'type': 'string', 'minLength': 999000, 'pattern': {_SLOW_PATTERN!r}}}"


@pytest.mark.parametrize("mode", ["process", "inprocess"])
def test_a_pattern_search_of_a_long_answer_ends_with_the_plans_time_limit(mode: str) -> None:
    """A 90-byte worker schema: a string of 999,000 characters (within ``ANSWER_MOST``) that
    must match four alternatives of ``(a|e)[a-z ]{1000}z``. RE2 is linear in the text, but
    times its program's live threads: one ``search`` of ``"a" * 999000`` (the maker's first
    pattern candidate) takes 35 s in C (16 alternatives: 156 s), and neither the maker's
    candidate loop nor the validator's ``pattern`` keyword ticks the clock, so the new
    deadline never stops it. In one process ``price`` of a plan with ``seconds=2`` took 34.9 s;
    under process isolation the price returns at 3.4 s while a host thread burns 4.0 s of CPU
    in the 4 s after (and goes on for minutes). The stand-in should bound the pattern work
    (refuse a pattern search whose text times program size is past a budget, or search long
    texts in chunks against the deadline) or refuse such a schema at once."""
    got = _python(
        f"""
        import json, resource, time
        import planlang
        from planlang.sandbox.limits import Limits
        from runtime import Settings
        def cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime
        began = time.monotonic()
        report = planlang.price("r = agent('x', schema={_LONG_PATTERNED})\\nresult = 1\\n",
                                settings=Settings(), seeds=1, limits=Limits(seconds=2))
        took = time.monotonic() - began
        before = cpu()
        time.sleep(4.0)
        print(json.dumps({{"took": took, "cpu_after": cpu() - before}}), flush=True)
        import os; os._exit(0)
    """,
        timeout=100.0,
        mode=mode,
    )
    assert got["took"] < 2 + 13, f"the price took {got['took']:.1f} s for a plan of 2 s"
    assert got["cpu_after"] < 1.5, f"the host spent {got['cpu_after']:.1f} s of CPU after the price"


# -- 2. a bound past a float's range: OverflowError ---------------------------------------------


@pytest.mark.parametrize("schema", [
    "{'type': 'number', 'minimum': 10**400}",
    "{'type': 'number', 'exclusiveMinimum': 10**400}",
    "{'type': 'number', 'maximum': -10**400}",
    "{'type': 'number', 'minimum': 10**400, 'multipleOf': 1}",
    "{'type': 'integer', 'minimum': 10**400, 'maximum': 0}",
], ids=["number-minimum", "number-exclusive", "number-maximum", "multipleOf",
        "message"])  # fmt: skip
def test_an_integer_bound_past_a_floats_range_is_not_an_overflow_error(schema: str) -> None:
    """JSON and Python integers have no range; a plan's schema may bound a ``number`` by
    ``10**400`` (jsonschema accepts it, and 10**400 itself is a valid answer). The stand-in's
    ``_number`` mixes it with floats (``rng.uniform``, ``low / step``) and ``bounds`` formats it
    with ``:g`` in its own refusal (integer minimum 10**400 above maximum 0): the worker fails
    with "The client failed: OverflowError: int too large to convert to float" (or "integer
    division result too large for a float"), a raw error of planlang's code that tells the
    plan's author nothing. It should answer (an integer at the bound is a number) or say
    which keyword the stand-in cannot meet."""
    import planlang
    from planlang.sandbox.limits import Limits
    from runtime import Settings

    report = planlang.price(f"r = agent('x', schema={schema})\nresult = 1\n", settings=Settings(),
                            seeds=1, limits=Limits(seconds=5), isolation="inprocess")  # fmt: skip
    for problem in report.problems:
        assert "OverflowError" not in problem.message, problem.message


# -- 3. a deep const against a recursive schema: RecursionError --------------------------------

_DEEP_CONST = (
    "d = []\nfor i in range(200):\n    d = [d]\n"
    "r = agent('x', schema={'const': d, 'items': {'$ref': '#'}})\nresult = 1\n"
)


@pytest.mark.parametrize("mode", ["inprocess", "process"])
def test_a_deep_const_under_a_recursive_schema_is_not_a_recursion_error(mode: str) -> None:
    """A list nested 200 levels (within the schema check's 256) as the ``const`` of a schema
    whose ``items`` are the schema itself (``$ref: '#'``, a step into the value each time:
    the cycle check lets it be). The maker returns the const; jsonschema's validation of it
    descends 200 levels, failing ``const`` at each, and overflows the stack building an error
    message: the worker fails with "The client failed: RecursionError: maximum recursion
    depth exceeded while getting the repr of an object", a raw error of the host's code (at
    100 levels the same schema is told clearly: "no answer can satisfy the JSON schema ...
    'const' at schema path items/const"). The stand-in should catch the validator's
    RecursionError (as ``standin_compiled`` does its own) and say the answer nests too deeply
    to be checked, or the schema check should refuse it."""
    import planlang
    from planlang.sandbox.limits import Limits
    from runtime import Settings

    report = planlang.price(_DEEP_CONST, settings=Settings(), seeds=1, limits=Limits(seconds=5),
                            isolation=mode)  # fmt: skip
    for problem in report.problems:
        assert "RecursionError" not in problem.message, problem.message


# -- 4. thousands of distinct patterns: RE2 compiles past the 256-pattern cache, no tick -------

_MANY_PATTERNS = """\
pats = {}
for i in range(4900):
    pats["\\\\W{" + str(1000 - i % 500) + "}" + "abcdefghij"[i // 500]] = True
r = agent("x", schema={"type": "object", "required": ["k"], "minProperties": 2,
                       "patternProperties": pats})
result = 1
"""


@pytest.mark.parametrize("mode", ["process", "inprocess"])
def test_many_distinct_patterns_are_not_compiled_past_the_plans_deadline(mode: str) -> None:
    """A worker schema of 4,900 distinct ``patternProperties`` keys (``\\\\W{1000}a``,
    ``\\\\W{999}a``, ...; 9,800 values written out, within ``SCHEMA_MOST``), each 2 ms for RE2
    to compile. ``linear_regex.compiled`` caches 256, so every pass compiles all 4,900 again:
    the metaschema's ``format: regex``, ``_check_patterns``, and each of the stand-in's 8
    validations (``_pattern_properties`` searches every pattern against the answer's key; no
    pattern matches, so nothing descends and no ``evolve`` ticks the clock; ``minProperties``
    makes every try fail). ``price`` of a plan with ``seconds=2`` took 71.4 s in one process.
    The compile cost should count against the deadline (tick in ``_pattern_properties`` and
    the checks), or the number of distinct patterns a schema holds be bounded (by the cache
    size, or by their compiled program size)."""
    got = _python(
        f"""
        import json, resource, time
        import planlang
        from planlang.sandbox.limits import Limits
        from runtime import Settings
        def cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime
        began = time.monotonic()
        report = planlang.price({_MANY_PATTERNS!r}, settings=Settings(), seeds=1,
                                limits=Limits(seconds=2))
        took = time.monotonic() - began
        before = cpu()
        time.sleep(4.0)
        print(json.dumps({{"took": took, "cpu_after": cpu() - before}}), flush=True)
        import os; os._exit(0)
    """,
        timeout=100.0,
        mode=mode,
    )
    assert got["took"] < 2 + 13, f"the price took {got['took']:.1f} s for a plan of 2 s"
    assert got["cpu_after"] < 1.5, f"the host spent {got['cpu_after']:.1f} s of CPU after the price"
