"""Which values cross between a plan's process and the host's as plain JSON, as they stand.

Such a value needs no walk of the codec (``codec``): the frame says it is plain and the other
side takes what the JSON parser made. The checks are exact (a value that is not plain is never
sent as one) and inline where they run per item, on the path of every host call and answer.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BIG", "PLAIN_DEPTH", "flat", "plain_answer", "plain_tree", "shares_lists"]

BIG = 2**63  # an int crosses as itself only within (-BIG, BIG)


def flat(value: Any) -> bool:
    """A value that crosses as itself: str, bool, None, a finite float, an int of 64 bits."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -BIG < value < BIG
    return kind is float and value - value == 0.0


def plain_answer(value: Any) -> bool:
    """Whether a host answer crosses as plain JSON, as it stands, decoded as itself: a dict
    with str keys of scalars and lists of scalars (the usual answer of a host word), copied
    as the in-process sandbox copies it (a list under two keys arrives as two lists). The
    frame says so (channel's ``["p", id, payload]``): the other side takes the dict the JSON
    parser made, with no walk."""
    if type(value) is not dict:
        return False
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str:
            return False
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if -BIG < item < BIG:
                continue
            return False
        if kind is float:
            if item - item == 0.0:
                continue
            return False
        if kind is not list:
            return False
        for element in item:
            if not flat(element):
                return False
    return True


PLAIN_DEPTH = 64  # levels a plain tree may nest (JSON parsers stop at a few hundred)


def plain_tree(value: Any) -> bool:
    """Whether a dict or list crosses as plain JSON, as it stands, and decodes into exactly
    its copy: dicts with str keys and lists, of scalars that cross as themselves (``flat``),
    no container in it twice (JSON would make two of it), and no deeper than ``PLAIN_DEPTH``.
    A list of host answers (a fan-out's replies) is one, as is a thunk's usual result."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return False
    return _plain(value, set(), 0)


def _plain(value: Any, seen: set[int], depth: int) -> bool:
    """One container of ``plain_tree``: its scalars checked inline, as ``flat`` checks them
    (a call each would cost more than the check: a fan-out's replies are thousands)."""
    key = id(value)
    if key in seen or depth > PLAIN_DEPTH:
        return False
    seen.add(key)
    if type(value) is dict:
        for name in value:
            if type(name) is not str:
                return False
        items = value.values()
    else:
        items = value
    for item in items:
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if -BIG < item < BIG:
                continue
            return False
        if kind is float:
            if item - item == 0.0:
                continue
            return False
        if (kind is dict or kind is list) and _plain(item, seen, depth + 1):
            continue
        return False
    return True


def shares_lists(value: dict[Any, Any]) -> bool:
    """Whether one list is under two keys of a dict (plain JSON would make it two)."""
    seen = 0
    ids = set()
    for item in value.values():
        if type(item) is list:
            seen += 1
            ids.add(id(item))
    return len(ids) != seen
