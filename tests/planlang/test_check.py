"""planlang.check: what it accepts, what it refuses, and where it says so."""

import pytest

import planlang
from planlang.check import is_checked_code

GOOD = """\
phase("scan")
counts = {}
for word in "a b a".split():
    counts[word] = counts.get(word, 0) + 1
counts["a"] += 1
first, *rest = [1, 2, 3]
def double(n, *, by=2):
    return n * by
squares = [double(x) for x in range(5) if x % 2 == 0]
table = {k: v for k, v in counts.items()}
seen = {x for x in squares}
total = sum(x for x in squares)
label = f"{total:>8} {counts!r}"
i = 0
while i < 3:
    i += 1
    if i == 2:
        continue
    elif i > 5:
        break
    else:
        pass
del table["b"]
if (n := len(squares)) > 2:
    assert n == 3, "three squares"
result = {"squares": squares, "label": label, "rest": rest[::-1], "seen": sorted(seen)}
"""


def test_a_plan_in_the_language_is_accepted_with_compiled_code():
    result = planlang.check(GOOD)
    assert result.ok, [p.render() for p in result.problems]
    assert result.problems == ()
    assert is_checked_code(result.code)
    assert len(result.sha256) == 64


REFUSALS = [
    ("import os", "PL101", 1, 1),
    ("from os import path", "PL101", 1, 1),
    ("class A:\n    pass", "PL102", 1, 1),
    ("def f():\n    global x\n    x = 1", "PL103", 2, 5),
    ("def f():\n    x = 1\n    def g():\n        nonlocal x", "PL103", 4, 9),
    ("with x:\n    pass", "PL104", 1, 1),
    ("async def f():\n    pass", "PL105", 1, 1),
    ("def f():\n    yield 1", "PL106", 2, 5),
    ("def f():\n    yield from [1]", "PL106", 2, 5),
    ("try:\n    pass\nexcept Exception:\n    pass", "PL107", 1, 1),
    ("try:\n    pass\nfinally:\n    pass", "PL107", 1, 1),
    ("try:\n    pass\nexcept* ValueError:\n    pass", "PL107", 1, 1),
    ("match x:\n    case 1:\n        pass", "PL108", 1, 1),
    ("x: int = 1", "PL109", 1, 1),
    ("@log\ndef f():\n    pass", "PL110", 1, 2),
    ("raise SystemExit", "PL202", 1, 7),
    ("raise ValueError('x') from None", "PL111", 1, 1),
    ("x = _secret", "PL201", 1, 5),
    ("_x = 1", "PL201", 1, 1),
    ("def _f():\n    pass", "PL201", 1, 1),
    ("def f(_a):\n    pass", "PL201", 1, 1),
    ("x = eval('1')", "PL202", 1, 5),
    ("x = getattr(a, 'b')", "PL202", 1, 5),
    ("x = type(1)", "PL202", 1, 5),
    ("x = open('/etc/passwd')", "PL202", 1, 5),
    ("x = __import__('os')", "PL201", 1, 5),
    ("x.y = 1", "PL203", 1, 1),
    ("del x.y", "PL203", 1, 5),
    ("x.y += 1", "PL203", 1, 1),
    ("x = y.__class__", "PL204", 1, 5),
    ("x = '{0.__class__}'.format(1)", "PL205", 1, 5),
    ("x = g.gi_frame", "PL205", 1, 5),
    ("x = b'bytes'", "PL206", 1, 5),
    ("x = a @ b", "PL100", 1, 5),
    ("x = 1\nx @= 2", "PL100", 2, 1),
    ("f(_x=1)", "PL201", 1, 3),
    ("a, xs[1:] = 1, [2]", "PL112", 1, 4),
    ("for xs[0:0] in [[1]]:\n    pass", "PL112", 1, 5),
    ("a = xs[1:] = [2]", "PL112", 1, 5),
    ("x = [y async for y in z]", "PL105", 1, 18),
]


@pytest.mark.parametrize(("source", "code", "line", "col"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_each_forbidden_construct_is_refused_with_its_code_and_place(source, code, line, col):
    result = planlang.check(source, filename="p.py")
    assert not result.ok
    assert result.code is None
    found = [(p.code, p.line, p.col) for p in result.problems]
    assert (code, line, col) in found, found
    assert all(p.filename == "p.py" for p in result.problems)


def test_all_problems_are_reported_not_only_the_first():
    source = "import os\nclass A:\n    pass\nx = y._z\nw = eval\n"
    codes = [p.code for p in planlang.check(source).problems]
    assert codes == ["PL101", "PL102", "PL204", "PL202"]


def test_problems_render_like_ruff():
    (problem,) = planlang.check("import os", filename="dir/plan.py").problems
    assert problem.render() == (
        "dir/plan.py:1:1: PL101 imports are not part of the plan language; use the host words"
    )


@pytest.mark.parametrize(
    ("source", "code"),
    [("", "PL002"), ("   \n\n", "PL002"), ("x = (1", "PL001"), ("x = 1\n  y = 2", "PL001"),
     ("x = '\0'\x00", "PL001"), ("x = " + "(" * 300 + ")" * 300, "PL001")],
    ids=["empty", "blank", "unclosed", "indent", "nul", "deep"],
)  # fmt: skip
def test_unparseable_sources_get_one_problem_not_an_exception(source, code):
    result = planlang.check(source)
    assert not result.ok
    assert [p.code for p in result.problems] in ([code], ["PL003"])


def test_an_oversized_source_is_refused_before_parsing():
    result = planlang.check("x = 1\n" * 200_000)
    assert [p.code for p in result.problems] == ["PL004"]


def test_check_refuses_non_str_input_as_a_usage_error():
    with pytest.raises(TypeError, match="takes the plan's source as str"):
        planlang.check(b"x = 1")  # type: ignore[arg-type]


def test_a_code_object_not_made_by_check_is_not_trusted():
    assert not is_checked_code(compile("x = 1", "plan.py", "exec"))


def test_trust_is_by_identity_not_by_equal_content():
    checked = planlang.check("x = 1\n")
    twin = compile("x = 1\n", "plan.py", "exec")
    assert twin == checked.code  # equal by content...
    assert is_checked_code(checked.code) and not is_checked_code(twin)  # ...but not trusted


def test_the_size_limit_counts_utf8_bytes_as_the_cli_does():
    """MAX_SOURCE_BYTES is bytes: 300,000 three-byte characters are 900,000 characters' worth
    less than a million characters, yet over a million bytes (the CLI refuses that file too)."""
    from planlang.check import MAX_SOURCE_BYTES

    source = "x = '" + "€" * 340_000 + "'\n"
    assert len(source) < MAX_SOURCE_BYTES < len(source.encode("utf-8"))
    result = planlang.check(source)
    assert [p.code for p in result.problems] == ["PL004"]
    assert "bytes" in result.problems[0].message


@pytest.mark.parametrize(
    "make",
    ["f = lambda: x\n", "def f():\n    return x\n", "y = [i for i in [x]]\n",
     "y = {i for i in [x]}\n", "y = {i: i for i in [x]}\n", "y = sum(i for i in [x])\n"],
    ids=["lambda", "def", "listcomp", "setcomp", "dictcomp", "genexp"],
)  # fmt: skip
def test_a_plan_holds_at_most_max_functions_code_objects(make):
    """Each function, lambda and comprehension is a code object, and CPython compiles many
    alike in quadratic time (red team 17: 60,000 lambdas, 99 s): up to MAX_FUNCTIONS pass,
    one more is refused once, at the one past the limit, with the plan's total."""
    from planlang.check.policy import MAX_FUNCTIONS

    lines = make.count("\n")
    assert planlang.check("x = 1\n" + make * MAX_FUNCTIONS).ok
    result = planlang.check("x = 1\n" + make * (MAX_FUNCTIONS + 5))
    assert [(p.code, p.line) for p in result.problems] == [("PL006", 2 + lines * MAX_FUNCTIONS)]
    assert f"this plan has {MAX_FUNCTIONS + 5:,}" in result.problems[0].message


def test_functions_are_counted_across_the_plan_nested_ones_too():
    inner = "def g():\n    h = lambda: [i for i in [1]]\n    return h\n"  # three each
    assert planlang.check(inner * 333).ok
    result = planlang.check(inner * 334)
    assert [p.code for p in result.problems] == ["PL006"]
