"""Values nested deep cross the codec as they cross the wall in one process (issue 12, red
team 24): past ``codec.TABLE_DEPTH`` levels a value is written as a table of its containers
(``{"g": nodes}``) and read in loops, so a list nested 100,000 deep reaches a host word, comes
back from one, and is the run's result, in both modes alike. The host reads a table a child
crafted in bounded work, or refuses it as a protocol break (``CodecError``).
"""

from __future__ import annotations

import hashlib
import time
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_isolation_codec import _refuse
from test_isolation_codec import roundtrip as codec_roundtrip

from planlang import Limits, PlanError, Sandbox
from planlang.isolation.codec import (
    HASH_BUDGET,
    HASH_DEPTH,
    TABLE_DEPTH,
    CodecError,
    Encoder,
)
from planlang.isolation.frames import dumps, loads
from planlang.isolation.handles import Handles
from planlang.isolation.walks import tuple_depth
from planlang.sandbox.wall import ReadOnlyDict, ReadOnlyList, freeze, thaw

MODES = ("inprocess", "process")
LIMITS = Limits(seconds=60, steps=3_000_000)


# -- values of a shape, built the same way by the plan and by the test ------------------------

# one level a letter: l [x], d {"k": x, "n": i}, t (x, i), s [x, frozenset], p [x, x] (shared)
BUILD = (
    "x = []\n"
    "for i in range({n}):\n"
    "    k = {shape!r}[i % {width}]\n"
    "    if k == 'l':\n"
    "        x = [x]\n"
    "    elif k == 'd':\n"
    "        x = {{'k': x, 'n': i}}\n"
    "    elif k == 't':\n"
    "        x = (x, i)\n"
    "    elif k == 's':\n"
    "        x = [x, frozenset([i, i + 1])]\n"
    "    else:\n"
    "        x = [x, x]\n"
)


def build(n: int, shape: str) -> Any:
    x: Any = []
    for i in range(n):
        k = shape[i % len(shape)]
        if k == "l":
            x = [x]
        elif k == "d":
            x = {"k": x, "n": i}
        elif k == "t":
            x = (x, i)
        elif k == "s":
            x = [x, frozenset([i, i + 1])]
        else:
            x = [x, x]
    return x


def canon(value: Any) -> list[Any]:
    """The value as a flat list of tokens, in a loop: its types, scalars, dict keys in order,
    and its sharing (a container met again is its number), so two values with one ``canon``
    are the same structure. Read-only copies count as the plain types they copy."""
    out: list[Any] = []
    numbers: dict[int, int] = {}
    keep: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Close):
            out.append(")")
            continue
        if not isinstance(item, list | dict | tuple | set | frozenset):
            out.append((type(item).__name__, repr(item) if type(item) is float else item))
            continue
        if id(item) in numbers:
            out.append(("ref", numbers[id(item)]))
            continue
        numbers[id(item)] = len(numbers)
        keep.append(item)
        kind = (
            "dict" if isinstance(item, dict) else "list" if isinstance(item, list)
            else type(item).__name__
        )  # fmt: skip
        out.append((kind, len(item)))
        stack.append(_CLOSE)
        if isinstance(item, dict):
            parts = [part for pair in item.items() for part in pair]
        elif isinstance(item, set | frozenset):
            parts = sorted(item, key=repr)
        else:
            parts = list(item)
        stack.extend(reversed(parts))
    return out


class _Close:
    pass


_CLOSE = _Close()


def digest(value: Any) -> str:
    return hashlib.sha256(repr(canon(value)).encode()).hexdigest()


def depth_of(value: Any) -> int:
    levels = 0
    while isinstance(value, list | tuple | dict) and value:
        value = value["k"] if isinstance(value, dict) else value[0]
        levels += 1
    return levels


def outcome(src: str, mode: str, host: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", Sandbox(host=host, limits=LIMITS, isolation=mode).run(src)
    except PlanError as error:
        return type(error).__name__, getattr(error, "kind", None)


# Each way a value crosses: to a host word (which digests what it got), back from one, as the
# run's result, as a host value, as a callback's argument and its result.
def _call(fn: Any, value: Any) -> Any:
    return fn(value)


def plans(n: int, shape: str, way: str) -> tuple[str, dict[str, Any], Any]:
    """A plan, its host, and the result the plan should end with."""
    made = BUILD.format(n=n, shape=shape, width=len(shape))
    expected = build(n, shape)
    host: dict[str, Any] = {"digest": digest, "echo": lambda v: v, "call": _call}
    if way == "to_host":
        return made + "result = digest(x)\n", host, digest(expected)
    if way == "from_host":
        host["make"] = lambda: build(n, shape)
        return "result = make()\n", host, expected
    if way == "round_trip":
        return made + "result = echo(x)\n", host, expected
    if way == "result":
        return made + "result = x\n", host, expected
    if way == "host_value":
        host["V"] = expected
        return "result = [digest(V), V]\n", host, [digest(expected), expected]
    assert way == "callback"
    return (made + "def f(v):\n    return [digest(v), v]\nresult = call(f, x)\n", host,
            [digest(expected), expected])  # fmt: skip


def assert_same_in_both_modes(n: int, shape: str, way: str) -> None:
    src, host, expected = plans(n, shape, way)
    results = [outcome(src, mode, host) for mode in MODES]
    assert results[0][0] == results[1][0] == "ok", (n, shape, way, results)
    for _, got in results:
        assert canon(got) == canon(expected), (n, shape, way)


# -- the red team's case, and each way, at the depths the brief names -------------------------


def test_the_red_teams_plan_answers_in_both_modes() -> None:
    src = "x = []\nfor i in range(600):\n    x = [x]\nresult = echo(x)\n"
    for mode in MODES:
        assert Sandbox(host={"echo": lambda v: 1}, isolation=mode).run(src) == 1


@pytest.mark.parametrize("way", ["to_host", "from_host", "round_trip", "result", "host_value",
                                 "callback"])  # fmt: skip
@pytest.mark.parametrize("n", [600, 5_000])
@pytest.mark.parametrize("shape", ["l", "d", "t", "ldts"])
def test_a_deep_value_crosses_each_way_alike(shape: str, n: int, way: str) -> None:
    assert_same_in_both_modes(n, shape, way)


@pytest.mark.parametrize(
    ("shape", "way"),
    [("l", "round_trip"), ("l", "result"), ("l", "callback"), ("l", "host_value"),
     ("ldt", "round_trip")],
)  # fmt: skip
def test_a_value_nested_100_000_deep_crosses_alike(shape: str, way: str) -> None:
    assert_same_in_both_modes(100_000, shape, way)


def test_a_result_nested_50_000_deep_is_returned_as_deep_in_both_modes() -> None:
    """Once a red-team row (``deep-nesting-in-result``, ended as ``depth``): the plan's result
    is the plan's, as deep as it made it, in one process and under process isolation."""
    src = "x = []\nfor i in range(50000):\n    x = [x]\nresult = x\n"
    for mode in MODES:
        got = Sandbox(limits=LIMITS, isolation=mode).run(src)
        assert type(got) is list and depth_of(got) == 50_000


_WAYS = st.sampled_from(["to_host", "from_host", "round_trip", "result", "host_value",
                         "callback"])  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from(
        [0, 1, TABLE_DEPTH - 1, TABLE_DEPTH, TABLE_DEPTH + 1, 2 * TABLE_DEPTH, 490, 600, 1_500]
    ),  # fmt: skip
    shape=st.text(alphabet="ldts", min_size=1, max_size=6),
    way=_WAYS,
)
def test_property_both_modes_agree_over_depths_and_shapes(n: int, shape: str, way: str) -> None:
    assert_same_in_both_modes(n, shape, way)


@settings(max_examples=10, deadline=None)
@given(
    n=st.sampled_from([TABLE_DEPTH + 1, 300, 900]),
    shape=st.text(alphabet="ldtsp", min_size=1, max_size=5).filter(lambda s: s.count("p") < 2),
)
def test_property_shared_parts_come_back_shared(n: int, shape: str) -> None:
    """Shared containers (``[x, x]``) stay shared through the table, in the run's result
    (which no walk bound holds: it is the plan's), in both modes."""
    if "p" in shape and n // len(shape) > 40:
        n = 40 * len(shape)  # 2**40 as a tree: still shared, still cheap
    assert_same_in_both_modes(n, shape, "result")


# -- the codec itself -------------------------------------------------------------------------


roundtrip = partial(codec_roundtrip, int_bits=10**6)


def json_depth(data: Any) -> int:
    most, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        most = max(most, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return most


@pytest.mark.parametrize("shape", ["l", "d", "t", "ldts"])
def test_the_json_stays_shallow_whatever_the_depth(shape: str) -> None:
    """Within orjson's 255 levels (its fast path), and read back in loops."""
    value = build(100_000, shape)
    encoded = Encoder(_refuse).encode(value)
    assert json_depth(encoded) < 2 * TABLE_DEPTH + 8
    assert canon(roundtrip(value)) == canon(value)


def test_a_table_keeps_the_numbering_of_containers_met_before_and_after() -> None:
    """References into a table, out of it, and between two tables are one numbering."""
    shared = [1, 2]
    deep = build(200, "l")
    value = [shared, deep, build(150, "dt"), shared, deep, [deep, shared]]
    back = roundtrip(value)
    assert isinstance(back, list)
    assert back[0] is back[3] is back[5][1] and back[1] is back[4] is back[5][0]
    assert canon(back) == canon(value)


def test_cycles_through_a_table_survive() -> None:
    """A list that holds itself 300 levels down; a tuple that holds itself through a list,
    met again inside a table (the tuple made in the tree, the list in the table)."""
    top: list[Any] = []
    bottom = top
    for _ in range(300):
        bottom.append([])
        bottom = bottom[-1]
    bottom.append(top)
    again = roundtrip(top)
    node = again
    for _ in range(301):
        node = node[-1]  # type: ignore[index]
    assert node is again
    # a tuple in the tree at depth TABLE_DEPTH - 1, holding a list in a table that holds it
    holder: list[Any] = []
    inner = (holder,)
    holder.append(inner)
    value: Any = inner
    for _ in range(TABLE_DEPTH - 1):
        value = [value]
    back = roundtrip(value)
    for _ in range(TABLE_DEPTH - 1):
        back = back[0]  # type: ignore[index]
    assert type(back) is tuple and back[0][0] is back


@pytest.mark.parametrize("guarded", [True, False])
def test_sets_dicts_and_big_numbers_in_a_table(guarded: bool) -> None:
    value: Any = 0
    for i in range(300):
        value = {"k": [value, {frozenset({i}), (i, 2**70)}, float("nan"), -(2**80), (i,)],
                 (i, "key"): {i: "v"}}  # fmt: skip
    back = roundtrip(value, guarded=guarded)
    assert canon(back) == canon(value)


# -- a crafted table: refused, or read in bounded work --------------------------------------


def host_decode(data: Any, handed: bool = True) -> Any:
    """As the host reads what a plan's process sent (``Handles.decode``)."""
    return Handles(Sandbox(limits=Limits(memory_mb=64, steps=1_000))).decode(loads(dumps(data)),
                                                                handed=handed)  # fmt: skip


@pytest.mark.parametrize(
    "table",
    [
        [],  # no node
        "nodes",
        [{"r": 1}],  # a node that is not a container
        [[{"r": 2}], []],  # a reference past the table
        [[{"r": -1}]],
        [[{"r": 1.0}], []],
        [[{"r": "0"}]],
        [{"t": [{"r": 0}]}],  # a tuple that holds itself
        [{"t": [{"r": 1}]}, {"f": [{"r": 0}]}],  # two that hold each other
        [[{"r": 1}], {"t": [{"r": 2}]}, {"t": [{"r": 1}]}],
        [{"d": [{"r": 0}, 1]}],  # a dict as its own key
        [[], []],  # a node nothing refers to
        [[[1]]],  # a container written in a node, not referred to
        [[{"g": [[]]}]],  # a table inside a table
        [{"d": ["a"]}],  # a dict of an odd count
        [{"q": []}],
        [{"d": [], "t": []}],
        [[{"i": 5}]],  # a malformed number
        [[{"i": "f" * 30_000}]],  # past int_bits
        [{"s": [{"r": 1}]}, []],  # a list in a set
    ],
)  # fmt: skip
def test_a_crafted_table_is_refused_as_a_protocol_break(table: Any) -> None:
    with pytest.raises(CodecError):
        host_decode({"g": table})


def test_a_crafted_table_that_refers_forward_and_to_itself_through_lists_is_read() -> None:
    """What the encoder never sends but a list may be: forward references, a list holding
    itself; the host gets the containers they say, bounded as any."""
    back = host_decode({"g": [[{"r": 2}, {"r": 1}], [{"r": 0}], {"t": [7]}]}, handed=False)
    assert back[0] == (7,) and back[1][0] is back


def test_a_table_aliasing_past_the_walk_bound_is_refused_to_host_code() -> None:
    """``x = [x, x]`` eighty times as a table: 2**80 items to walk, refused to a host word,
    returned as the run's result (shared, as the plan made it)."""
    nodes: list[Any] = [[{"r": i + 1}, {"r": i + 1}] for i in range(80)] + [[0]]
    with pytest.raises(CodecError, match="shared"):
        host_decode({"g": nodes})
    back = host_decode({"g": nodes}, handed=False)
    assert back[0] is back[1]


def test_a_huge_table_is_read_in_linear_time() -> None:
    """A million nodes, each a list holding the next: read in a few seconds at most, not
    quadratic; a million dict keys sharing one big tuple key stay within the hash budget."""
    nodes: list[Any] = [[{"r": i + 1}] for i in range(1_000_000)] + [[]]
    started = time.monotonic()
    back = host_decode({"g": nodes}, handed=False)
    assert time.monotonic() - started < 20
    assert depth_of(back) == 1_000_000
    # keys: one tuple of 1,000 nodes referred to by 2,000 dicts' keys: 2,000,000 nodes hashed
    chain: list[Any] = [{"t": [{"r": 2 + i}]} for i in range(1_000)] + [{"t": [1]}]
    dicts: list[Any] = [{"d": [{"r": 1}, i]} for i in range(2_000)]
    first = [[{"r": 1 + len(chain) + i} for i in range(2_000)]]  # node 0: the dicts
    with pytest.raises(CodecError, match="costly"):
        host_decode({"g": first + chain + dicts})
    assert HASH_BUDGET < 2_000 * 1_000


def test_a_tuple_too_deep_to_hash_is_refused_by_the_host() -> None:
    """Past HASH_DEPTH levels of tuples within tuples, the host neither hashes a key (CPython
    recurses in C with no check: SIGSEGV of the host, once the codec carried such a tuple)
    nor hands one to host code; the run's result may hold one, as in one process."""
    n = HASH_DEPTH + 10
    chain: list[Any] = [{"t": [{"r": i + 2}]} for i in range(n)] + [{"t": []}]
    as_key = [{"d": [{"r": 1}, 1]}, *chain]
    with pytest.raises(CodecError, match="levels"):
        host_decode({"g": as_key}, handed=False)
    as_member = [{"f": [{"r": 1}]}, *chain]
    with pytest.raises(CodecError, match="levels"):
        host_decode({"g": as_member}, handed=False)
    as_item = [[{"r": 1}], *chain]
    with pytest.raises(CodecError, match="levels"):
        host_decode({"g": as_item})
    back = host_decode({"g": as_item}, handed=False)
    assert tuple_depth(back, 10**6) == n + 1
    fine = [{"d": [{"r": 1}, 1]}] + [{"t": [{"r": i + 2}]} for i in range(5_000)] + [{"t": []}]
    assert len(host_decode({"g": fine})) == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_plan_handing_a_tuple_too_deep_to_hash_leaves_the_host_alive(mode: str) -> None:
    """``t = (t,)`` 30,000 times, handed to a host word as a dict key: hashed on the plan's
    deep stack in one process; refused under process isolation (a TypeError in the plan),
    where the host's decoder hashed it on an ordinary stack before."""
    src = "t = ()\nfor i in range(30000):\n    t = (t,)\nresult = echo({t: 1})\n"
    got = outcome(src, mode, {"echo": lambda v: len(v)})
    assert got == (("ok", 1) if mode == "inprocess" else ("PlanRuntimeError", None)), got


def test_tuple_depth_counts_tuples_within_tuples_only() -> None:
    t: Any = ()
    for _ in range(50):
        t = (t,)
    assert tuple_depth(t, 100) == 51
    assert tuple_depth([[t], {"k": (t,)}], 100) == 52
    assert tuple_depth(build(500, "lt"), 1000) == 1
    assert tuple_depth(t, 10) == 11  # stops just past ``most``


# -- the wall in one process --------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["l", "d", "t", "ldts", "lp"])
def test_thaw_and_freeze_copy_a_deep_value_as_the_recursion_does(shape: str) -> None:
    value = build(20_000 if "p" not in shape else 60, shape)
    thawed = thaw(value, None, "x")
    assert canon(thawed) == canon(value) and thawed is not value
    if "p" in shape:  # freeze copies a host value as a tree (the host's own): not shared
        return
    frozen = freeze(value, lambda *a: a, "host")
    assert canon(frozen) == canon(value)
    node = frozen
    while isinstance(node, list | dict) and node:
        assert type(node) in (ReadOnlyList, ReadOnlyDict)
        node = node["k"] if isinstance(node, dict) else node[0]


def test_a_host_value_that_holds_itself_fails_alike_in_both_modes() -> None:
    """A list that holds itself, handed in as a host value: a bare RecursionError left
    ``Sandbox.run`` in one process (nothing but a PlanError may), a PlanRuntimeError in two."""
    from planlang import PlanRuntimeError, Sandbox

    looped: list = []
    looped.append(looped)
    for mode in ("inprocess", "process"):
        with pytest.raises(PlanRuntimeError, match="holds itself") as caught:
            Sandbox(host={"v": looped}, isolation=mode).run("result = len(v)\n")
        assert caught.value.error_type == "RecursionError", (mode, caught.value)
