"""Red team 17: the host of plans, attacked through the embedding API, ``price`` and the
runtime's ``agent`` word with schemas, offline. Each case fails on 73c0d09; deadlines here are
hang guards only, never the thing measured. Cases that could hold the host run in a
subprocess that is killed at its timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from host_process import python_json

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 120.0


def _python(code: str, timeout: float = HANG_GUARD, mode: str = "process") -> dict:
    return python_json(code, timeout, mode)  # type: ignore[no-any-return]


# -- 1. the stand-in's least-answer bound, around it -------------------------------------------

_ARRAY = "{'type': 'array', 'minItems': 300, 'items': %s}"
_INT = "{'type': 'integer'}"
_NESTED_ANYOF = "{'anyOf': [%s]}" % (
    _ARRAY % ("{'anyOf': [%s]}" % (_ARRAY % ("{'anyOf': [%s]}" % (_ARRAY % _INT))))
)
_UNTYPED = (
    "{'minItems': 300, 'items': {'minItems': 300, 'items': {'minItems': 300, 'items':"
    " {'type': 'integer'}}}}"
)
_REFS = ("{'$defs': {'a': {'type': 'array', 'minItems': 300, 'items': {'type': 'integer'}},"
         " 'b': {'type': 'array', 'minItems': 300, 'items': {'$ref': '#/$defs/a'}}},"
         " 'type': 'array', 'minItems': 300, 'items': {'$ref': '#/$defs/b'}}")  # fmt: skip


@pytest.mark.parametrize(("schema", "mode"), [
    (_NESTED_ANYOF, "process"), (_UNTYPED, "process"), (_REFS, "process"),
    (_NESTED_ANYOF, "inprocess"),
], ids=["anyOf", "untyped", "ref", "anyOf-inprocess"])  # fmt: skip
def test_a_large_least_answer_behind_anyof_no_type_or_ref_is_not_built_in_the_host(
    schema: str, mode: str
) -> None:
    """REDTEAM14's fix bounds the stand-in's least answer (``standin_size.least_size``) only
    for a schema that names one ``type`` and no ``anyOf``/``oneOf``, and never follows a
    ``$ref``: the same 27 million items (three nested ``minItems`` of 300) wrapped in a
    one-choice ``anyOf``, written without ``type`` (the maker guesses "array" from ``items``),
    or reached through ``$defs`` is built in the host. The price returns at the plan's limit
    (``seconds``, 3.4 s) while a host thread goes on building and validating it: 60 s of the
    host's CPU a minute later and still going, 270 MB of the host's memory for a plan of
    ``memory_mb=256`` (1,000 a level is 10**9 items); in one process the price itself does
    not return (past the test's 40 s). It should be refused at once as a worker's failure, as
    the typed schema is."""
    got = _python(
        f"""
        import json, resource, time
        import planlang
        from planlang.sandbox.limits import Limits
        from runtime import Settings
        def cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime
        report = planlang.price("r = agent('x', schema={schema})\\nresult = 1\\n",
                                settings=Settings(), seeds=1,
                                limits=Limits(seconds=2, memory_mb=256))
        before = cpu()
        time.sleep(4.0)  # what the host still does for a price that returned
        print(json.dumps({{"kinds": [p.kind for p in report.problems],
                           "cpu_after": cpu() - before}}), flush=True)
        import os; os._exit(0)  # the building thread would hold the interpreter's exit
    """,
        timeout=40.0,
        mode=mode,
    )
    assert got["cpu_after"] < 1.5, f"the host spent {got['cpu_after']:.1f} s of CPU after the price"
    assert got["kinds"] == ["worker"], got


# -- 2. uniqueItems: the stand-in's quadratic search for new items -------------------------------

_UNIQUE = (
    "{'type': 'array', 'minItems': 100000, 'uniqueItems': True,"
    " 'items': {'type': 'integer', 'minimum': 0, 'maximum': 1000000000000}}"
)


@pytest.mark.parametrize("mode", ["process", "inprocess"])
def test_a_unique_items_schema_does_not_hold_the_host_in_quadratic_time(mode: str) -> None:
    """A worker schema of 100,000 ``uniqueItems`` integers (a 120-byte schema, its least
    answer within the stand-in's million): the stand-in's ``_Maker._array`` tests each new
    item with ``value not in seen``, a list, so the answer costs n**2/2 comparisons in the
    host (20,000 items 1.7 s, 100,000 about 40 s, 999,999 over an hour), whatever the plan's
    limits. Under process isolation the price returns at the plan's ``seconds`` while a host
    thread goes on comparing; in one process the price does not return. The stand-in should
    answer (a set of the items' JSON text finds them in linear time) or refuse at once."""
    got = _python(
        f"""
        import json, resource, time
        import planlang
        from planlang.sandbox.limits import Limits
        from runtime import Settings
        def cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime
        report = planlang.price("r = agent('x', schema={_UNIQUE})\\nresult = 1\\n",
                                settings=Settings(), seeds=1,
                                limits=Limits(seconds=10, memory_mb=512))
        before = cpu()
        time.sleep(4.0)
        print(json.dumps({{"kinds": [p.kind for p in report.problems],
                           "cpu_after": cpu() - before}}), flush=True)
        import os; os._exit(0)
    """,
        timeout=90.0,
        mode=mode,
    )
    assert got["cpu_after"] < 1.5, f"the host spent {got['cpu_after']:.1f} s of CPU after the price"
    assert got["kinds"] in ([], ["worker"]), got


# -- 3. the stand-in's tries are not held to the plan's clock ----------------------------------

_CONTAINS = (
    "{'type': 'array', 'minItems': 999000, 'maxItems': 999000,"
    " 'contains': {'const': 'zz'}, 'items': {'type': 'integer'}}"
)


@pytest.mark.parametrize("mode", ["process", "inprocess"])
def test_the_stand_ins_tries_end_with_the_plans_time_limit(mode: str) -> None:
    """Within the least-answer bound: a schema of 999,000 integers that must ``contains`` a
    string. The maker does not follow ``contains``, so the stand-in builds the answer,
    validates it with jsonschema, and tries again, 8 times: 57 s of the host's CPU for one
    ``agent`` call of a plan with ``seconds=2``. Under process isolation the price returns at
    the limit while the host thread goes on; in one process the price takes the whole minute
    (a ``parallel`` of such calls keeps ``concurrency`` host threads busy for as long). The
    stand-in is planlang's own host code: it should stop at the plan's deadline
    (``current_meter()``) or refuse such an answer at once."""
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
        report = planlang.price("r = agent('x', schema={_CONTAINS})\\nresult = 1\\n",
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


# -- 4. the checker: CPython compiles many lambdas in quadratic time ---------------------------


def test_checking_a_plan_of_many_lambdas_is_not_quadratic(tmp_path: Path) -> None:
    """``f = lambda: x`` 60,000 times (840 KB, within the 1 MB a plan may be): every lambda's
    code is named ``<lambda>``, and CPython's compiler, merging the module's constants, meets
    60,000 equal-looking code objects: quadratic (8,000 lines 1.1 s, 16,000 4.6 s, 32,000
    20 s in ``compile`` alone). ``planlang check`` took 99.5 s for this plan, holding the
    checker's lock (``_AST_LOCK``), so every other check in the process waited as long. As
    with f-string fields (PL005), a plan with that many lambdas (or functions of one name)
    should be refused, or compiled in time linear in its size."""
    plan = tmp_path / "plan.py"
    plan.write_text("x = 1\n" + "f = lambda: x\n" * 60_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "planlang", "check", str(plan)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=tmp_path, start_new_session=True)  # fmt: skip
    try:
        child.communicate(timeout=30.0)  # a linear check takes about 1 s
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise AssertionError("planlang check of an 840 KB plan took more than 30 s") from None
    assert child.returncode in (0, 1)


# -- 5. the stand-in's own Python errors reach the user ---------------------------------------


@pytest.mark.parametrize("schema", [
    "{'allOf': [{'type': 'integer'}], '$ref': '#/allOf/0'}",
    "{'type': 'number', 'multipleOf': 1e-300, 'maximum': 1e300}",
    "{'type': 'integer', 'exclusiveMinimum': 1e400}",
    "{'type': 'integer', 'minimum': float('nan')}",
], ids=["ref-into-a-list", "tiny-multipleOf", "infinite-bound", "nan-bound"])  # fmt: skip
def test_a_schema_the_stand_in_cannot_answer_says_why_not_a_python_error(schema: str) -> None:
    """Schemas jsonschema accepts, and the stand-in meets with an error of its own code: a
    ``$ref`` into ``allOf/0`` (``resolve`` calls ``.get`` on a list), a ``multipleOf`` whose
    quotient is infinite, an infinite or NaN bound (``math.ceil``). The price reports the
    worker's failure as "The client failed: AttributeError: 'list' object has no attribute
    'get'", "OverflowError: cannot convert float infinity to integer", "ValueError: cannot
    convert float NaN to integer": the plan's author learns nothing of what in the schema is
    wrong. It should say so (an ``UnsatisfiableSchema`` naming the keyword, or the schema
    refused at its check), or answer where an answer exists."""
    import planlang
    from planlang.sandbox.limits import Limits
    from runtime import Settings

    report = planlang.price(f"r = agent('x', schema={schema})\nresult = 1\n", settings=Settings(),
                            seeds=1, limits=Limits(seconds=5), isolation="inprocess")  # fmt: skip
    for problem in report.problems:
        for name in ("AttributeError", "OverflowError", "ValueError: cannot convert"):
            assert name not in problem.message, problem.message
