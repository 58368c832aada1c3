"""The check says everything in one pass, and refuses only what the language refuses (issue 13).

It is an error to refuse the bare name ``_`` (models write it constantly, and each false
refusal costs a repair turn); names that start with ``_`` and go on stay refused. It is an
error to stay silent about a problem because it sits inside a construct that is refused.
"""

import pytest

import planlang
from planlang import Sandbox

UNDERSCORE = """\
groups = {"b": [2], "a": [1, 3]}
firsts = []
for _, g in sorted(groups.items()):
    firsts.append(g[0])
pairs = [_ for _ in range(3)]
def second(_, y):
    return y
result = [firsts, pairs, second(0, "y")]
"""


def test_the_bare_underscore_is_an_ordinary_name():
    checked = planlang.check(UNDERSCORE)
    assert checked.ok, [p.render() for p in checked.problems]
    assert Sandbox().run(checked) == [[1, 2], [0, 1, 2], "y"]


@pytest.mark.parametrize("source", ["_x = 1\n", "__ = 1\n", "x = _getattr_\n", "x = [].__len__\n"])
def test_names_that_start_with_underscore_and_go_on_stay_refused(source):
    assert {p.code for p in planlang.check(source).problems} <= {"PL201", "PL204"}
    assert not planlang.check(source).ok


INSIDE = [
    ("try:\n    eval(1)\nexcept Exception:\n    pass\n", ["PL107", "PL202"]),
    ("with open('f') as f:\n    pass\n", ["PL104", "PL202"]),
    ("x = ().__class__.__subclasses__()\n", ["PL204", "PL204"]),
    ("x.a = eval(1)\n", ["PL203", "PL202"]),
    ("x.a += exec(1)\n", ["PL203", "PL202"]),
    ("xs[1:2] += eval(1)\n", ["PL112", "PL202"]),
    ("match x:\n    case 1:\n        _y = open(2)\n", ["PL108", "PL201", "PL202"]),
    ("class A:\n    _b = eval\n", ["PL102", "PL201", "PL202"]),
]


@pytest.mark.parametrize(("source", "codes"), INSIDE, ids=[c[0].split("\n")[0] for c in INSIDE])
def test_problems_inside_a_refused_construct_are_reported_in_the_same_pass(source, codes):
    assert sorted(p.code for p in planlang.check(source).problems) == sorted(codes)


def test_the_inner_attributes_of_a_refused_chain_are_named():
    messages = [p.message for p in planlang.check("x = ().__class__.__subclasses__()\n").problems]
    assert any("__class__" in m for m in messages)
    assert any("__subclasses__" in m for m in messages)
