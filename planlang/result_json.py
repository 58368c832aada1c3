"""A plan's result as JSON, with its cycles and shared parts kept.

A plan may return ``x = []; x.append(x)`` or a list holding the same list twice at every one
of 40 levels: as a tree the first has no end and the second has 2**40 leaves, though each is
only a few objects. Such a result is written as a graph: each list or dict reached more than
once appears once as ``{"$id": n, "$list": [...]}`` (or ``"$dict"``) and is then referred to as
``{"$ref": n}``, the whole wrapped as ``{"$shared": <value>}``. A result with no shared part
(nearly every one) is plain JSON, as before. Tuples are written as lists and sets as sorted
lists where they can be sorted; anything else that is not JSON as its ``str``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode", "dumps", "encode"]

_CONTAINERS = (list, tuple, dict, set, frozenset)


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
            for k, v in item.items():
                name = k if isinstance(k, str) else str(k)
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


def dumps(value: Any, indent: int | None = 2) -> str:
    return json.dumps(encode(value), indent=indent, ensure_ascii=False)


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
