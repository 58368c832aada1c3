"""The text of plan values without memory addresses: the same in every run.

``repr`` of a function, a generator, a ``map`` or a bound method names where it lives in
memory (``<function f at 0x7f...>``), another place in every run. A plan that puts such text in
a prompt (``agent(f"use {tool}")``) asks the ledger another question on every rerun and pays
again, and a replay gives another result. So the text guards (``str``, ``repr``, f-string
fields, ``%``, ``print``) hand on a ``StableText`` in place of a value whose text would hold an
address: the same text, each ``at 0x...`` left out (``<function f>``), built here in Python from
the parts ``walks.text_size`` has priced already (so never longer than the limit allows).

Values without such a part are formatted by Python itself, as before, at no cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from planlang.sandbox.wall import HostProxy, ReadOnlyDict, ReadOnlyList

__all__ = ["StableText", "has_address", "stable_repr"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
# leaves whose text never holds an address (text_size walks to the others and asks)
NO_ADDRESS: frozenset[type] = frozenset(
    {str, int, float, bool, type(None), complex, bytes, range, type, HostProxy}
)
_KEYS: type = type({}.keys())
_VALUES: type = type({}.values())
_ITEMS: type = type({}.items())


def has_address(leaf: Any) -> bool:
    """Would the text of this leaf (a value ``text_size`` does not open) name an address?"""
    return " at 0x" in repr(leaf)


class _Text(str):
    """Punctuation between parts: written as it is."""

    __slots__ = ()


_SEP, _COLON = _Text(", "), _Text(": ")


def _joined(parts: Any, open_: str, close: str, one: str = "") -> Iterator[Any]:
    yield _Text(open_)
    count = 0
    for count, part in enumerate(parts, 1):
        if count > 1:
            yield _SEP
        yield part
    if count == 1 and one:
        yield _Text(one)
    yield _Text(close)


def _pairs(pairs: Any, open_: str, close: str) -> Iterator[Any]:
    yield _Text(open_)
    for count, (key, value) in enumerate(pairs):
        if count:
            yield _SEP
        yield key
        yield _COLON
        yield value
    yield _Text(close)


def _opened(value: Any) -> tuple[Iterator[Any], str] | None:
    """(the parts of a container's text, what repr writes for it inside itself), or None."""
    kind = type(value)
    if kind is list or kind is ReadOnlyList:
        return _joined(value, "[", "]"), "[...]"
    if kind is tuple:
        return _joined(value, "(", ")", ","), "(...)"
    if kind is dict or kind is ReadOnlyDict:
        return _pairs(value.items(), "{", "}"), "{...}"
    if isinstance(value, (set, frozenset)):
        name = kind.__name__
        if not value:
            return iter([_Text(f"{name}()")]), "..."
        if kind is set:
            return _joined(value, "{", "}"), "..."
        return _joined(value, f"{name}({{", "})"), "..."
    if kind is _KEYS or kind is _VALUES:
        return _joined(value, f"{kind.__name__}([", "])"), "..."
    if kind is _ITEMS:
        return _joined(value, "dict_items([", "])"), "..."
    if isinstance(value, BaseException):
        return _joined(value.args, f"{kind.__name__}(", ")"), "..."
    if kind is slice:
        return _joined((value.start, value.stop, value.step), "slice(", ")"), "..."
    if isinstance(value, list):
        return _joined(value, "[", "]"), "[...]"
    if isinstance(value, tuple):
        return _joined(value, "(", ")", ","), "(...)"
    if isinstance(value, dict):
        return _pairs(value.items(), "{", "}"), "{...}"
    return None


def stable_repr(value: Any) -> str:
    """``repr(value)`` with every ``at 0x...`` of its parts left out; a loop, not recursion,
    so a deep value reaches no C stack."""
    opened = _opened(value)
    if opened is None:
        return _ADDRESS.sub(">", repr(value))
    out: list[str] = []
    frames: list[tuple[int, Iterator[Any]]] = [(id(value), opened[0])]
    path = {id(value)}
    while frames:
        key, parts = frames[-1]
        for part in parts:
            kind = type(part)
            if kind is _Text:
                out.append(part)
                continue
            inner = _opened(part) if kind is not str else None
            if inner is None:
                out.append(repr(part) if kind in NO_ADDRESS else _ADDRESS.sub(">", repr(part)))
            elif id(part) in path:
                out.append(inner[1])
            else:
                path.add(id(part))
                frames.append((id(part), inner[0]))
                break
        else:
            frames.pop()
            path.discard(key)
    return "".join(out)


def _stable_str(value: Any) -> str:
    """``str(value)``: a container's is its repr; an exception's is that of its arguments."""
    if isinstance(value, BaseException):
        args = value.args
        if not args:
            return ""
        if len(args) > 1:
            return stable_repr(args)
        if isinstance(value, KeyError) or type(args[0]) is not str:
            return stable_repr(args[0])
        return args[0]
    return stable_repr(value)


class StableText:
    """Stands in for a value whose text holds an address, wherever only its text is wanted:
    ``str``, ``repr``, ``ascii`` and an empty format spec give that text without the address.
    A format spec goes to the value itself (Python refuses most, as it did)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return stable_repr(self.value)

    def __str__(self) -> str:
        return _stable_str(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec) if spec else _stable_str(self.value)
