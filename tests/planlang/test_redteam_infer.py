"""Red team of check.infer's proofs of numbers ("num") and string loop items ("strs"/"str").

A proof lets the policy skip a guard: ``+``/``-`` with a proven number runs native, and an
f-string field proven to be a number or a string is not priced by ``_text_``. Each attack below
tries to make a proven name hold something else at that moment (a string or a list to grow
natively, a shared container whose text is exponentially larger than itself) or to make the
rewrite compute something plain CPython does not. Every test pins the exact outcome: the guard
still in the rewritten code, the size limit firing, or CPython's own answer.

The first group are breaches found here (each failed before its fix in planlang/infer.py): a
module name's kind rested on another module name that may still hold the host's value, and a
module loop variable over a small ``range`` was trusted for native products after a loop that
never ran.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from plan_rewrite import rewritten

import planlang
from planlang import Limits, PlanError, PlanLimitError, Sandbox
from planlang.check.infer import Kinds

LIMITS = Limits(size=10_000, steps=100_000, seconds=5)
# A list of 4,096 leaves made of 12 shared lists: its text (~16 KB) is past LIMITS.size.
SHARED = "x = []\nfor i in range(12):\n    x = [x, x]\n"
LONG = "x" * 3000  # doubled twice it passes LIMITS.size
NESTED = [[["y" * 100] * 50] * 50]  # copied in as 2,551 items; its text is ~260 KB


def run(source: str, host: dict | None = None) -> object:
    assert planlang.check(source).ok, planlang.check(source).problems
    return Sandbox(host=host or {}, limits=LIMITS).run(source)


def size_error(source: str, host: dict | None = None) -> PlanLimitError:
    with pytest.raises(PlanLimitError) as caught:
        run(source, host)
    assert caught.value.kind == "size"
    return caught.value


def cpython(source: str, host: dict | None = None) -> object:
    namespace = dict(host or {})
    exec(compile(source, "plan.py", "exec"), namespace)  # noqa: S102 - the reference
    return namespace.get("result")


# -- breaches (fixed in planlang/infer.py) ------------------------------------------------


# Each plan gives the name a second binding (a constant, a loop over strings) so the proof did
# not hang on the order in which the solver happened to visit names (see the hash-seed test).


def test_a_name_copied_from_a_host_value_is_not_a_number_even_if_the_plan_binds_that_later():
    # 'a = b' read the host's string; 'b = 0' made b look like an int while solving, so a did too
    plan = "a = b\nb = 0\nfor i in range(12):\n    a = a + a\nresult = len(a)\na = 0"
    assert "_add_(a, a)" in rewritten(plan)
    size_error(plan, {"b": LONG})  # it made a string of 12 MB, natively


def test_the_same_through_augmented_assignment():
    plan = "a = b\nb = 0\nfor i in range(12):\n    a += a\nresult = len(a)\na = 0"
    assert "_inplacevar_('+=', a, a)" in rewritten(plan)
    size_error(plan, {"b": LONG})


def test_a_name_copied_from_a_host_loop_variable_is_not_a_string():
    # 'y = z' read the host's z; z's only bindings are a loop over strings
    plan = "y = z\nresult = len(f'{y}')\nfor z in ['a']:\n    pass\nfor y in ['b']:\n    pass"
    assert "_text_(y)" in rewritten(plan)
    error = size_error(plan, {"z": NESTED})
    assert "The text of a ReadOnlyList" in str(error)  # priced before any text was made


def test_a_name_copied_after_a_loop_that_never_ran_is_not_a_string():
    plan = "for k in []:\n    pass\nv = k\nresult = len(f'{v}')\nfor v in ['b']:\n    pass"
    assert "_text_(v)" in rewritten(plan)
    error = size_error(plan, {"k": NESTED})
    assert "The text of a ReadOnlyList" in str(error)


def test_a_module_loop_variable_is_not_a_small_factor_after_a_loop_that_never_ran():
    plan = "for i in range(0):\n    pass\nx = i * 1000\nresult = len(x)"
    assert "_mul_(i, 1000)" in rewritten(plan)
    size_error(plan, {"i": "x" * 9000})


def test_a_module_loop_variable_squared_after_a_loop_that_never_ran_is_guarded():
    plan = "for i in range(0):\n    pass\nfor j in range(0):\n    pass\nx = i * j"
    assert "_mul_(i, j)" in rewritten(plan)
    size_error(plan, {"i": "x" * 200, "j": 200})


def test_a_name_copied_from_a_host_dict_is_not_the_plans_own_dict():
    plan = "d = h\nh = {}\nd['k'] = 1"
    assert "_write_(d)" in rewritten(plan)
    with pytest.raises(PlanError, match="read-only"):
        run(plan, {"h": {"a": 1}})


def test_loop_items_still_prove_kinds_inside_their_own_loop():
    # the fix must not lose what the body of a module loop proves about its variable
    plan = "n = 0\nfor i in range(3):\n    for j in range(4):\n        n = n + i * j % 7\n"
    code = rewritten(plan)
    assert "_add_" not in code and "_mul_" not in code and "_mod_" not in code
    assert run(plan + "result = n") == cpython(plan + "result = n")


KIND_OF_Y = (
    "import ast\nfrom planlang.check.infer import Kinds\n"
    "tree = ast.parse('def f():\\n    z = 0\\n    y = z\\n    return f\"{y}\"\\n')\n"
    "kinds = Kinds(tree)\n"
    "print([kinds.kind(n) for n in ast.walk(tree) if isinstance(n, ast.Name)"
    " and n.id == 'y' and isinstance(n.ctx, ast.Load)])\n"
)


def test_the_kinds_do_not_depend_on_the_hash_seed():
    # A name was given up when it was visited before the names it depends on, in set order.
    seen = set()
    for seed in ("0", "2", "4", "7"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", KIND_OF_Y], capture_output=True, text=True, env=env, check=True
        )
        seen.add(done.stdout.strip())
    assert seen == {"['int']"}


# -- numbers: a name proven a number holds a sequence ---------------------------------------

NUMBER_ATTACKS = [
    # read before the plan binds it: the host's string
    ("t = t * 1\nt = t + t\nt = t + t", "t"),
    # the first binding is conditional
    ("if len(s) < 1:\n    t = 0\nt = t + t\nt = t + t", "t"),
    # the first binding sits in a loop body, which may never run
    ("for i in range(0):\n    t = 0\nt = t + t\nt = t + t", "t"),
    # deleted, then read: the host's value is gone, but so is the proof
    ("t = 0\ndel t\nt = s\nt = t + t\nt = t + t", "t"),
    # unpacking binds the name to whatever the value holds
    ("t = 0\nt, u = s, 1\nt = t + t\nt = t + t", "t"),
    # a walrus anywhere binds in the enclosing scope
    ("t = 0\nk = [(t := s) for i in range(1)]\nt = t + t\nt = t + t", "t"),
    # a parameter holds what the caller passes
    ("def f(t):\n    t = t + 0 if len(t) < 0 else t\n    return t + t\nr = f(s) + f(s)", "t"),
    # one branch of a conditional expression is not a number
    ("t = 0\nt = 1 if len(s) < 0 else s\nt = t + t\nt = t + t", "t"),
    # a function's result has no kind, even if it returns numbers on other paths
    ("def f(k):\n    return 0 if k else s\nt = f(0)\nt = t + t\nt = t + t", "t"),
    # sum(), max(), dict.get defaults: the result of a call has no kind
    ("t = max([s])\nt = t + t\nt = t + t", "t"),
    ("t = {'k': s}.get('k', 0)\nt = t + t\nt = t + t", "t"),
    ("t = sum([[1] * 2000, [2] * 2000], [])\nt = t + t\nt = t + t", "t"),
    # a lambda's body reads the module name as a global: no kind there
    ("t = 0\ng = lambda: t + t\nt = s\nr = g() + g()", "t"),
    # a comprehension's body reads the outer name as a global too
    ("t = 0\nt = s\nr = [t + t for i in range(1)][0]\nr = r + r", "t"),
    # a number whose binding is a product of host values is no number
    ("t = s * 1\nt = t + t\nt = t + t", "t"),
    # a rebound builtin: 'len' is then no longer trusted to return an int
    ("len = lambda v: v\nt = len(s)\nt = t + t\nt = t + t", "t"),
    # a loop variable over a rebound 'range'
    ("range = lambda n: [s]\nfor t in range(1):\n    t = t + t\n    t = t + t", "t"),
    # a name bound only in terms of itself at module level reads the host's value first
    ("t = t - 0 if len(t) < 0 else t\nt = t + t\nt = t + t", "t"),
]


@pytest.mark.parametrize(("plan", "name"), NUMBER_ATTACKS)
def test_a_sequence_posing_as_a_number_is_still_size_checked(plan, name):
    assert f"_add_({name}, {name})" in rewritten(plan) or "_add_(r, r)" in rewritten(plan)
    size_error(plan, {"s": LONG, "t": LONG})


def test_a_number_name_in_a_function_cannot_be_read_before_its_binding():
    # a local bound only to numbers: reading it earlier raises instead of seeing a host value
    plan = "def f():\n    r = t + t\n    t = 0\n    return r\nresult = f()"
    assert "t + t" in rewritten(plan)  # proven: every value t can ever hold is a number
    with pytest.raises(PlanError, match="UnboundLocalError|referenced before assignment"):
        run(plan, {"t": LONG})


def test_a_number_proven_through_a_cycle_never_holds_a_sequence():
    # a and b are bound only in terms of each other: neither can ever be bound, so no value
    plan = "def f(s):\n    for i in range(2):\n        a = b + 1\n        b = a + s\n    return a"
    with pytest.raises(PlanError, match="UnboundLocalError|referenced before assignment"):
        run(plan + "\nresult = f('x')")


# -- numbers: the native sums compute what CPython computes ---------------------------------

SUMS = [
    "t = 0\nfor v in [1, 2.5, True, -3]:\n    t = t + v\nresult = t",
    "t = 0\nt = t + 1j\nt = t - 2\nt -= 0.5j\nresult = f'{t} {t == -2 + 0.5j}'",  # complex
    "t = True\nt = t + True\nt += False\nresult = [t, isinstance(t, bool), f'{t}']",  # an int
    "t = 1e308\nt = t + 1e308\nresult = [t, f'{t}', f'{t - t}']",  # inf, nan
    "t = 0\nfor i in range(3):\n    t -= i\n    t += 0.25\nresult = f'{t} {-t}'",
    "t = 2 ** 200\nt = t + t\nresult = f'{t}'",  # big integers: their decimal text is short
    "def f(k):\n    t = 0\n    if k:\n        t = t + f(k - 1)\n    return t + k\nresult = f(5)",
    "t = 0\nfor w in ['ab', 'c']:\n    t = t + len(w)\nresult = [t, f'{t:>5}']",
]


@pytest.mark.parametrize("plan", SUMS)
def test_native_sums_compute_what_cpython_computes(plan):
    assert run(plan) == cpython(plan)


@pytest.mark.parametrize(
    "other",
    [
        *("'text'", "[1]", "(1,)", "{1: 2}", "{1}", "{1: 2}.keys()", "None", "str", "len"),
        *("range(3)", "list[int]", "ValueError('x')", "map(len, [])", "slice(1)", "frozenset()"),
        *("{1: 2}.items()", "iter([1])", "reversed([1])", "zip()", "enumerate([])", "print"),
        "lambda: 0",
    ],
)
@pytest.mark.parametrize("op", ["t + v", "v + t", "t - v", "v - t"])
def test_a_number_plus_anything_else_is_the_same_type_error_as_in_cpython(other, op):
    plan = f"t = 0\nv = {other}\nresult = {op}"
    assert "_add_" not in rewritten(plan)  # the sum runs native ...
    with pytest.raises(TypeError):
        cpython(plan)
    with pytest.raises(PlanError, match="TypeError"):  # ... and fails as CPython fails
        run(plan)


def test_no_value_a_plan_reaches_adds_itself_to_a_number():
    # The host's objects arrive as proxies, read-only lists and dicts: none has __radd__.
    host = {
        "obj": planlang.HostObject(object(), attributes=()),
        "items": [1, 2],
        "mapping": {"a": 1},
        "word": len,
    }
    for name in host:
        with pytest.raises(PlanError, match="TypeError"):
            run(f"t = 0\nresult = t + {name}", host)
        with pytest.raises(PlanError, match="TypeError"):
            run(f"t = 0\nt -= {name}", host)


# -- string loop items: a name proven a string holds a container ----------------------------

STRING_ATTACKS = [
    # rebound by a tuple target in the loop's body
    "for v in ['a']:\n    v, k = x, 1\n    s = f'{v}'",
    # deleted in the body, then a host value or nothing
    "for v in ['a']:\n    del v\n    v = x\n    s = f'{v}'",
    # augmented in the body
    "for v in ['a']:\n    v += 'b'\n    v = x\n    s = f'{v}'",
    # the source is read somewhere else too: aliased and changed
    "xs = ['a']\nfor v in xs:\n    pass\nxs.append(x)\nfor v in xs:\n    s = f'{v}'",
    # the source is handed to a function as a default, which changes it
    "xs = ['a']\ndef f(ys=xs):\n    ys.append(x)\nf()\nfor v in xs:\n    s = f'{v}'",
    # the source is unpacked into another list
    "xs = ['a']\nys = [*xs, x]\nfor v in ys:\n    s = f'{v}'",
    # a display with a starred item
    "ys = [x]\nfor v in ['a', *ys]:\n    s = f'{v}'",
    # a comprehension whose items are not f-strings
    "for v in [w for w in [x]]:\n    s = f'{v}'",
    # a generator expression is not a proven source
    "for v in (w for w in [x]):\n    s = f'{v}'",
    # the source name is a function's parameter
    "def f(xs):\n    for v in xs:\n        s = f'{v}'\n    return s\nr = f([x])",
    # the loop variable of an outer loop read inside an inner loop that rebinds it
    "for v in ['a']:\n    for w in [1]:\n        v = x\n        s = f'{v}'",
    # read in the else clause after the body rebound it
    "for v in ['a']:\n    v = x\nelse:\n    s = f'{v}'",
    # read after a loop over strings whose body rebinds it
    "for v in ['a']:\n    v = x\ns = f'{v}'",
    # a closure made in the body and called after the name is rebound
    "fs = []\nfor v in ['a']:\n    fs.append(lambda: f'{v}')\nv = x\ns = fs[0]()",
    # a lambda's default is evaluated now, but its body reads the parameter
    "for v in ['a']:\n    g = lambda v=x: f'{v}'\n    s = g()",
    # a nested comprehension reads the loop variable of its own, not of the outer loop
    "for v in ['a']:\n    s = [f'{v}' for v in [x]]",
    # a walrus anywhere in the plan on the same name
    "for v in ['a']:\n    s = f'{v}'\nk = [(v := x) for i in range(1)]\ns = f'{v}'",
    # the source name is bound twice: once to strings, once to containers
    "xs = ['a']\nif len(x) > 1:\n    xs = [x]\nfor v in xs:\n    s = f'{v}'",
    # the source name is read before the plan binds it: the host's list
    "for v in xs:\n    s = f'{v}'\nxs = ['a']",
    # a loop variable over range() read after a loop that never ran
    "for v in range(0):\n    pass\ns = f'{v}'",
    # a loop over a string item: its items are strings, but the name is no proven source
    "for w in ['ab']:\n    for v in w:\n        v = x\n        s = f'{v}'",
]


@pytest.mark.parametrize("plan", STRING_ATTACKS)
def test_a_container_posing_as_a_string_item_is_still_priced(plan):
    assert "_text_(v)" in rewritten(SHARED + plan)
    size_error(SHARED + plan, {"xs": [NESTED], "v": NESTED})


@pytest.mark.parametrize(
    "plan",
    [
        "for v in []:\n    pass\nelse:\n    s = f'{v}'",  # the loop never ran: v is the host's
        "for v in range(0):\n    pass\ns = f'{v}'",
        "for k in ['a']:\n    v = k\ns = f'{v}'",  # copied from an item, read after the loop
        "for k in []:\n    v = k\ns = f'{v}'",  # ... of a loop that never ran
        "for k in ['a']:\n    pass\nv = k\ns = f'{v}'",  # copied after the loop
    ],
)
def test_host_values_of_loop_names_are_priced_outside_the_loop(plan):
    assert "_text_(v)" in rewritten(plan)
    if "in []" in plan or "range(0)" in plan:
        size_error(plan, {"v": NESTED, "k": NESTED})


def test_a_loop_that_ran_leaves_its_last_item_for_the_else_clause():
    plan = "for v in ['a', 'b']:\n    pass\nelse:\n    result = f'{v}'"
    assert "_text_(v)" in rewritten(plan)  # priced all the same: the else is after the loop
    assert run(plan, {"v": NESTED}) == cpython(plan) == "b"


# -- string loop items: what stays native computes what CPython computes --------------------

NATIVE_TEXT = [
    "xs = ['a', 'b']\nout = []\nfor v in xs:\n    out.append(f'<{v}>')\nresult = out",
    "xs = ('a', 'b')\nresult = []\nfor v in xs:\n    result.append(f'{v!r}{v!a}{v:>4}')",
    "xs = {'a'}\nresult = []\nfor v in xs:\n    result.append(f'{v}-{v!s}')",
    "ws = [f'w{i}' for i in range(3)]\nresult = ''\nfor w in ws:\n    result = result + f'{w};'",
    "result = []\nfor v in ['a', 'é\\x00']:\n    for i in range(2):\n        result.append(f'{v}{i}')",  # noqa: E501
    "result = []\nfor v in ['a']:\n    while len(result) < 3:\n        result.append(f'{v}')",
]


@pytest.mark.parametrize("plan", NATIVE_TEXT)
def test_native_text_computes_what_cpython_computes(plan):
    assert "_text_(v)" not in rewritten(plan) and "_text_(w)" not in rewritten(plan)
    assert run(plan) == cpython(plan)


def test_a_walrus_on_an_unrelated_name_keeps_the_proof_but_not_on_the_item():
    plan = "for v in ['a']:\n    s = f'{v}'\n    n = (k := 1)"
    assert "_text_(v)" not in rewritten(plan)
    assert "_text_(v)" in rewritten(plan.replace("k :=", "v :="))


def test_a_name_read_in_its_loop_body_keeps_the_item_kind_whatever_else_binds_it():
    # i is also bound by unpacking (no kind as a whole), but inside its loop it is the item
    plan = (
        "def f(s):\n    i, k = s, 0\n    t = 0\n    for i in range(3):\n        t = t + i\n"
        "        t = t * 2 % 97\n    return t\nresult = f('x')"
    )
    assert "_mul_" not in rewritten(plan) and "_add_" not in rewritten(plan)
    assert run(plan) == cpython(plan)


@pytest.mark.parametrize(
    ("plan", "priced"),
    [
        # an inner loop rebinding the name ends the outer proof: after it, v is its last item
        ("for v in ['a']:\n    for v in [x]:\n        pass\n    s = f'{v}'", True),
        # ... while the inner loop's own reads keep theirs
        ("for w in [x]:\n    for v in ['a']:\n        s = f'{v}'", False),
        # a read in the source of an inner loop that rebinds the name is no item
        ("for v in ['a']:\n    for v in [v, x]:\n        s = f'{v}'", True),
        # a function's loop: read in the else clause (the last item, or unbound) is priced
        (
            "def f():\n    for v in ['a']:\n        pass\n    else:\n        v = x\n"
            "    return f'{v}'\ns = f()",
            True,
        ),
    ],
)
def test_nested_loops_over_the_same_name(plan, priced):
    assert ("_text_(v)" in rewritten(SHARED + plan)) is priced
    if priced:
        size_error(SHARED + plan)
    else:
        assert run(SHARED + plan + "\nresult = s") == "a"


def test_a_comprehension_over_an_iterated_only_name_sees_its_string_items():
    # the first source of a comprehension is read in the enclosing scope, solved before it
    plan = "xs = ['a', 'b']\nresult = [f'<{v}>' for v in xs]"
    assert "_text_(v)" not in rewritten(plan)
    assert run(plan) == cpython(plan) == ["<a>", "<b>"]


@pytest.mark.parametrize(
    "plan",
    [
        "xs = ['a']\nys = xs\nys.append(x)\nresult = [f'{v}' for v in xs]",  # aliased
        "xs = ['a']\nresult = [f'{v}' for w in xs for v in [x]]",  # a later source: inner
        "xs = ['a']\nresult = [f'{v}' for v in xs for v in [x]]",  # rebound by a second for
        "def f(xs):\n    return [f'{v}' for v in xs]\nresult = f([x])",  # a parameter
    ],
)
def test_a_comprehension_item_that_may_be_a_container_is_priced(plan):
    assert "_text_(v)" in rewritten(SHARED + plan)
    size_error(SHARED + plan)


# -- the oracle: every proven read is checked at run time, over generated plans -------------

NAMES = ("t", "u", "v", "xs", "i")
HOST_VALUES = ("hh", ["h", ["deep"]], 7, 2.5, {"k": 1}, None, ["a"])
ORACLE_LIMITS = Limits(size=2_000, steps=5_000, seconds=2, depth=30)


def _holds(value: object, kind: str) -> bool:
    if kind == "int":
        return type(value) in (int, bool)
    if kind == "num":
        return type(value) in (int, bool, float, complex)
    if kind == "str":
        return type(value) is str
    if kind == "strs":
        return type(value) in (list, tuple, set) and all(type(e) is str for e in value)
    if kind == "small":
        return type(value) is int and abs(value) < 2**31
    return isinstance(value, {"list": list, "dict": dict, "set": set}[kind])


def _instrumented(source: str) -> tuple[str, int]:
    """The plan with every read the kinds prove wrapped in ``check(value, kind)``."""
    tree = ast.parse(source)
    kinds = Kinds(tree)
    proven: dict[int, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            kind = kinds.kind(node)
            claims = [kind] if kind is not None else []
            if id(node) in kinds._small_loads:
                claims.append("small")
            if claims:
                proven[id(node)] = claims

    def check(name: ast.Name, claim: str) -> ast.Call:
        read = ast.Name(name.id, ast.Load())
        return ast.Call(ast.Name("check", ast.Load()), [read, ast.Constant(claim)], [])

    class Wrap(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            out: ast.expr = node
            if isinstance(node.ctx, ast.Load):
                for claim in proven.get(id(node), []):
                    out = ast.Call(ast.Name("check", ast.Load()), [out, ast.Constant(claim)], [])
            return out

        def visit_AugAssign(self, node: ast.AugAssign) -> list[ast.AST]:
            claims = proven.get(id(node.target), []) if isinstance(node.target, ast.Name) else []
            self.generic_visit(node)
            return [ast.Expr(check(node.target, c)) for c in claims] + [node]  # type: ignore[arg-type]

    wrapped = ast.fix_missing_locations(Wrap().visit(tree))
    return ast.unparse(wrapped), sum(len(c) for c in proven.values())


class _Plans:
    """Small plans over a few names that the host may also hold: loops over strings, ranges
    that never run, sums, rebinding, deletes, walruses, functions, f-strings."""

    def __init__(self, rng):
        self.rng = rng

    def name(self) -> str:
        return self.rng.choice(NAMES)

    def source(self) -> str:
        return self.rng.choice(
            [
                "range(0)",
                "range(3)",
                "['a', 'b']",
                "('p',)",
                "[]",
                self.name(),
                "{'s'}",
                f"[f'{{{self.name()}}}' for q in range(2)]",
            ]
        )

    def expr(self, depth: int = 0) -> str:
        n, e = self.name(), (lambda: self.expr(depth + 1))
        choices = [
            lambda: n,
            lambda: self.rng.choice(["0", "1", "2.5", "'a'", "[]", "True", "1j", "{}"]),
            lambda: "['a', 'b']",
            lambda: f"len({n})",
            lambda: f"['s', f'{{{n}}}']",
            lambda: f"{n} * 2",
            lambda: f"-{n}",
            lambda: f"{n} % 7",
            lambda: f"(lambda: {n})()",
        ]
        if depth < 2:
            choices += [
                lambda: f"{n} + {e()}",
                lambda: f"{e()} - {n}",
                lambda: f"({e()} if {n} else {e()})",
                lambda: f"({n} := {e()})",
                lambda: f"[f'{{{n}}}' for {self.name()} in {self.source()}]",
            ]
        return self.rng.choice(choices)()

    def block(self, depth: int, count: int | None = None) -> list[str]:
        lines: list[str] = []
        for _ in range(count or self.rng.randint(1, 3)):
            lines += self.statement(depth)
        return lines

    def statement(self, depth: int) -> list[str]:
        n, indent = self.name(), (lambda lines: ["    " + line for line in lines])
        simple = [
            lambda: [f"{n} = {self.expr()}"],
            lambda: [f"{n} = 0"],
            lambda: [f"{n} = {n} + {self.expr()}"],
            lambda: [f"{n} {self.rng.choice(['+=', '-='])} {self.expr()}"],
            lambda: [f"{n} = ['a', f'{{{self.name()}}}']"],
            lambda: [f"{n} = {self.name()}"],
            lambda: [f"s = f'{{{n}}}'"],
            lambda: [f's = f"{{{n} + {self.expr()}}}"'],
            lambda: [f"s = {n} * {self.rng.choice(['3', n, self.name()])}"],
            lambda: [f"del {n}"],
            lambda: [f"{n}, {self.name()} = {self.expr()}, {self.expr()}"],
        ]
        nested = [
            lambda: (
                [f"for {n} in {self.source()}:", *indent(self.block(depth + 1))]
                + (["else:", *indent(self.block(depth + 1))] if self.rng.random() < 0.3 else [])
            ),
            lambda: [f"for {n} in {self.name()}:", f"    s = f'{{{n}}}'"],
            lambda: [
                f"if {n}:",
                *indent(self.block(depth + 1)),
                "else:",
                *indent(self.block(depth + 1)),
            ],
            lambda: [
                f"def f({self.name()}):",
                *indent(self.block(depth + 1)),
                f"    return {self.expr()}",
                f"s = f({self.expr()})",
            ],
        ]
        return self.rng.choice(simple + nested if depth < 2 else simple)()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False), st.lists(st.sampled_from(NAMES), unique=True))
def test_every_proven_read_holds_its_kind_at_run_time(rng, hosted):
    prelude = rng.sample(["t = 0", "xs = ['a', f'{u}']", "u = 1.5", "v = t + 1"], 2)
    source = "\n".join(prelude + _Plans(rng).block(0, rng.randint(2, 6))) + "\n"
    assume(planlang.check(source).ok)
    wrapped, claims = _instrumented(source)
    event(f"proven reads: {min(claims, 3)}")
    broken: list[str] = []

    def check(value: object, kind: str) -> object:
        if not _holds(value, kind):
            broken.append(f"proven {kind}, holds {type(value).__name__}")
        return value

    host = {name: HOST_VALUES[rng.randrange(len(HOST_VALUES))] for name in hosted}
    try:
        Sandbox(host={**host, "check": check}, limits=ORACLE_LIMITS).run(wrapped)
    except PlanError:
        pass  # plans fail in many honest ways; only a broken proof matters here
    assert broken == []


# -- an outside red team's breach: a chained assignment gives two names one list ------------

CHAINED_ALIAS = """t = [1] * 1000
for i in range(22):
    t = [t, t]
xs = ys = ['a']
ys.append(t)
for v in xs:
    s = f'{v}'
result = 1
"""


def test_a_chained_assignment_proves_no_string_list():
    """``xs = ys = ['a']``: ``ys.append(big)`` changes ``xs`` too, so a loop over ``xs`` holds
    no proven string, and its f-string field is priced (it formatted 2**22 shared lists of a
    thousand items natively: hours of C work past a 5 s limit)."""
    checked = planlang.check(CHAINED_ALIAS)
    assert checked.ok
    names = set()
    stack = [checked.code]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack += [c for c in code.co_consts if hasattr(c, "co_names")]
    assert names & {"_fmt_", "_text_"}, "the f-string field of an aliased list is unpriced"
    with pytest.raises(planlang.PlanLimitError) as stopped:
        planlang.Sandbox(limits=planlang.Limits(seconds=60)).run(checked)
    assert stopped.value.kind == "size"


def test_the_solver_stays_linear_on_a_crafted_chain():
    """A chain of names that feed each other kept the fixpoint busy for minutes (6,000 names;
    about N**3); the solver's work is now bounded, and the plan still checks."""
    n = 6000
    lines = "\n".join(f"    a{i} = a{i + 1}\n    a{i + 1} = a{i}" for i in range(n))
    source = f"def f():\n    a0 = 1\n{lines}\n    return a0\nresult = 1\n"
    from planlang.check import infer

    calls = 0
    real = infer.Kinds._binding_kind

    def counted(self, *args):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(self, *args)

    infer.Kinds._binding_kind = counted  # type: ignore[method-assign]
    try:
        assert planlang.check(source, filename="chain.py").ok
    finally:
        infer.Kinds._binding_kind = real  # type: ignore[method-assign]
    assert calls <= infer.MAX_WORK + 2 * n


def test_a_module_loop_variable_read_in_a_comprehension_after_a_loop_that_never_ran_is_guarded():
    # the comprehension reads the module's 'i', which still holds the host's text
    plan = "for i in range(0):\n    pass\ng = [i * j for j in range(5)]"
    assert "_mul_(i, j)" in rewritten(plan)
    size_error(plan, {"i": "x" * 9000})


def test_an_outer_comprehension_variable_multiplies_natively_and_as_cpython_does():
    plan = "result = [[r * c for c in range(12)] for r in range(3, 12, 2)]"
    assert "_mul_" not in rewritten(plan)
    assert run(plan) == cpython(plan)
