"""How many nodes a walk of a decoded value visits, shared parts counted each time they occur
(``handles`` bounds what a host word is handed by it)."""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["walk_size"]

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
