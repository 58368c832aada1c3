"""planlang.check.infer: what the checker proves about names, and that it never proves too much.

Each attack below tries to make a name look like an integer (or the plan's own dict) while it
holds something else; the guards must stay, so the size limit still fires.
"""

import ast

import pytest
from plan_rewrite import rewritten

import planlang
from planlang import Limits, PlanLimitError, Sandbox
from planlang.check.infer import Kinds


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
    return rewritten(source).count("_mul_(")


@pytest.mark.parametrize(
    ("source", "guarded"),
    [
        ("e = [n * n for n in range(1500)]", 0),  # small range variables: native
        # an outer comprehension's variable, read in the comprehension nested in it
        ("g = [[r * c for c in range(12)] for r in range(12)]", 0),
        ("def f():\n    for i in range(9):\n        pass\n    return [i * j for j in range(5)]", 0),
        # ... but not when the scope that owns it binds it any other way, or it is a
        # parameter, a module name (the host's value), a walrus or the inner's own
        ("g = [[r * c for c in range(3)] for r in range(12) for r in range(2**40)]", 1),
        ("g = [[r * c for c in range(3)] for r in range(12) if (r := 'x')]", 1),
        ("def f(i):\n    return [i * j for j in range(5)]", 1),
        (
            "def f():\n    for i in range(9):\n        i = 'x'\n"
            "    return [i * j for j in range(3)]",
            1,
        ),
        ("for i in range(0):\n    pass\ng = [i * j for j in range(5)]", 1),
        ("g = [[(lambda r: r * c)(r) for c in range(3)] for r in range(12)]", 1),
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


# -- strings and numbers: loop items over string lists, sums of numbers ----------------------


def kinds_at(source: str, name: str) -> list:
    """The kind of every read of ``name``, in source order."""
    tree = ast.parse(source)
    kinds = Kinds(tree)
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]  # fmt: skip
    return [kinds.kind(n) for n in sorted(reads, key=lambda n: (n.lineno, n.col_offset))]


def test_a_loop_over_a_list_only_ever_iterated_gives_strings():
    source = (
        "roles = ['a', 'b']\ntasks = [f't{n}' for n in range(3)]\n"
        "for role in roles:\n    for task in tasks:\n        s = f'{role}/{task}'\n"
        "for role, task in [(1, 2)]:\n    pass\n"  # the names are bound otherwise too
    )
    assert kinds_at(source, "roles") == ["strs"] and kinds_at(source, "tasks") == ["strs"]
    assert kinds_at(source, "role") == ["str"] and kinds_at(source, "task") == ["str"]
    assert "_text_" not in rewritten(source) and "_type_" not in rewritten(source)


@pytest.mark.parametrize(
    "source",
    [
        "xs = ['a']\nxs.append(big)\nfor x in xs:\n    s = f'{x}'",  # changed through a method
        "xs = ['a']\nys = xs\nys.append(big)\nfor x in xs:\n    s = f'{x}'",  # an alias
        "xs = ['a']\nkeep(xs)\nfor x in xs:\n    s = f'{x}'",  # handed to a host word
        "xs = ['a']\nxs[0] = big\nfor x in xs:\n    s = f'{x}'",  # an item set
        "xs = ['a']\nxs += [big]\nfor x in xs:\n    s = f'{x}'",  # extended
        "xs = ['a']\nxs = [big]\nfor x in xs:\n    s = f'{x}'",  # rebound to something else
        "def f():\n    xs.append(big)\nxs = ['a']\nf()\nfor x in xs:\n    s = f'{x}'",  # a function
        "for x in ['a']:\n    x = big\n    s = f'{x}'",  # rebound in the body
        "for x in ['a']:\n    for x in [big]:\n        pass\n    s = f'{x}'",  # an inner loop
        "for x in ['a']:\n    def x():\n        pass\n    s = f'{x}'",  # a def
        "for x in ['a']:\n    [(x := big) for i in range(1)]\n    s = f'{x}'",  # a walrus
        "for x in []:\n    pass\ns = f'{x}'",  # read after a loop that may not have run
        "for x in ['a']:\n    pass\nelse:\n    s = f'{x}'",  # the else runs after the loop
        "fs = []\nfor x in ['a']:\n    fs.append(lambda: f'{x}')\nx = big\ns = fs[0]()",  # later
        "for x in [big, 'a']:\n    s = f'{x}'",  # not all strings
        "for x in xs:\n    s = f'{x}'",  # a name the plan never bound (a host value)
    ],
)
def test_a_loop_item_is_priced_unless_every_item_must_be_a_string(source):
    assert "_text_(x)" in rewritten(source)


SHARED = "x = []\nfor i in range(12):\n    x = [x, x]\n"  # 4,096 leaves, a repr of ~16 KB


@pytest.mark.parametrize(
    "plan",
    [
        "xs = ['a']\nys = xs\nys.append(x)\nfor v in xs:\n    s = f'{v}'",
        "for v in ['a']:\n    v = x\n    s = f'{v}'",
        "v = x\nfor v in []:\n    pass\ns = f'{v}'",  # the loop never ran
    ],
)
def test_a_container_posing_as_a_string_is_still_priced(plan):
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(limits=LIMITS).run(SHARED + plan)
    assert caught.value.kind == "size"


def test_a_module_loop_variable_shadowing_a_host_value_is_priced_after_the_loop():
    host = {"v": [["y" * 100] * 50] * 50}  # a repr of ~260 KB, over the size limit
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(host=host, limits=LIMITS).run("for v in []:\n    pass\ns = f'{v}'")
    assert caught.value.kind == "size"
    assert Sandbox(host=host, limits=LIMITS).run("for v in ['a', 'b']:\n    s = f'<{v}>'") is None


def test_number_sums_run_native_and_stay_correct():
    source = (
        "total = 0\ncount = 0\nfor r in rows:\n    total = total + r['n']\n    count += 1\n"
        "    total -= 0.5\nresult = [total, count]\n"
    )
    assert "_add_" not in rewritten(source) and "_inplacevar_" not in rewritten(source)
    rows = [{"n": 1}, {"n": 2.5}, {"n": True}]
    assert Sandbox(host={"rows": rows}).run(source) == [3.0, 3]
    with pytest.raises(planlang.PlanError, match="unsupported operand"):
        Sandbox(host={"rows": [{"n": "text"}]}).run(source)


@pytest.mark.parametrize(
    "plan",
    [
        "t = t + t\nt = t + t",  # read before the plan binds it: the host's string
        "t = 0 if len(s) < 9 else s\nt = t + t\nt = t + t",  # not a number on every path
        "def f(t):\n    t = t + t\n    return t + t\nf(s)",  # a parameter
        "t = 0\nt = s\nt = t + t\nt = t + t",  # rebound to a string
    ],
)
def test_a_string_posing_as_a_number_is_still_size_checked(plan):
    with pytest.raises(PlanLimitError) as caught:
        Sandbox(host={"s": "x" * 3000, "t": "x" * 3000}, limits=LIMITS).run(plan)
    assert caught.value.kind == "size"
