"""Red team 22: attacks on the stand-in rewritten today, the linear regex engine's reading of
ECMA-262 patterns, and how the CLI writes a plan's result. Each case fails on the commit it
was written against (d2a267e); deadlines here are hang guards, generous on purpose: the thing
measured is far past them. Cases that could hold or kill the host run in a fresh interpreter,
killed at its hang guard.
"""

from __future__ import annotations

import json

import pytest
from host_process import python_json

HANG_GUARD = 240.0


def _python(code: str, timeout: float = HANG_GUARD, mode: str = "process") -> dict:
    return python_json(code, timeout, mode)  # type: ignore[no-any-return]


# -- 1. stand-in: a container const counts one item, however many values it holds -------------


def test_a_large_const_repeated_is_held_to_the_answer_bound() -> None:
    """``{"type": "array", "minItems": 1000, "items": {"const": big}}`` with ``big`` a list of
    4,000 one-item lists (about 8,000 values, within the schema check's 10,000). ``least_size``
    counts a ``const`` (and an ``enum``) as 1 whatever it holds, so the schema passes the
    ``ANSWER_MOST`` bound at 1,001, and the schema is ``_exact``, so nothing checks the answer
    either: ``Maker.make`` hands out ``_fresh(const)``, a deepcopy each item: 1000 x 8,000 =
    8 million values (13 s and 830 MB for minItems 20,000 of a 5,000-item const; through
    ``price`` of ``Limits(seconds=15, memory_mb=64)`` with minItems 900,000 the host held 370 MB
    traced, 1.16 GB maxrss, growing linearly until the deadline). A const should count its
    written size (or the stand-in refuse past the bound)."""
    got = _python(
        """
        import json, random, time
        from planlang.standin import value_for, UnsatisfiableSchema
        from planlang.standin_size import ANSWER_MOST
        big = [[i] for i in range(4000)]
        schema = {"type": "array", "minItems": 1000, "items": {"const": big}}

        def count(v):
            n, stack = 0, [v]
            while stack:
                x = stack.pop()
                n += 1
                if isinstance(x, list):
                    stack.extend(x)
            return n

        try:
            v = value_for(schema, random.Random(0), deadline=time.monotonic() + 60)
            out = {"items": count(v), "most": ANSWER_MOST}
        except UnsatisfiableSchema:
            out = {"items": 0, "most": ANSWER_MOST, "refused": True}
        print(json.dumps(out))
        """
    )
    assert got["items"] <= got["most"], got


def test_a_large_const_through_price_is_held_to_the_plans_memory() -> None:
    """The same through a plan (process isolation, the default): ``agent("q", schema=S)`` of
    minItems 900,000 of a 4,000-list const. The plan's process is 64 MiB; the stand-in builds
    the answer in the host, uncounted."""
    got = _python(
        """
        import json, tracemalloc
        import planlang
        from planlang import Limits
        src = ('big = [[i] for i in range(4000)]\\n'
               'r = agent("q", schema={"type": "array", "minItems": 900000, '
               '"items": {"const": big}})\\nresult = len(r)\\n')
        tracemalloc.start()  # what the host holds, not what its allocator keeps back
        r = planlang.price(src, seeds=1, limits=Limits(seconds=8, memory_mb=64))
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        print(json.dumps({"held_mb": peak, "problems": [p.message for p in r.problems]}))
        """
    )
    assert got["held_mb"] < 100, got


# -- 2. stand-in: an enum is filtered by its siblings on every draw, with no look at the clock -


def test_an_enum_beside_costly_siblings_stops_at_the_deadline() -> None:
    """``{"type": "string", "enum": [3,000 texts], "anyOf": [{"minLength": 50}] * 1500 +
    [{}]}`` (about 9,000 values). ``Maker.make`` calls ``listed(schema)`` for each draw of an
    enum: every listed value is checked (``_allows`` -> ``schema_validator.is_valid``, not the
    watched validator) against the 1,501 branches of the siblings: 4.5 million subschema
    checks in one call that never ticks. ``value_for`` with a deadline 2 s away took 29.8 s
    of CPU before it raised OutOfTime; through ``price`` of ``Limits(seconds=3)`` price
    returned at 4.4 s but the host's stand-in thread went on burning a core (14.6 s of CPU in
    the 15 s after). The enum's filtering should tick (or be made once per node)."""
    got = _python(
        """
        import json, random, time
        from planlang.standin import value_for
        schema = {"type": "string", "enum": [f"v{i}" for i in range(3000)],
                  "anyOf": [{"minLength": 50}] * 1500 + [{}]}
        t = time.monotonic()
        try:
            value_for(schema, random.Random(0), deadline=time.monotonic() + 2)
            how = "answered"
        except Exception as error:
            how = type(error).__name__
        print(json.dumps({"took": time.monotonic() - t, "how": how}))
        """
    )
    assert got["took"] < 8.0, got


# -- 3. linear_regex: RE2's classes are not ECMA-262's -----------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("^\\S$", "\u00a0"),  # ECMA \s holds NBSP (Zs); RE2's \s is [\t\n\f\r ]
        ("^\\S$", "\x0b"),  # ECMA \s holds the line tabulation; RE2's \s does not
        ("^\\S$", "\ufeff"),  # ECMA \s holds the BOM
        ("^\\S$", "\u2029"),  # and the line terminators
        ("^.$", "\r"),  # ECMA's dot matches no line terminator; RE2's only refuses \n
        ("^.$", "\u2028"),
        ("^[^\\uD800-\\uDFFF]$", "\ud800"),  # a lone surrogate matched as U+FFFD
        ("^\\uFFFD$", "\udc00"),
    ],
    ids=["S-nbsp", "S-vt", "S-bom", "S-ps", "dot-cr", "dot-ls", "surrogate-class", "fffd"],
)
def test_a_pattern_refuses_what_ecma_262_refuses(pattern: str, text: str) -> None:
    """JSON Schema's patterns are ECMA-262's (the JSON-Schema-Test-Suite's
    optional/ecmascript-regex.json asserts ``\\s`` holds U+000B, U+00A0, U+FEFF, U+2029).
    ``linear_regex`` hands RE2 the pattern as written (``_as_re2`` rewrites only ``\\uXXXX``):
    RE2's ``\\s`` is ASCII ``[\\t\\n\\f\\r ]`` and its ``.`` refuses only ``\\n``, so ``\\S``
    and ``.`` accept texts ECMA-262 refuses; and ``_encodable`` matches a lone surrogate as
    U+FFFD, so a class that excludes surrogates (or names U+FFFD) accepts one. A model's
    answer that should fail ``pattern`` passes it."""
    from runtime.json_schema import schema_validator

    assert not schema_validator({"type": "string", "pattern": pattern}).is_valid(text)


# -- 4. planlang run: result.json of a plan's result -------------------------------------------

_CLI_CONFIG = """
[planlang]
max_agents = 20
concurrency = 4
[planlang.roles.scan]
model = "small"
price = 0.5
[gate]
max_median = 10
"""


def _cli(tmp_path, plan: str, *args: str, timeout: float = 120.0):
    import os
    import subprocess
    import sys

    from host_process import ROOT

    (tmp_path / "planlang.toml").write_text(_CLI_CONFIG)
    (tmp_path / "plan.py").write_text(plan)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LLM_BASE_URL": "http://127.0.0.1:9/v1",
           "LLM_API_KEY": "sk-redteam22-never-printed"}  # fmt: skip
    env.pop("PLANLANG_ISOLATION", None)  # the default: process
    return subprocess.run([sys.executable, "-m", "planlang", *args, "plan.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=timeout)  # fmt: skip


def _result_text(tmp_path) -> str:
    found = sorted((tmp_path / ".planlang" / "runs").glob("*/result.json"))
    assert found, "no result.json written"
    return found[-1].read_text(encoding="utf-8")


def test_planlang_run_of_many_keys_alike_as_text_is_not_quadratic(tmp_path) -> None:
    """``s = "x" * 2000; d[(s, i)] = 0`` for 20,000 ``i``: a plan that completes in under a
    second. Each tuple key is written as its text cut at ``KEY_MOST`` (1,000 characters), so
    all 20,000 are alike, and ``result_json._unique`` finds the k-th its name by trying
    ``"<key> #2"``, ``"<key> #3"``, ... ``"<key> #k"``: quadratic, each try hashing a new
    1,000-character text. ``encode`` of 10,000 such keys took 43 s, 20,000 173 s (8,000
    through ``planlang run``: 48 s, the result written twice). The next free number per name
    should be remembered."""
    plan = 's = "x" * 2000\nd = {}\nfor i in range(20000):\n    d[(s, i)] = 0\nresult = d\n'
    done = _cli(tmp_path, plan, "run", timeout=150.0)
    assert done.returncode == 0, done.stderr[-3000:]


def test_planlang_run_writes_result_json_as_json(tmp_path) -> None:
    """``result = [float("nan"), 1e308 * 10, -1e308 * 10]``: ``result_json.dumps`` is
    ``json.dumps`` with ``allow_nan`` left on, so result.json holds ``NaN``, ``Infinity`` and
    ``-Infinity``, which no JSON reader but Python's takes (RFC 8259; ``jq``, JavaScript's
    ``JSON.parse``, Go's ``encoding/json`` refuse the file). Such floats should be written as
    JSON can hold them (a text, or null) or refused with a clean message."""
    done = _cli(tmp_path, 'result = [float("nan"), 1e308 * 10, -1e308 * 10]\n', "run")
    assert done.returncode == 0, done.stderr[-3000:]

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    json.loads(_result_text(tmp_path), parse_constant=refuse)


def test_planlang_run_keeps_every_key_of_the_result(tmp_path) -> None:
    """``result = {chr(55357) + chr(56832): 1, chr(128512): 2}``: two keys in the plan (a
    pair of lone surrogates is a two-character text, not the one-character emoji). Under
    process isolation the result crosses as JSON written by the standard library (orjson
    declines lone surrogates: ``frames.dumps``), as ``"\\ud83d\\ude00"``, which every JSON
    reader reads as the one character U+1F600: the host's copy has one key, ``{"😀": 2}``,
    and the value 1 is lost without a word (a list ``[a, b]`` comes back as two equal texts).
    In one process result.json holds both keys, but as ``"\\ud83d\\ude00"`` and ``"😀"``:
    one key once read. The plan's two keys should be told apart in result.json."""
    done = _cli(tmp_path, "result = {chr(55357) + chr(56832): 1, chr(128512): 2}\n", "run")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(json.loads(_result_text(tmp_path))) == 2, _result_text(tmp_path)


# -- 5. price: agent's other texts are kept in the host, uncounted, under process isolation ---


@pytest.mark.parametrize(
    "loop",
    ['agent("q", system=s + str(i))', 'agent("q", label=s + str(i))',
     'agent("q", data=s + str(i))', 'agent("q", data=[s + str(i)])'],
    ids=["system", "label", "data", "data-list"],
)  # fmt: skip
def test_agents_other_texts_are_held_to_the_memory_limit_under_isolation(loop: str) -> None:
    """Red team 21's prompt loop, through agent's other arguments: ``_Kept`` counts
    ``prompt`` (and phase names, log messages) against ``memory_mb``, but not ``system``,
    ``label`` or ``data``, which the run keeps just as well (the worker's record, its label
    in ``WorkerOrigins.lines`` and the run's events, the request built from the data). ``price``
    of ``Limits(seconds=8, memory_mb=64)`` of ``s = "x" * 999990`` and a loop of
    ``agent("q", system=s + str(i))`` left the host holding 936 MB (traced); ``label=``
    1,420 MB; ``data=`` 885 MB; ``data=[...]`` 870 MB: a plan of 64 MiB, ended only by its
    time limit (prompt= is now held under 300 MB)."""
    got = _python(
        f"""
        import json, tracemalloc
        import planlang
        from planlang import Limits
        src = 's = "x" * 999990\\ni = 0\\nwhile True:\\n    {loop}\\n    i += 1\\n'
        tracemalloc.start()  # what the host holds, not what its allocator keeps back
        r = planlang.price(src, seeds=1, limits=Limits(seconds=8, memory_mb=64))
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        print(json.dumps({{"held_mb": peak, "problems": [p.message for p in r.problems]}}))
        """
    )
    assert got["held_mb"] < 300, got
