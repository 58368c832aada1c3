"""A plan's result as JSON, with its cycles and shared parts kept.

A plan may return ``x = []; x.append(x)`` or a list holding the same list twice at every one
of 40 levels: as a tree the first has no end and the second has 2**40 leaves, though each is
only a few objects. Such a result is written as a graph: each list or dict reached more than
once appears once as ``{"$id": n, "$list": [...]}`` (or ``"$dict"``) and is then referred to as
``{"$ref": n}``, the whole wrapped as ``{"$shared": <value>}``. A result with no shared part
(nearly every one) is plain JSON, as before. Tuples are written as lists and sets as sorted
lists where they can be sorted; anything else that is not JSON as its ``str``. NaN and the
infinities, which JSON has not, are written as the texts ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``; a lone surrogate, which UTF-8 has not, as U+FFFD. An int past
the 4,300 digits Python's JSON writes (its ``int_max_str_digits``) is written as its digits in
a text. A dict key that is not text is written as its text at most ``KEY_MOST`` characters
long (a tuple key of shared parts can be gigabytes as text), made unique if two are alike.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["decode", "dumps", "encode"]

_CONTAINERS = (list, tuple, dict, set, frozenset)
_NOT_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_SURROGATE = re.compile("[\ud800-\udfff]")
KEY_MOST = 1_000  # characters of a key that is not text, written
_DIGITS_MOST = 4_000  # digits an int may be written with at once, under Python's 4,300


def _items(value: Any) -> list[Any]:
    if isinstance(value, set | frozenset):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    return list(value.values()) if isinstance(value, dict) else list(value)


def _shared(value: Any) -> set[int]:
    """Ids of the containers reached more than once (walked without recursion)."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if not isinstance(item, _CONTAINERS):
            continue
        if id(item) in seen:
            shared.add(id(item))
            continue
        seen.add(id(item))
        stack.extend(_items(item))
    return shared


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data; shared parts become ``$id``/``$ref`` (see the module)."""
    shared = _shared(value)
    ids: dict[int, int] = {}
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, key, item = stack.pop()
        if not isinstance(item, _CONTAINERS):
            ok = item is None or isinstance(item, str | int | float | bool)
            if type(item) is int and abs(item) >= _LONG:
                item = digits(item)  # JSON's writer refuses it: its digits, as text
            elif type(item) is float and not math.isfinite(item):
                item = _NOT_FINITE[str(item)]  # JSON has no such number: its name, as text
            elif type(item) is str and not item.isascii() and _SURROGATE.search(item):
                item = _SURROGATE.sub("\ufffd", item)  # UTF-8 holds no lone surrogate
            parent[key] = item if ok else str(item)
            continue
        if id(item) in ids:
            parent[key] = {"$ref": ids[id(item)]}
            continue
        out: Any
        # children are pushed last first, so they are written in order: an $id before its $refs
        if isinstance(item, dict):
            out = {}
            entries = []
            alike: dict[str, int] = {}
            for k, v in item.items():
                name = k if isinstance(k, str) else key_text(k)
                if not name.isascii() and _SURROGATE.search(name):
                    name = _SURROGATE.sub("\ufffd", name)
                if name in out:  # two keys alike as text (1 and "1", long keys cut alike)
                    name = _unique(out, name, alike)
                out[name] = None
                entries.append((out, name, v))
            stack.extend(reversed(entries))
        else:
            children = _items(item)
            out = [None] * len(children)
            stack.extend((out, i, children[i]) for i in reversed(range(len(children))))
        if id(item) in shared:
            ids[id(item)] = len(ids)
            tag = "$dict" if isinstance(item, dict) else "$list"
            parent[key] = {"$id": ids[id(item)], tag: out}
        else:
            parent[key] = out
    return {"$shared": root[0]} if shared else root[0]


_LONG = 10**_DIGITS_MOST


def digits(n: int) -> str:
    """The decimal digits of an int of any length, in parts each within Python's limit on
    one conversion (a 100,000-bit int is about 30,000 digits)."""
    if abs(n) < _LONG:
        return str(n)
    sign, n = ("-" if n < 0 else ""), abs(n)
    parts: list[str] = []
    while n >= _LONG:
        n, low = divmod(n, _LONG)
        parts.append(str(low).rjust(_DIGITS_MOST, "0"))
    parts.append(str(n))
    return sign + "".join(reversed(parts))


def key_text(key: Any, most: int = KEY_MOST) -> str:
    """A key that is not text as text, as ``str`` writes it, but never past ``most``
    characters (``…`` marks the cut): walked, not made whole and then cut."""
    out: list[str] = []
    size = 0
    stack: list[tuple[bool, Any]] = [(False, key)]
    while stack and size <= most:
        literal, item = stack.pop()
        if literal:
            text = item
        elif isinstance(item, tuple | frozenset | list):
            opening, closing = ("(", ")") if isinstance(item, tuple) else ("frozenset({", "})") \
                if isinstance(item, frozenset) else ("[", "]")  # fmt: skip
            members = list(item)[: most - size + 1]  # no more than could be shown
            tail = "," if isinstance(item, tuple) and len(item) == 1 else ""
            stack.append((True, tail + closing))
            for i in reversed(range(len(members))):
                stack.append((False, members[i]))
                if i:
                    stack.append((True, ", "))
            text = opening
        elif isinstance(item, str):
            text = repr(item[: most - size + 1])
        elif type(item) is int:
            text = (
                digits(item)
                if abs(item) < 10 ** (most + 1)
                else f"<an int of {item.bit_length()} bits>"
            )
        else:
            text = str(item)[: most - size + 1]
        out.append(text)
        size += len(text)
    joined = "".join(out)
    return joined if size <= most and not stack else joined[:most] + "…"


def _unique(out: dict[str, Any], name: str, alike: dict[str, int]) -> str:
    """``name #2``, ``#3``, ...: the next number not taken, remembered per name (counted up
    from 2 each time, 20,000 keys cut alike took minutes; red team 22)."""
    n = alike.get(name, 2)
    while f"{name} #{n}" in out:
        n += 1
    alike[name] = n + 1
    return f"{name} #{n}"


def dumps(value: Any, indent: int | None = 2) -> str:
    """Strict JSON (no NaN or Infinity, which JSON readers refuse)."""
    return json.dumps(encode(value), indent=indent, ensure_ascii=False, allow_nan=False)


def decode(data: Any) -> Any:
    """The value ``encode`` wrote, with its cycles and shared parts rebuilt."""
    if not (isinstance(data, dict) and set(data) == {"$shared"}):
        return data
    made: dict[int, Any] = {}  # every $id's container, made before any is filled
    stack = [data["$shared"]]
    while stack:
        item = stack.pop()
        if isinstance(item, dict) and "$id" in item and ("$list" in item or "$dict" in item):
            made[item["$id"]] = [] if "$list" in item else {}
            item = item.get("$list", item.get("$dict"))
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict) and set(item) != {"$ref"}:
            stack.extend(item.values())
    filled: set[int] = set()
    pending: list[tuple[Any, Any]] = []  # (new container, its encoded items) to fill in

    def node(item: Any) -> Any:
        if isinstance(item, dict) and set(item) == {"$ref"}:
            return made[item["$ref"]]
        if isinstance(item, dict) and "$id" in item and ("$list" in item or "$dict" in item):
            new = made[item["$id"]]
            if item["$id"] not in filled:
                filled.add(item["$id"])
                pending.append((new, item.get("$list", item.get("$dict"))))
            return new
        if isinstance(item, list | dict):
            new = [] if isinstance(item, list) else {}
            pending.append((new, item))
            return new
        return item

    root = node(data["$shared"])
    while pending:
        new, body = pending.pop()
        if isinstance(new, list):
            new.extend(node(child) for child in body)
        else:
            new.update((k, node(v)) for k, v in body.items())
    return root
