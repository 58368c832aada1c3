"""The host's memo of keyword values a plan sends again (a worker's schema): what a host word
gets, and every error, is what the codec's decoder gives, each time a fresh copy."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planlang.isolation.codec import CodecError, Decoder, Encoder
from planlang.isolation.known_values import KNOWN, KnownValues
from planlang.sandbox import Sandbox


class _Handle:
    def __init__(self, number: int) -> None:
        self.number = number


def _encode(value: Any) -> Any:
    def handle(obj: Any) -> Any:
        assert isinstance(obj, _Handle)
        return {"c": obj.number}

    return orjson.loads(orjson.dumps(Encoder(handle).encode(value)))  # as the frame parses


def _decoder(made: list[int]) -> Decoder:
    def callback(number: Any) -> _Handle:
        made.append(number)
        return _Handle(number)

    return Decoder({"c": callback}, guarded=True)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, _Handle):
        return a.number == b.number
    return a == b or (a != a and b != b)


_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
            | st.floats(allow_nan=True) | st.text(max_size=6))  # fmt: skip
_VALUES = st.recursive(
    _SCALARS | st.builds(_Handle, st.integers(0, 9)),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4) | st.integers(0, 3), inner, max_size=4)
        | st.tuples(inner, inner)
    ),
    max_leaves=16,
)
_KEYWORDS = st.dictionaries(st.text(min_size=1, max_size=5), _VALUES, max_size=4)


@given(_KEYWORDS, st.booleans())
def test_keywords_decode_as_the_codec_decodes_them_the_first_time_and_again(
    keywords: dict[str, Any], shared: bool
) -> None:
    if shared and keywords:  # one value under two names: the second is a reference
        first = next(iter(keywords.values()))
        keywords = {**keywords, "again": first}
    tree = _encode(keywords)
    expected_handles: list[int] = []
    expected = _decoder(expected_handles).decode(_encode(keywords))
    memo = KnownValues()
    for _ in range(3):  # the first time fills the memo; then it is read
        handles: list[int] = []
        got = memo.keywords(_encode(keywords), _decoder(handles).decode)
        assert _same(got, expected)
        assert handles == expected_handles  # every handle looked up, each time
        for name, value in got.items():  # shared as the codec shares them, no more
            for other, value2 in got.items():
                if name != other and isinstance(value, dict | list):
                    assert (value is value2) == (expected[name] is expected[other])
    assert tree == _encode(keywords)  # the tree as sent is not changed


def test_a_remembered_value_is_a_fresh_copy_each_time() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    memo = KnownValues()
    first = memo.keywords(_encode({"schema": schema, "model": "m"}), _decoder([]).decode)
    first["schema"]["properties"]["ok"]["type"] = "changed by the host word"
    first["schema"]["required"].append("more")
    again = memo.keywords(_encode({"schema": schema, "model": "m"}), _decoder([]).decode)
    assert again == {"schema": schema, "model": "m"}
    assert again["schema"] is not first["schema"]


@pytest.mark.parametrize(
    "tree",
    [
        {"d": ["schema", {"d": ["a", {"q": 1}]}]},  # a tag nobody takes
        {"d": ["schema", {"d": ["a", 1, "b"]}]},  # a dict with a key and no value
        {"d": ["schema", {"d": ["a", {"r": 7}]}]},  # a reference to nothing
        {"d": ["schema", [1, {"r": 0}], "x"]},  # keywords of an odd length
        {"d": "not a list"},  # not a dict of keywords at all
    ],
)
def test_what_the_codec_refuses_is_refused_the_same(tree: Any) -> None:
    with pytest.raises(CodecError) as expected:
        Decoder({}, guarded=True).decode(tree)
    memo = KnownValues()
    for _ in range(2):
        with pytest.raises(CodecError) as got:
            memo.keywords(tree, Decoder({}, guarded=True).decode)
        assert str(got.value) == str(expected.value)


def test_the_memo_keeps_at_most_its_bound_and_the_latest() -> None:
    memo = KnownValues()
    for n in range(3 * KNOWN):
        memo.keywords(_encode({"schema": {"n": n}}), _decoder([]).decode)
    known = memo._known
    assert len(known) == KNOWN
    assert orjson.dumps(_encode({"n": 3 * KNOWN - 1})) in known
    assert orjson.dumps(_encode({"n": 0})) not in known


def test_an_isolated_plan_sends_one_schema_many_times_and_each_call_gets_it_whole() -> None:
    """Under process isolation: a host word that changes what it was given changes nothing of
    the next call's (each gets a fresh copy), nor of the plan's own value."""
    seen: list[Any] = []

    def word(prompt: str, schema: Any = None, data: Any = None) -> Any:
        seen.append((prompt, schema, data))
        schema["properties"]["n"]["type"] = "changed"
        schema["required"].append("x")
        return len(seen)

    plan = (
        'S = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}\n'
        "got = [word(str(i), schema=S, data={'i': i, 'pair': (i, i)}) for i in range(4)]\n"
        "result = [got, S]\n"
    )
    box = Sandbox(host={"word": word}, isolation="process")
    got, schema = box.run(plan)
    expected = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert got == [1, 2, 3, 4]
    assert schema == expected
    assert [call[0] for call in seen] == ["0", "1", "2", "3"]
    assert [call[2] for call in seen] == [{"i": i, "pair": (i, i)} for i in range(4)]
    for call in seen:  # each changed its own copy only
        assert call[1]["properties"]["n"]["type"] == "changed"
        assert call[1]["required"] == ["n", "x"]
