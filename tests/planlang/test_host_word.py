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

    # in one process: across a process boundary every answer is a copy the codec made
    box = Sandbox(host={"answer": HostWord(answer, fresh=True)}, isolation="inprocess")
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


# -- the wrapper keeps each host function's own signature ---------------------------------------


def plain(a, b):
    return [a, b]


def with_defaults(a, b=2, *, c=3, d):
    return [a, b, c, d]


def positional_only(a, b=5, /, c=6):
    return [a, b, c]


def catch_all(*args, **kwargs):
    return [list(args), sorted(kwargs)]


class Greeter:
    def __init__(self):
        self.seen = []

    def greet(self, who, punctuation="!"):
        self.seen.append(who)
        return f"hello {who}{punctuation}"


@pytest.mark.parametrize(
    ("word", "call", "expected"),
    [
        (plain, "w(1, 2)", [1, 2]),
        (plain, "w(b=1, a=2)", [2, 1]),
        (with_defaults, "w(1, d=4)", [1, 2, 3, 4]),
        (with_defaults, "w(1, 9, c=8, d=7)", [1, 9, 8, 7]),
        (positional_only, "w(1)", [1, 5, 6]),
        (positional_only, "w(1, 2, c=3)", [1, 2, 3]),
        (catch_all, "w(1, x=2, y=3)", [[1], ["x", "y"]]),
        (Greeter().greet, "w('ann')", "hello ann!"),
        (Greeter().greet, "w(who='bo', punctuation='?')", "hello bo?"),
        (len, "w([1, 2, 3])", 3),
    ],
)
def test_host_words_take_their_arguments_as_the_function_does(word, call, expected):
    assert Sandbox(host={"w": word}).run(f"result = {call}\n") == expected


@pytest.mark.parametrize(
    ("word", "call", "message"),
    [
        (plain, "w(1)", "w() missing 1 required positional argument: 'b'"),
        (plain, "w(1, 2, 3)", "w() takes 2 positional arguments but 3 were given"),
        (with_defaults, "w(1)", "w() missing 1 required keyword-only argument: 'd'"),
        (positional_only, "w(a=1)", "w() got some positional-only arguments passed as keyword"),
        (plain, "w(1, 2, **{'_x': 3})", "unexpected keyword argument '_x'"),
        (catch_all, "w(**{'_x': 3})", "cannot take an argument whose name starts with '_'"),
    ],
)
@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_argument_errors_name_the_word_and_underscore_keywords_never_arrive(
    word, call, message, isolation
):
    if isolation == "process" and "_x" in call:
        # the plan's process refuses it before it crosses, as for any word it cannot see the
        # signature of (in one process the wrapper's own signature refuses it)
        message = "The host word 'w' cannot take an argument whose name starts with '_'"
    with pytest.raises(PlanRuntimeError, match="TypeError") as caught:
        Sandbox(host={"w": word}, isolation=isolation).run(f"result = {call}\n")
    assert message in str(caught.value)
    assert caught.value.line == 1


def test_a_host_function_with_underscore_parameters_keeps_them_out_of_reach():
    def lookup(term, _cache=None):
        return "cached" if _cache is not None else term

    box = Sandbox(host={"lookup": lookup})
    assert box.run("result = lookup('x')\n") == "x"
    with pytest.raises(PlanRuntimeError, match="starts with '_'"):
        box.run("result = lookup('x', **{'_cache': 1})\n")


def test_a_bound_methods_object_still_sees_its_calls():
    greeter = Greeter()
    Sandbox(host={"greet": greeter.greet}).run("a = greet('x')\nb = greet('y', '.')\n")
    assert greeter.seen == ["x", "y"]
