"""How many nodes a walk of a decoded value visits, shared parts counted each time they occur
(``handles`` bounds what a host word is handed by it)."""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["tuple_depth", "walk_size"]

_CONTAINERS = frozenset({list, dict, tuple, set, frozenset})


def walk_size(value: Any, most: int) -> int:
    """The nodes a walk of ``value`` visits (``json.dumps``, ``==``, ``repr``: each shared
    part every time it occurs; a container met again within itself, once), counted up to
    just past ``most``. Shared parts kept shared make ``x = [x, x]`` sixty times sixty lists,
    and a walk of 2**60 nodes: the runtime's ``agent`` serializes its schema in C with the
    interpreter's lock held, so one such schema stopped the host for good (REDTEAM11)."""
    done: dict[int, int] = {}  # id of a container walked -> its size
    path: set[int] = set()  # the containers being walked now
    stack: list[list[Any]] = [[value, iter(_parts(value)), 1]]
    path.add(id(value))
    while stack:
        top = stack[-1]
        for part in top[1]:
            if type(part) not in _CONTAINERS:
                top[2] += 1
            elif id(part) in done:
                top[2] += done[id(part)]
            elif id(part) in path:
                top[2] += 1
            else:
                path.add(id(part))
                stack.append([part, iter(_parts(part)), 1])
                break
            if top[2] > most:
                return top[2]
        else:
            stack.pop()
            path.discard(id(top[0]))
            done[id(top[0])] = top[2]
            if not stack:
                return top[2]
            stack[-1][2] += top[2]
            if stack[-1][2] > most:
                return stack[-1][2]
    return 0


def _parts(container: Any) -> Any:
    """What a walk of a container visits next: a dict's keys and values, other items."""
    if type(container) is dict:
        return itertools.chain.from_iterable(container.items())
    return container if type(container) in _CONTAINERS else ()


def tuple_depth(value: Any, most: int) -> int:
    """The most levels of tuples nested directly within tuples anywhere in ``value`` (what
    ``hash`` of one recurses through, in C), counted up to just past ``most``: a loop, each
    container walked once."""
    heights: dict[int, int] = {}  # id of a tuple walked -> its height
    seen: set[int] = set()  # other containers walked, or being walked
    deepest = 0
    stack: list[list[Any]] = [[value, iter(_parts(value)), 1]]
    seen.add(id(value))
    while stack:
        top = stack[-1]
        for part in top[1]:
            kind = type(part)
            if kind not in _CONTAINERS:
                continue
            if kind is tuple:
                known = heights.get(id(part))
                if known is not None:
                    if type(top[0]) is tuple:
                        top[2] = max(top[2], known + 1)
                    continue
            if id(part) in seen:  # a list or dict met again, or a tuple inside itself
                continue
            seen.add(id(part))
            stack.append([part, iter(_parts(part)), 1])
            break
        else:
            stack.pop()
            if type(top[0]) is tuple:
                heights[id(top[0])] = top[2]
                deepest = max(deepest, top[2])
                if deepest > most:
                    return deepest
                if stack and type(stack[-1][0]) is tuple:
                    stack[-1][2] = max(stack[-1][2], top[2] + 1)
    return deepest
