"""Breaches the fresh red team found in the checker and the sandbox core, each kept closed.

Each case is the red team's reproducer (docs/SECURITY.md, "Breaches the red team found"). The
ones that could kill or hang the test process if they came back run in a child process.
"""

import json
import subprocess
import sys
import textwrap

import pytest
from plan_rewrite import rewritten

import planlang
from planlang import Limits, PlanLimitError, PlanRuntimeError, Sandbox

SMALL = Limits(seconds=2, steps=2_000_000)


def run_in_child(source: str, timeout: float = 30) -> dict[str, object]:
    """Run a plan in a child process; what ended it, or how the child died."""
    program = textwrap.dedent(f"""
        import json, planlang
        try:
            planlang.Sandbox(limits=planlang.Limits(seconds=2, steps=2_000_000)).run({source!r})
            print(json.dumps({{"ended": "result"}}))
        except planlang.PlanLimitError as error:
            print(json.dumps({{"ended": "limit", "kind": error.kind}}))
        except planlang.PlanError as error:
            print(json.dumps({{"ended": type(error).__name__, "text": str(error)[:300]}}))
    """)
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"the child died: rc={done.returncode} {done.stderr[-500:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "feeder", ["zip(xs, range(1000000))", "iter(xs)", "zip(xs)", "filter(None, xs)"]
)
def test_a_list_extended_by_an_iterator_over_itself_takes_the_metered_loop(feeder):
    # Once list.extend in C: the iterator read what it added (a million-deep tuple chain for
    # no steps, hashed: SIGSEGV), or the list fed on itself until the OS stopped it.
    source = f"xs = [1]\nxs += {feeder}\nh = hash(xs[-1])\nresult = len(xs)\n"
    assert run_in_child(source) == {"ended": "result"}
    assert Sandbox(limits=SMALL).run(source) == 2


def test_a_list_extended_by_a_generator_is_still_charged_and_size_checked():
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(limits=Limits(size=1000)).run("xs = []\nxs += (i for i in range(5000))\n")
    assert caught.value.kind == "size"


@pytest.mark.parametrize(
    "tail",
    [
        "raise ValueError(slice(x))",
        "raise ValueError(KeyError(x))",
        "assert False, {1: x}.values()",
        "raise ValueError(x)",
    ],
)
def test_an_error_carrying_shared_structure_is_described_in_bounded_time(tail):
    source = "x = [1]\nfor i in range(60):\n    x = [x, x]\n" + tail + "\n"
    ended = run_in_child(source, timeout=20)
    assert ended["ended"] == "PlanRuntimeError"
    assert len(str(ended["text"])) < 300


def test_error_messages_keep_what_they_can_show():
    with pytest.raises(PlanRuntimeError) as caught:
        Sandbox().run("raise ValueError(KeyError('k'))\n")
    assert "KeyError('k')" in str(caught.value)


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("x = " + "+".join(["1"] * 2000) + "\n", "PL003"),
        ("f = " + "lambda: " * 600 + "1\n", "PL003"),
        ("xs = [1]\nxs[0:0] += [2]\n", "PL112"),
        ("a = 1\ns = f'" + "{a}" * 1001 + "'\n", "PL005"),
    ],
)
def test_the_checker_answers_with_a_problem_never_an_exception(source, code):
    result = planlang.check(source)
    assert not result.ok
    assert [p.code for p in result.problems] == [code]


def test_a_format_spec_with_a_non_ascii_digit_is_a_plan_error():
    with pytest.raises(PlanRuntimeError, match="ValueError"):
        Sandbox().run('x = f"{1:²}"\n')


def test_products_grow_past_int_bits_only_through_the_guard():
    source = "x = 3\nfor i in range(100):\n    x = x * 65535 * 65535 * 65535\n"
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(limits=Limits(int_bits=1000)).run(source)
    assert caught.value.kind == "size"
    # a product reduced right away stays native and exact
    hashed = "t = 0\nfor c in 'planlang':\n    t = (t * 31 + ord(c)) % 1000003\nresult = t\n"
    expected = 0
    for c in "planlang":
        expected = (expected * 31 + ord(c)) % 1000003
    assert Sandbox(limits=Limits(int_bits=1000)).run(hashed) == expected


def test_f_strings_of_proven_integers_in_binary_are_size_checked():
    fields = "{n:b}" * 20  # 20 x 99,000 characters
    source = f"n = 2 ** 99000\ns = f'{fields}'\n"
    with pytest.raises(PlanLimitError) as caught:
        Sandbox().run(source)
    assert caught.value.kind == "size"


def test_f_strings_of_proven_integers_padded_in_decimal_are_native_and_exact():
    source = "result = []\nfor n in range(200):\n    result.append(f'{n:03d}|{n:x>5}|{n:>8,}')\n"
    assert "_fstr_" not in rewritten(source)
    namespace: dict = {}
    exec(compile(source, "plan.py", "exec"), namespace)  # noqa: S102 - the reference
    assert Sandbox(isolation="inprocess").run(source) == namespace["result"]


def test_f_strings_of_proven_integers_with_a_typed_spec_are_still_size_checked():
    # a width with a non-decimal type is no decimal padding: 20 x 24,750 hex digits
    source = "n = 2 ** 99000\nfor i in range(1):\n    s = f'" + "{n:5x}" * 20 + "'\n"
    assert "_fstr_" in rewritten(source)
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(limits=Limits(size=100_000)).run(source)
    assert caught.value.kind == "size"
