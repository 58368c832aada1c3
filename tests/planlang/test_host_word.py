"""``HostWord(fn, fresh=True)``: an embedder's promise that lets hot host words skip the copy.

By default a host word's result is copied, so the plan never holds the host's object; a word
declared fresh hands a dict or list over as it is, and anything else is still copied and checked.
"""

import dataclasses

import pytest

from planlang import HostWord, PlanRuntimeError, Sandbox


def test_a_fresh_words_dict_and_list_are_handed_over_uncopied():
    handed = []

    def answer(n):
        value = {"n": n, "tags": ["x"]} if n else [n]
        handed.append(value)
        return value

    box = Sandbox(host={"answer": HostWord(answer, fresh=True)})
    source = "a = answer(1)\na['tags'].append('y')\nb = answer(0)\nb.append(9)\nresult = [a, b]\n"
    assert box.run(source) == [{"n": 1, "tags": ["x", "y"]}, [0, 9]]
    # The promise was that nobody else holds these, so the plan's changes are its own.
    assert handed == [{"n": 1, "tags": ["x", "y"]}, [0, 9]]


def test_without_the_promise_the_hosts_object_is_never_the_plans():
    kept = {"n": 1, "tags": ["x"]}
    box = Sandbox(host={"answer": lambda: kept, "fresh_answer": HostWord(lambda: kept)})
    assert box.run("a = answer()\na['tags'].append('y')\nresult = a\n") == {
        "n": 1,
        "tags": ["x", "y"],
    }
    assert box.run("b = fresh_answer()\nb['n'] = 2\nresult = b\n") == {"n": 2, "tags": ["x"]}
    assert kept == {"n": 1, "tags": ["x"]}


@dataclasses.dataclass
class Point:
    x: int


class Secret:
    pass


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ((1, [2]), (1, [2])),  # a tuple is copied (its list becomes the plan's)
        (Point(3), {"x": 3}),  # a dataclass is dumped as always
        (iter([{"a": 1}, [2]]), [{"a": 1}, [2]]),  # an iterator's items are copied one by one
    ],
)
def test_a_fresh_word_still_copies_what_is_not_a_plain_dict_or_list(value, expected):
    box = Sandbox(host={"word": HostWord(lambda: value, fresh=True)})
    source = "r = word()\nresult = list(r) if str(r).startswith('<') else r\n"
    assert box.run(source) == expected


def test_a_fresh_word_returning_a_host_object_is_still_refused():
    box = Sandbox(host={"word": HostWord(lambda: Secret(), fresh=True)})
    with pytest.raises(PlanRuntimeError, match="not plain data"):
        box.run("result = word()\n")


def test_a_fresh_word_is_counted_and_limited_like_any_other():
    box = Sandbox(host={"word": HostWord(lambda: {"a": 1}, fresh=True)})
    assert box.run("result = [word()['a'] for i in range(10)]\n") == [1] * 10
    assert box.last_meter is not None and box.last_meter.steps >= 20


def test_host_words_nested_in_host_data_keep_their_promise():
    box = Sandbox(host={"tools": {"get": HostWord(lambda: [1], fresh=True)}})
    assert box.run("xs = tools['get']()\nxs.append(2)\nresult = xs\n") == [1, 2]


@pytest.mark.parametrize("bad", [None, 3, dict])
def test_a_host_word_must_wrap_a_function(bad):
    with pytest.raises(TypeError, match="HostWord needs a function"):
        HostWord(bad)
