"""planlang.infer: what the checker proves about names, and that it never proves too much.

Each attack below tries to make a name look like an integer (or the plan's own dict) while it
holds something else; the guards must stay, so the size limit still fires.
"""

import ast

import pytest

import planlang
from planlang import Limits, PlanLimitError, Sandbox
from planlang.infer import Kinds


def kinds_of(source):
    tree = ast.parse(source)
    kinds = Kinds(tree)
    return {n.id: kinds.kind(n) for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}  # fmt: skip


def test_integers_and_containers_are_recognised():
    found = kinds_of(
        "n = 0\nd = {}\nxs = []\nfor i in range(3):\n    n = n + i % 7\n    xs.append(n)\n"
        "d[n] = len(xs)\nresult = n\n"
    )
    assert found["n"] == "int" and found["d"] == "dict" and found["xs"] == "list"


@pytest.mark.parametrize(
    "source",
    [
        "n = 0\nn = 'x' * 3\ny = n",  # one binding is a string
        "def f(n):\n    return n\n",  # a parameter
        "for n in ['a']:\n    pass\ny = n",  # a loop over anything but range
        "y = n\nn = 1",  # read before the first assignment
        "if cond:\n    n = 1\ny = n",  # first binding is conditional
        "n = 1\ndel n\ny = n",  # deleted: a read may find something else
        "n = 1\n(n := 'x')\ny = n",  # walrus
        "range = 5\nfor n in range(3):\n    pass\ny = n",  # a rebound builtin is not trusted
        "n = 1\ndef f():\n    return n\n",  # a global read from a function
        "a, n = 1, 2\ny = n",  # unpacking
    ],
)
def test_names_that_are_not_proven_have_no_kind(source):
    found = kinds_of(source)
    assert found.get("n") is None and found.get("y") is None


LIMITS = Limits(size=10_000, steps=100_000, seconds=5)


@pytest.mark.parametrize(
    "source",
    [
        # the loop never runs, so 'n' still holds the host's string when it is multiplied
        "for n in range(0):\n    pass\ns = n * 60000\nt = s * 60000",
        # a host value of the same name as a module integer, read before the assignment
        "s = n * 60000\nn = 1",
        # a function reads the module name before the module assigns it
        "def f():\n    return n * 60000\ns = f()\nn = 1",
        # comprehension reads the module name: a global read, never trusted
        "s = [n * 60000 for i in range(1)]\nn = 1",
    ],
)
def test_guards_stay_where_a_host_value_could_be_read(source):
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(host={"n": "x" * 5000}, limits=LIMITS).run(source)
    assert caught.value.kind == "size"  # the first multiplication was guarded


def test_int_arithmetic_runs_native_and_still_correct():
    source = (
        "def checksum(s):\n    total = 0\n    for ch in s:\n"
        "        total = (total * 31 + ord(ch)) % 1000003\n    return total\n"
        "counts = {}\nfor w in 'a b a'.split():\n    counts[w] = counts.get(w, 0) + 1\n"
        "result = [checksum('hello'), counts, f'{checksum(\"a\"):05d}']\n"
    )
    expected_sum = 0
    for ch in "hello":
        expected_sum = (expected_sum * 31 + ord(ch)) % 1000003
    assert Sandbox().run(source) == [expected_sum, {"a": 2, "b": 1}, "00097"]


def test_squaring_an_integer_is_still_guarded():
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(limits=Limits(int_bits=10_000)).run("x = 3\nfor i in range(40):\n    x = x * x")
    assert caught.value.kind == "size"


def test_host_names_may_not_shadow_builtins():
    with pytest.raises(ValueError, match="shadow the builtin"):
        Sandbox(host={"range": lambda n: ["x" * 1000] * n})


def _guarded_products(source: str) -> int:
    from planlang.policy import PlanPolicy

    tree = ast.parse(source)
    policy = PlanPolicy()
    policy.kinds = Kinds(tree)
    policy.visit(tree)
    return ast.unparse(tree).count("_mul_(")


@pytest.mark.parametrize(
    ("source", "guarded"),
    [
        ("e = [n * n for n in range(1500)]", 0),  # small range variables: native
        ("def f():\n    for i in range(9):\n        x = i * i + 3\n    return x", 0),
        ("e = [n * n for n in range(2**40)]", 1),  # bound not a small constant
        ("def f(k):\n    return [j * j for j in range(k)]", 1),  # bound not a constant
        ("def f():\n    for i in range(5):\n        i = i * i\n    return i", 1),  # rebound
        ("def f():\n    for i in range(5):\n        y = (i := 2**64) * i\n    return y", 1),
        ("def f():\n    for i in range(5):\n        del i\n        x = i * i", 1),
        ("x = 3\nfor i in range(10):\n    x = x * 65535", 1),  # grows every step
        ("t = 0\nfor c in 'ab':\n    t = (t * 31 + ord(c)) % 1000003", 0),  # reduced at once
    ],
)
def test_products_stay_native_only_where_they_cannot_grow(source, guarded):
    assert _guarded_products(source) == guarded


def test_a_rebound_range_is_not_trusted_for_small_products():
    source = "range = lambda n: [2**4000]\nfor i in range(3):\n    x = i * i\n"
    assert not planlang.check(source).ok or _guarded_products(source) == 1
