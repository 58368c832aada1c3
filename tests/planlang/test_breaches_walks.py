"""Breaches of the red team's second table (notes/breaches.md #4, 6, 7, 10, 11, 11b, 13, 15),
each of which ran past its limits, and the plain uses of the guarded names that must keep
working (``isinstance(x, str)``, ``key=str``, ``dict.fromkeys``).

Attacks that used to take gigabytes or minutes run in a child process with an address-space
cap and a timeout, so a regression fails the test instead of taking pytest down.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from planlang import Limits, PlanLimitError, Sandbox
from planlang.sandbox.walks import text_size

FAST = Limits(seconds=5, steps=2_000_000)


def run(source: str, limits: Limits = FAST) -> object:
    return Sandbox(limits=limits).run(source)


def run_in_child(source: str, limits: dict[str, int], address_mb: int = 1500) -> dict[str, str]:
    """Run a plan in a fresh interpreter with its address space capped; how it ended."""
    code = textwrap.dedent(f"""
        import json, resource, sys
        source = sys.stdin.read()
        resource.setrlimit(resource.RLIMIT_AS, ({address_mb} << 20, {address_mb} << 20))
        from planlang import Limits, PlanError, PlanLimitError, Sandbox
        try:
            Sandbox(limits=Limits(**{limits!r})).run(source)
            print(json.dumps({{"end": "ok"}}))
        except PlanLimitError as error:
            print(json.dumps({{"end": "limit", "kind": error.kind, "message": str(error)}}))
        except PlanError as error:
            print(json.dumps({{"end": type(error).__name__, "message": str(error)}}))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def limit_kind(source: str, limits: Limits = FAST) -> str:
    with pytest.raises(PlanLimitError) as caught:
        run(source, limits)
    return caught.value.kind


# -- 4: exponential text through str and repr ------------------------------------------------

DOUBLING = {
    "repr of a str": 's = "\\\\"\nwhile True:\n    s = repr(s)\n',
    "str through an alias": 's = "\\\\"\nf = str\nwhile True:\n    s = f([s])\n',
    "str with a starred argument": 's = "\\\\"\nwhile True:\n    s = str(*[[s]])\n',
    "str of a list": 's = "\\\\"\nwhile True:\n    s = str([s])\n',
    "str in map": 's = "\\\\"\nwhile True:\n    s = list(map(str, [[s]]))[0]\n',
}


@pytest.mark.parametrize("source", DOUBLING.values(), ids=DOUBLING.keys())
def test_doubling_text_ends_at_the_size_limit(source: str) -> None:
    ended = run_in_child(source, {"seconds": 2, "memory_mb": 256})
    assert ended["end"] == "limit" and ended["kind"] == "size", ended


def test_the_guarded_str_and_int_still_work_as_types() -> None:
    result = run(
        "a = [isinstance('x', str), isinstance(3, (str, int)), isinstance(3, str),\n"
        "     isinstance([], (tuple, list)), isinstance({}, dict), isinstance(set(), frozenset)]\n"
        "b = sorted([10, 9, 100], key=str)\n"
        "c = list(map(str, [1, 2])) + list(map(int, ['3', '4']))\n"
        "d = [repr(str), str(int), str(), str(5), str('x'), str([1, 'a']), repr(dict)]\n"
        "e = [int(), int(2.5), int(' 42 '), int('ff', 16), int('0x10', 0), int('1_0')]\n"
        "print(str, list)\n"
        "result = [a, b, c, d, e, callable(str)]\n"
    )
    assert result == [
        [True, True, False, True, True, False],
        [10, 100, 9],
        ["1", "2", 3, 4],
        ["<class 'str'>", "<class 'int'>", "", "5", "x", "[1, 'a']", "<class 'dict'>"],
        [0, 2, 42, 255, 16, 10],
        True,
    ]


def test_dict_fromkeys_works_and_other_type_attributes_are_refused() -> None:
    assert run("result = dict.fromkeys('ab', 0)\n") == {"a": 0, "b": 0}
    with pytest.raises(Exception, match="'append' is not an attribute a plan may use on the"):
        run("f = list.append\n")


# -- 6, 7: integers past int_bits ---------------------------------------------------------------


def test_modular_pow_with_a_negative_exponent_is_bounded() -> None:
    ended = run_in_child("m = int('f' * 9999 + 'd', 16)\nr = pow(3, -m, m)\n", {"seconds": 2})
    assert ended["end"] == "limit" and ended["kind"] == "size", ended
    assert run("result = pow(3, -1, 7)\n") == 5


@pytest.mark.parametrize(
    "source",
    ["a = int('f' * 999999, 16)\n", "a = int('1' * 199999, base=2)\n", "a = int('7' * 60000, 0)\n"],
)
def test_int_of_text_respects_int_bits(source: str) -> None:
    assert limit_kind(source, Limits(int_bits=100_000)) == "size"


def test_int_of_decimal_text_respects_a_small_int_bits() -> None:
    assert limit_kind("a = int('9' * 4000)\n", Limits(int_bits=1_000)) == "size"
    assert run("result = int('9' * 300)\n", Limits(int_bits=1_000)) == int("9" * 300)


# -- 10: the sandbox's own Python builtins are metered in map/filter/key= --------------------


CONSUMED = {  # each walks the whole map: 300,000 calls of a sandbox builtin
    "print": "any(map(print, r))",
    "repr": "all(map(repr, r))",
    "str": "all(map(str, r))",
    "int": "max(map(int, r))",
    "range": "max(map(len, map(range, [1] * 300000)))",
}


@pytest.mark.parametrize("expression", CONSUMED.values(), ids=CONSUMED.keys())
def test_map_of_a_sandbox_builtin_is_charged_per_call(expression: str) -> None:
    source = f"r = range(300000)\nx = {expression}\n"
    ended = run_in_child(source, {"seconds": 30, "steps": 100_000})
    assert ended["end"] == "limit" and ended["kind"] == "steps", ended


def test_plan_functions_in_map_and_key_still_run() -> None:
    result = run("def sq(x):\n    return x * x\nresult = [list(map(sq, [1, 2])), "
                 "sorted([3, 1, 2], key=lambda v: -v), list(filter(None, [0, 1]))]\n")  # fmt: skip
    assert result == [[1, 4], [3, 2, 1], [1]]


# -- 11: constructors charge their size and refuse inputs past Limits.size --------------------

CONSTRUCTORS = ["list(r)", "tuple(r)", "set(r)", "frozenset(r)", "dict.fromkeys(r)",
                "dict(zip(r, r))", "list(iter(r))", "dict(d)"]  # fmt: skip


@pytest.mark.parametrize("expression", CONSTRUCTORS)
def test_straight_line_constructors_are_charged(expression: str) -> None:
    # 40 copies of 200,000 items: 195 steps each, and a plan without a loop reaches the limit
    source = "r = range(200000)\nd = dict.fromkeys(r)\n" + f"a = {expression}\n" * 40
    assert limit_kind(source, Limits(steps=2_000)) == "steps"


def test_a_loop_of_fromkeys_reaches_the_clock() -> None:
    ended = run_in_child("r = range(1000000)\nwhile True:\n    a = dict.fromkeys(r)\n",
                         {"seconds": 30, "steps": 5_000})  # fmt: skip
    assert ended["end"] == "limit" and ended["kind"] == "steps", ended


def test_uncharged_copies_end_at_the_memory_limit() -> None:
    ended = run_in_child(
        "r = range(1000000)\nkeep = [dict.fromkeys(r) for i in range(40)]\n",
        {"seconds": 30, "memory_mb": 64},
        address_mb=4000,
    )
    assert ended["end"] == "limit" and ended["kind"] == "memory", ended


@pytest.mark.parametrize(
    "expression", ["list(xs)", "tuple(xs)", "set(xs)", "dict.fromkeys(xs)", "dict(pairs)"]
)
def test_constructors_refuse_inputs_past_the_size_limit(expression: str) -> None:
    source = (
        "xs = []\nfor i in range(900):\n    xs.append(i)\nfor i in range(900):\n"
        "    xs.append(-i)\npairs = [(x, x) for x in xs]\n" + f"a = {expression}\n"
    )
    assert limit_kind(source, Limits(size=1_000)) == "size"


# -- 11b: function names count in the text of a function ------------------------------------


def test_text_size_counts_the_names_of_functions() -> None:
    namespace: dict[str, object] = {}
    exec("def " + "f" * 100_000 + "(): pass", namespace)  # noqa: S102 - a test fixture
    function = namespace["f" * 100_000]
    assert text_size([function] * 20, 10**9) >= 20 * 100_000


def test_repr_of_long_function_names_is_refused_before_it_is_made() -> None:
    name = "f" * 100_000
    source = f"def {name}():\n    pass\nxs = [{name}] * 9000\ns = repr(xs)\n"
    ended = run_in_child(source, {"seconds": 5, "memory_mb": 256}, address_mb=600)
    assert ended["end"] == "limit" and ended["kind"] == "size", ended


# -- 13: case changes that make three characters of one ---------------------------------------

CASES = {
    "upper": '"\\ufb03" * 900',
    "swapcase": '"\\ufb03" * 900',
    "lower": '"\\u0130" * 900',
    "casefold": '"\\u00df" * 900',
    "title": '"\\ufb03 " * 450',
    "capitalize": '"a" + "\\u0130" * 899',
}


@pytest.mark.parametrize("method", CASES)
def test_case_changes_are_size_checked(method: str) -> None:
    source = f"s = {CASES[method]}\nt = s.{method}()\n"
    assert limit_kind(source, Limits(size=1_000)) == "size"
    assert run(f"result = 'aB'.{method}()\n") == getattr("aB", method)()


# -- 15: set and dict methods that walk many arguments ----------------------------------------

WALKING = [
    "s.update(*rs)", "t = s.union(*rs)", "t = s.intersection(*rs)", "t = s.difference(*rs)",
    "s.intersection_update(*rs)", "s.difference_update(*rs)", "t = f.union(*rs)",
    "t = s.issubset(rs[0])", "t = s.isdisjoint(rs[0])", "d.update(pairs)",
]  # fmt: skip


@pytest.mark.parametrize("call", WALKING)
def test_methods_walking_their_arguments_are_charged_by_size(call: str) -> None:
    source = (
        "rs = [range(i, i + 100000) for i in range(30)]\ns = {1, 2}\nf = frozenset(s)\nd = {}\n"
        "pairs = list(zip(rs[0], rs[0]))\n" + f"{call}\n"
    )
    assert limit_kind(source, Limits(steps=6_000)) == "steps"


def test_set_update_and_union_stop_when_the_result_passes_size() -> None:
    assert limit_kind("s = set()\ns.update(range(800), range(800, 1600))\n",
                      Limits(size=1_000)) == "size"  # fmt: skip
    assert limit_kind("t = {0}.union(range(800), range(800, 1600))\n", Limits(size=1_000)) == (
        "size"
    )
    assert limit_kind("s = set(range(800))\ns.symmetric_difference_update(range(800, 1600))\n",
                      Limits(size=1_000)) == "size"  # fmt: skip
    result = run(
        "s = {1}\ns.update([2], range(3, 5))\nf = frozenset({1})\nd = {}\nd.update({1: 2}, x=3)\n"
        "result = [sorted(s), f.union([2], {3}), sorted(s.intersection([1, 2], range(5))), d,\n"
        "          s.issubset(range(10)), sorted(s.difference([1], [2]))]\n"
    )
    assert result == [[1, 2, 3, 4], frozenset({1, 2, 3}), [1, 2], {1: 2, "x": 3}, True, [3, 4]]
