"""planlang.sandbox.walks: text and C loops over shared structure are priced before C walks them.

The attacks run in a child process with a timeout, so a regression fails the test instead of
hanging pytest.
"""

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planlang import Limits, PlanLimitError, Sandbox
from planlang.sandbox.guards import Guards
from planlang.sandbox.limits import Meter
from planlang.sandbox.walks import text_size

LIMITS = Limits(seconds=2, size=10**6)
DOUBLED = "x = [1]\nfor i in range(60):\n    x = [x, x]\n"  # 2**60 leaves, 61 small lists
CUBE = "a = [1] * 1000\nb = [a] * 1000\nc = [b] * 1000\n"  # a 10**9-item repr


def run_in_child(source: str, steps: int = 5_000_000) -> dict[str, str]:
    """Run a plan under LIMITS in a fresh interpreter; what it ended with, as a dict."""
    code = textwrap.dedent(f"""
        import json
        from planlang import Limits, PlanLimitError, Sandbox
        try:
            Sandbox(limits=Limits(seconds=2, size=10**6, steps={steps})).run({source!r})
            print(json.dumps({{"end": "ok"}}))
        except PlanLimitError as error:
            print(json.dumps({{"end": "limit", "kind": error.kind, "message": str(error)}}))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(source: str, limits: Limits = LIMITS) -> tuple[object, list[str]]:
    box = Sandbox(limits=limits)
    return box.run(source), box.printed


# -- attacks that used to run past every limit -------------------------------------------------

TEXT_ATTACKS = {
    "repr of a 10**9-item cube": CUBE + "s = repr(c)\n",
    "repr of a doubled list": DOUBLED + "s = repr(x)\n",
    "print": DOUBLED + "print(x)\n",
    "print of several": DOUBLED + "print(1, 'a', x)\n",
    "print's sep": DOUBLED + "print(1, 2, sep=x)\n",
    "%s of a tuple of it": DOUBLED + "s = '%s' % (x,)\n",
    "%r of it alone": DOUBLED + "s = '%r' % x\n",
    "%(key)s of a dict": DOUBLED + "s = '%(k)s' % {'k': x}\n",
    "%s of a dict alone": DOUBLED + "s = '%s' % {'k': x}\n",
    "join of map(str)": DOUBLED + "s = ''.join(map(str, [x]))\n",
    "join of map(repr)": CUBE + "s = ', '.join(map(repr, [a, c]))\n",
    "sorted with key=str": DOUBLED + "s = sorted([x, x], key=str)\n",
    "f-string with a wide spec": DOUBLED + "s = f'{x!r:>5000}'\n",
    "doubled dict": "d = {}\nfor i in range(60):\n    d = {1: d, 2: d}\ns = repr(d)\n",
    "doubled tuple in an exception": DOUBLED + "s = repr([ValueError(x)])\n",
    "dict items view": DOUBLED + "d = {1: x}\ns = repr(d.items())\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("source", TEXT_ATTACKS.values(), ids=TEXT_ATTACKS.keys())
def test_text_of_shared_structure_stops_at_the_size_limit(source):
    ended = run_in_child(source)
    assert ended["end"] == "limit" and ended["kind"] == "size", ended


BIG = "big = list(range(10**5))\n"
LOOP_ATTACKS = {
    "sum(map(sum, ...))": "result = sum(map(sum, [range(1000)] * 100000))\n",
    "max(map(sum, ...))": "result = max(map(sum, [range(1000)] * 100000))\n",
    "sorted(key=big.count)": BIG + "r = sorted(range(100000), key=big.count)\n",
    "list(map(list, [big] * n))": BIG + "r = list(map(list, [big] * 10**4))\n",
    "any(map(big.count, ...))": BIG + "r = any(map(big.count, range(-(10**5), 0)))\n",
    "filter(big.count, ...)": BIG + "r = list(filter(big.count, range(-(10**5), 0)))\n",
    "min over repeated sorted": BIG + "r = min(map(sorted, [big[::-1]] * 10**5))\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("source", LOOP_ATTACKS.values(), ids=LOOP_ATTACKS.keys())
def test_c_loops_over_shared_structure_are_charged(source):
    ended = run_in_child(source, steps=500_000)  # list(map(list, ...)) holds 8 MB a step
    assert ended["end"] == "limit" and ended["kind"] in ("steps", "seconds", "memory"), ended


def test_a_sized_c_loop_is_charged_steps_in_proportion():
    limits = Limits(steps=10_000)
    run("big = list(range(100000))\nr = sum(big)\n", limits)  # 100,000 >> 4 = 6,250 steps
    with pytest.raises(PlanLimitError) as caught:
        run("big = list(range(100000))\nr = sum(big) + sum(big)\n", limits)
    assert caught.value.kind == "steps"


@pytest.mark.parametrize("call", ["repr(x)", "print(x)", "'%s' % (x,)", "''.join(map(str, [x]))"])
def test_text_is_refused_before_it_is_made(call):
    # 2**20 leaves: small enough to make if unguarded, so the message tells who stopped it
    source = "x = [1]\nfor i in range(20):\n    x = [x, x]\ns = " + call + "\n"
    with pytest.raises(PlanLimitError) as caught:
        run(source)
    assert caught.value.kind == "size"
    assert "would make" in str(caught.value)


@pytest.mark.parametrize(
    "expression",
    [
        "str(x)",
        "f'{x}'",
        "f'{x!r}'",
        "f'a{x}b{1}'",
        "f'{name}: {x}'",  # several bare names share one test
        "f'{x}{name}{x}'",
        "f'{name}{n}{x:>3}'",
        "f'{name}{[x][0]}'",  # a field that is not a bare name
        "f'{name}{n:{x}}'",  # a field inside a format spec
    ],
)
def test_str_and_f_string_fields_are_priced_before_they_are_made(expression):
    prelude = "name = 'a'\nn = 3\nx = [1]\nfor i in range(20):\n    x = [x, x]\n"
    source = prelude + "s = " + expression + "\n"
    with pytest.raises(PlanLimitError) as caught:
        run(source)
    assert "of a list" in str(caught.value)  # the walk's message, not the f-string's afterwards


def test_f_strings_with_several_fields_evaluate_each_field_once():
    calls = []

    def count(value):
        calls.append(value)
        return value

    source = "a = 'x'\nb = [1, 2]\nresult = f'{a}{count(1)}{b}{a!r}:{count(2):>4}'\n"
    assert Sandbox(host={"count": count}).run(source) == "x1[1, 2]'x':   2"
    assert calls == [1, 2]


def test_list_sort_charges_its_key_calls():
    guards = Guards(Meter(Limits(steps=10_000)), {})
    big = list(range(10**4))
    xs = list(range(200, 0, -1))
    guards.walks.sized_sort(xs)(key=lambda v: -v, reverse=True)  # a plan function charges itself
    assert xs == list(range(1, 201))
    with pytest.raises(PlanLimitError) as caught:
        guards.walks.sized_sort(xs)(key=big.count)  # 200 calls x 625 steps
    assert caught.value.kind == "steps"


def test_the_list_sort_method_is_guarded_in_a_plan():
    source = "big = list(range(10**4))\nxs = list(range(200))\nxs.sort(key=big.count)\n"
    with pytest.raises(PlanLimitError):
        run(source, Limits(steps=10_000))


# -- ordinary use is unchanged ---------------------------------------------------------------


def test_ordinary_text_is_unchanged():
    source = textwrap.dedent("""
        d = {"a": [1, 2.5, None], "b": (True, "x")}
        rows = [list(range(20)), ["s"] * 20]
        print(d, rows[0], sep=" | ")
        result = [repr(d), str(rows), f"{d}", f"{d!r:>80}", "%s/%r" % (d, "q"), repr(rows),
                  "%(a)s" % d, "-".join(map(str, rows)), repr(1), repr("é")]
    """)
    d = {"a": [1, 2.5, None], "b": (True, "x")}
    rows = [list(range(20)), ["s"] * 20]
    result, printed = run(source)
    assert result == [repr(d), str(rows), f"{d}", f"{d!r:>80}", f"{d}/'q'", repr(rows),
                      str(d["a"]), "-".join(map(str, rows)), "1", "'é'"]  # fmt: skip
    assert printed == [f"{d} | {rows[0]}"]


def test_ordinary_loops_are_unchanged():
    source = textwrap.dedent("""
        xs = [(i * 7919) % 10007 for i in range(10000)]
        result = [sum(xs), sorted(xs)[:3], sorted(xs, key=str, reverse=True)[:2], min(xs),
                  max(xs, key=lambda v: -v), min(3, 1, 2), max([], default=None),
                  any(x > 10000 for x in xs), all(xs), list(filter(None, [0, 1, 2])),
                  sum([[1], [2]], []), list(map(str, [[1], 2])), isinstance("a", str),
                  sorted({3: 1, 1: 2}), max("abc"), sum(map(len, ["ab", "c"]))]
    """)
    xs = [(i * 7919) % 10007 for i in range(10000)]
    result, _ = run(source)
    assert result == [sum(xs), sorted(xs)[:3], sorted(xs, key=str, reverse=True)[:2], min(xs),
                      max(xs, key=lambda v: -v), 1, None, any(x > 10000 for x in xs), all(xs),
                      [1, 2], [1, 2], ["[1]", "2"], True, [1, 3], "c", 3]  # fmt: skip


def test_a_cycle_prints_as_python_prints_it():
    result, printed = run("a = [1]\na.append(a)\nd = {}\nd['me'] = d\nprint(a, d)\nresult = 1")
    a: list[object] = [1]
    a.append(a)
    d: dict[str, object] = {}
    d["me"] = d
    assert printed == [f"{a} {d}"]


# -- the estimate ----------------------------------------------------------------------------


def test_the_estimate_prices_shared_parts_every_time_and_stops_early():
    a = [1] * 1000
    c = [[a] * 1000] * 1000
    assert text_size(c, 10**18) >= 3 * 10**9
    assert text_size(c, 10**6) > 10**6
    x: list[object] = [1]
    for _ in range(60):
        x = [x, x]
    assert text_size(x, 10**30) >= 2**60


def test_the_estimate_does_not_reuse_a_part_priced_inside_a_cycle():
    a: list[object] = []
    b: list[object] = [a]
    a.append(b)
    for value in ([a, b], {1: a, 2: (b, a)}, [b, a, b]):
        assert text_size(value, 10**9) >= len(repr(value))


SCALARS = st.one_of(
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
)
# A plan that builds aliased (and sometimes cyclic) data: each statement makes v<k> from
# values made before it, so parts are shared.
STATEMENT = st.tuples(
    st.sampled_from(["list", "tuple", "dict", "times", "cycle", "double"]),
    st.lists(st.integers(0, 100), min_size=1, max_size=3),
    SCALARS,
)


def _plan(statements: list[tuple[str, list[int], object]]) -> str:
    lines = ["v0 = " + repr(list(range(20)))]
    for k, (kind, picks, scalar) in enumerate(statements, start=1):
        parts = [f"v{p % k}" for p in picks]
        if kind == "list":
            lines.append(f"v{k} = [{', '.join(parts)}, {scalar!r}]")
        elif kind == "tuple":
            lines.append(f"v{k} = ({', '.join(parts)}, {scalar!r})")
        elif kind == "dict":
            lines.append(f"v{k} = {{{', '.join(f'{i}: {p}' for i, p in enumerate(parts))}}}")
        elif kind == "times":
            lines.append(f"v{k} = [{parts[0]}] * {len(picks) * 3}")
        elif kind == "double":  # the aliasing that doubles the text each time
            lines.append(f"v{k} = [v{k - 1}, v{k - 1}]")
        else:
            lines.append(f"v{k} = [{scalar!r}]\nv{k}.append(v{k})\nv{k}.append({parts[0]})")
    return "\n".join(lines) + f"\nv = v{len(statements)}\n"


@settings(max_examples=100, deadline=None)
@given(st.lists(STATEMENT, min_size=1, max_size=12))
def test_guarded_text_equals_plain_text_within_the_limit(statements):
    limits = Limits(size=4_000)
    source = _plan(statements) + "result = [repr(v), '%s' % (v,), f'{v!r:>1001}']\nprint(v)\n"
    plain: dict[str, object] = {}
    exec(_plan(statements), plain)  # noqa: S102 - our own generated source
    expected = repr(plain["v"])
    assert text_size(plain["v"], 10**12) >= len(expected)
    try:
        result, printed = run(source, limits)
    except PlanLimitError as error:
        assert error.kind == "size" and len(f"{expected:>1001}") > limits.size // 2, error
        return
    assert result == [expected, expected, f"{expected:>1001}"]
    assert printed == [expected]
