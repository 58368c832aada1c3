"""The codec between a plan's process and the host: plain data only, shared parts kept, and
the host's decoder bounded against keys an adversary chose."""

from __future__ import annotations

import io
import pickle
from typing import Any

import pytest

from planlang.isolation.codec import (
    MAX_COLLISIONS,
    CodecError,
    Decoder,
    Encoder,
)
from planlang.isolation.frames import read_frame, write_frame


def _refuse(value: object) -> object:
    raise CodecError(f"{type(value).__name__} cannot cross")


def roundtrip(value: object, *, guarded: bool = True, int_bits: int | None = None) -> object:
    stream = io.BytesIO()
    write_frame(stream, Encoder(_refuse).encode(value))
    stream.seek(0)
    return Decoder({}, guarded=guarded, int_bits=int_bits).decode(read_frame(stream))


@pytest.mark.parametrize(
    "value",
    [
        None, True, 0, -1, 2**63, -(2**200), 1.5, float("inf"), -0.0, "", "\udc80 lone surrogate",
        [1, [2, "x"]], {"a": 1, 2: "b", (1, 2): [3]}, (1, (2, 3)), {1, "a", (2,)},
        frozenset({1, 2}), {"d": {"d": 1}}, [{"r": 1}, {"i": "ff"}],
    ],
)  # fmt: skip
def test_plain_values_cross_unchanged_with_their_types(value: object) -> None:
    back = roundtrip(value)
    assert back == value and type(back) is type(value)


def test_shared_parts_stay_shared_and_cycles_survive() -> None:
    x: list[object] = [0]
    for _ in range(60):
        x = [x, x]  # 2**60 nodes as a tree: only sharing makes this cheap
    back = roundtrip(x)
    assert isinstance(back, list) and back[0] is back[1]
    loop: list[object] = []
    loop.append(loop)
    again = roundtrip(loop)
    assert isinstance(again, list) and again[0] is again


def test_a_tuple_that_holds_itself_through_a_list_or_dict_crosses_as_itself() -> None:
    """``t = ([],); t[0].append(t)`` (a plan may make it): the tuple is decoded with a stand-in
    where it meets itself, put in place once made (REDTEAM14). Through a dict value too, and
    deeper: every place holds the very tuple, and no stand-in is left anywhere."""
    t: tuple[list[object], dict[str, object]] = ([], {})
    t[0].append(t)
    t[1]["me"] = [t, (t[0],)]
    back = roundtrip(t)
    assert isinstance(back, tuple) and back[0][0] is back
    assert back[1]["me"][0] is back and back[1]["me"][1][0] is back[0]
    nested: Any = ([([],)],)  # an inner tuple holds itself; the outer one holds that
    nested[0][0][0].append(nested[0][0])
    again: Any = roundtrip(nested)
    assert again[0][0][0][0] is again[0][0]
    assert repr(back) == repr(t) and repr(again) == repr(nested)


@pytest.mark.parametrize(
    "frame",
    [{"t": [{"r": 0}]}, {"t": [{"t": [{"r": 0}]}]}, {"s": [{"r": 0}]}, {"f": [{"r": 0}]},
     {"t": [{"d": [{"r": 0}, 1]}]}],
)  # fmt: skip
def test_a_tuple_or_set_within_itself_with_no_list_between_is_refused(frame: object) -> None:
    """No plan makes these (a tuple in itself needs a list or dict between); a plan's process
    that skips the language may send them: one line, never a stand-in handed on."""
    with pytest.raises(CodecError, match="holds itself"):
        Decoder({}, guarded=True).decode(frame)


def test_objects_that_are_not_plain_data_never_cross() -> None:
    with pytest.raises(CodecError):
        roundtrip([object()])
    with pytest.raises(CodecError):
        roundtrip({"f": len})


def test_a_pickle_is_not_a_frame() -> None:
    """The decoder is JSON: a pickled object (which would run code when unpickled) is refused."""
    body = pickle.dumps(ValueError("x"))
    stream = io.BytesIO(len(body).to_bytes(4, "big") + bytes(8) + body)  # length, time sent, body
    with pytest.raises((CodecError, UnicodeDecodeError, ValueError)):
        read_frame(stream)


def test_unknown_tags_and_references_are_refused() -> None:
    decoder = Decoder({}, guarded=True)
    for bad in ({"x": 1}, {"r": 5}, {"a": 1, "b": 2}, {"w": 1}):
        with pytest.raises(CodecError):
            decoder.decode(bad)


def test_a_frame_over_the_limit_is_refused_before_it_is_read() -> None:
    stream = io.BytesIO((10**6).to_bytes(4, "big") + bytes(8) + b"[]")
    with pytest.raises(CodecError):
        read_frame(stream, limit=1000)


def test_colliding_keys_are_refused_by_the_host() -> None:
    """Multiples of 2**61 - 1 all hash to 0: a set of them costs n**2 / 2 comparisons in C."""
    p = 2**61 - 1
    colliding = set(range(0, (MAX_COLLISIONS + 1) * p, p))
    with pytest.raises(CodecError, match="collide"):
        roundtrip(colliding)
    with pytest.raises(CodecError, match="collide"):
        roundtrip(dict.fromkeys(colliding))
    assert roundtrip(colliding, guarded=False) == colliding  # the child trusts the host


def test_aliased_tuple_keys_are_refused_by_the_host() -> None:
    """Hashing ``t = (t, t)`` sixty times walks 2**60 nodes (tuple hashes are not cached). The
    frames are made by hand: building such a set here would hang this very test."""
    t: tuple[object, ...] = (0,)
    for _ in range(60):
        t = (t, t)
    as_list = Encoder(_refuse).encode([t])
    with pytest.raises(CodecError, match="costly"):
        Decoder({}, guarded=True).decode({"s": as_list})
    with pytest.raises(CodecError, match="costly"):
        Decoder({}, guarded=True).decode({"d": [as_list[0], 1]})
    back = Decoder({}, guarded=True).decode(as_list)  # as a value (not a key) it crosses
    assert back[0][0] is back[0][1]


# -- plain trees: what crosses as JSON as it stands -------------------------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from planlang.isolation.frames import dumps, loads  # noqa: E402
from planlang.isolation.plain import PLAIN_DEPTH, plain_tree  # noqa: E402

_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
            | st.floats(allow_nan=True) | st.text(max_size=8))  # fmt: skip
_TREES = st.recursive(
    _SCALARS | st.tuples(_SCALARS),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4) | st.integers(0, 3), inner, max_size=4)
    ),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    """Equal, with the same types all the way down (JSON would make a tuple a list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(map(_same, a, b))
    return a == b or (a != a and b != b)


def _simple(value: object) -> bool:
    """Dicts with str keys and lists, of None, bools, str, finite floats and 64-bit ints."""
    if isinstance(value, dict):
        return all(type(k) is str and _simple(v) for k, v in value.items())
    if isinstance(value, list):
        return all(map(_simple, value))
    if type(value) is int:
        return -(2**63) < value < 2**63
    if type(value) is float:
        return value - value == 0.0
    return value is None or type(value) in (bool, str)


@given(_TREES.filter(lambda v: isinstance(v, dict | list)))
def test_a_plain_tree_is_its_own_json_and_every_simple_tree_is_one(value: object) -> None:
    """Where ``plain_tree`` is true, JSON gives back the very same tree (types, order, every
    value); and it is true of every tree of plain parts, none of them shared (as drawn)."""
    if plain_tree(value):
        assert _same(loads(dumps(value)), value)
    assert plain_tree(value) == _simple(value)


def test_a_tree_with_a_part_twice_or_past_the_depth_is_not_plain() -> None:
    shared: list[int] = [1]
    assert not plain_tree({"a": shared, "b": shared})
    assert not plain_tree([{}, *([{}] * 2)])  # one dict twice
    deep: list[object] = []
    for _ in range(PLAIN_DEPTH + 2):
        deep = [deep]
    assert not plain_tree(deep)
    assert plain_tree([{"a": [1, 2.5, "x", None, True]}, {"b": {"c": []}}])


# -- graphs: shared parts and cycles, tuples among them --------------------------------------

# A recipe of a graph: each node a list, a dict or a tuple of parts; a part a scalar, a new
# node, or a reference back to a node above it (or any node made before). A tuple is made once
# its parts are, so a reference to a tuple above it goes into a list or dict, appended after.
_RECIPES = st.recursive(
    st.integers(0, 9).map(lambda n: ("scalar", n)) | st.integers(0, 30).map(lambda n: ("ref", n)),
    lambda inner: st.tuples(st.sampled_from(["list", "dict", "tuple"]),
                            st.lists(inner, max_size=4)),
    max_leaves=24,
)  # fmt: skip


def _build(recipe: object) -> object:
    made: list[object] = []  # every node in the order begun (None: a tuple being made)
    later: list[tuple[Any, object, int]] = []  # a list or dict, its place, a tuple's number

    def build(node: Any) -> object:
        if node[0] == "scalar":
            return node[1]
        if node[0] == "ref":
            return made[node[1] % len(made)] if made else node[1]
        kind, parts = node
        if kind == "tuple":
            index = len(made)
            made.append(None)
            value = tuple(build(p) for p in parts if not _to_pending(p, made))
            made[index] = value
            return value
        box: Any = [] if kind == "list" else {}
        made.append(box)
        for n, part in enumerate(parts):
            place: object = len(box) if kind == "list" else f"k{n}"
            if _to_pending(part, made):  # a tuple above, still being made: filled in after
                later.append((box, place, part[1] % len(made)))
                item: object = None
            else:
                item = build(part)
            box.append(item) if kind == "list" else box.__setitem__(place, item)
        return box

    root = build(recipe)
    for box, place, index in later:  # each tuple is made now: a cycle through the box
        box[place] = made[index]
    return root


def _to_pending(part: Any, made: list[object]) -> bool:
    return part[0] == "ref" and bool(made) and made[part[1] % len(made)] is None


def _iso(a: object, b: object, pairs: dict[int, int]) -> bool:
    """The same graph: same types and scalars, and each container of ``a`` met again is the
    container of ``b`` met with it the first time (sharing and cycles kept, none added)."""
    if type(a) is not type(b):
        return False
    if type(a) not in (list, dict, tuple):
        return a == b
    if id(a) in pairs:
        return pairs[id(a)] == id(b)
    if id(b) in pairs.values():
        return False
    pairs[id(a)] = id(b)
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(_iso(a[k], b[k], pairs) for k in a)
    assert isinstance(a, list | tuple) and isinstance(b, list | tuple)
    return len(a) == len(b) and all(_iso(x, y, pairs) for x, y in zip(a, b, strict=True))


@given(_RECIPES)
def test_any_graph_of_lists_dicts_and_tuples_crosses_as_the_same_graph(recipe: object) -> None:
    """Shared parts, cycles through lists and dicts, tuples that hold themselves through
    them: what arrives is the same graph, node for node."""
    value = _build(recipe)
    assert _iso(value, roundtrip(value), {})
