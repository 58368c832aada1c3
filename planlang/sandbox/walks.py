"""Bounded walks: the work a C call would do on shared structure, estimated before it runs.

Aliasing builds data whose walk is far larger than anything allocated: ``x = [x, x]`` sixty
times is sixty small lists but a 2**60-node tree, and ``[big] * n`` is ``n`` references to one
``big``. ``repr`` and its relatives walk such data as a tree in one C call that no step count
or clock check can interrupt. ``text_size`` estimates the length of that text first, in Python,
and stops as soon as the estimate passes a budget, so the estimate itself costs O(budget) at
most however large the text would be. A part seen again is priced from a memo (its text is the
same every time it occurs, as long as no cycle was cut inside it), so ``[[a] * 1000] * 1000``
costs three short loops, not a million.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any

from planlang.errors import a_kind
from planlang.sandbox.limits import Meter
from planlang.sandbox.stable_text import NO_ADDRESS, StableText, has_address
from planlang.sandbox.wall import HostProxy, ReadOnlyDict, ReadOnlyList

__all__ = ["TEXT_SCALARS", "Walks", "sort_work", "text_size"]

# Types whose text is bounded by what they are: str by its length (already allocated), int by
# sys.int_max_str_digits, the rest by a constant. Guards pass them on a type check alone.
TEXT_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})

_FIXED_COST: dict[type, int] = {bool: 5, type(None): 4}  # longest repr of each
_CUT = 5  # "[...]": repr prints this for a container already on the current path
_OTHER = 100  # functions, iterators, ranges, types: "<map object at 0x7f...>" and the like
_FLAT_FROM = 16  # sequences at least this long are tried on the C-speed flat path first
_MAPPINGS = frozenset({dict, ReadOnlyDict})
_FLAT_KINDS = frozenset({list, tuple, ReadOnlyList, dict, ReadOnlyDict})
_NAMED = frozenset({types.FunctionType, types.GeneratorType, types.BuiltinFunctionType,
                    types.MethodType})  # fmt: skip
_KEYS: type = type({}.keys())
_VALUES: type = type({}.values())
_ITEMS: type = type({}.items())


def _int_cost(n: int) -> int:
    """Digits of ``n`` (an upper bound: log10(2) < 1234/4096) and its sign."""
    return (n.bit_length() * 1234 >> 12) + 1 + (n < 0)


def _open(value: Any) -> tuple[int, Iterator[Any]] | None:
    """(characters of the container's own punctuation, its parts), or None for a leaf."""
    kind = type(value)
    if kind is list or kind is ReadOnlyList:  # "[a, b]": brackets and n - 1 separators
        return (2 * len(value) or 2), iter(value)
    if kind is dict or kind is ReadOnlyDict:  # "{k: v, k: v}"; the order parts are priced in
        return (4 * len(value) or 2), chain(value, value.values())  # does not matter
    if kind is tuple:  # "(a,)" has one character more
        return (2 * len(value) or 2) + 1, iter(value)
    return _open_other(value, kind)


def _open_other(value: Any, kind: type) -> tuple[int, Iterator[Any]] | None:
    if kind is set or kind is frozenset or isinstance(value, (set, frozenset)):
        return 11 + 2 * len(value), iter(value)
    if kind is _KEYS or kind is _VALUES:
        return 13 + 2 * len(value), iter(value)
    if kind is _ITEMS:  # each item is a fresh (key, value) tuple: priced here, not opened
        return 13 + 6 * len(value), chain.from_iterable(value)
    if isinstance(value, (list, tuple)):
        return 3 + 2 * len(value), iter(value)
    if isinstance(value, dict):
        return 2 + 4 * len(value), chain(value, value.values())
    if isinstance(value, BaseException):
        return len(type(value).__name__) + 3 + 2 * len(value.args), iter(value.args)
    if kind is slice:
        return 13, iter((value.start, value.stop, value.step))
    return None


def _leaf_cost(value: Any, kind: type) -> int:
    """Text length of a value that is not opened."""
    if kind is str:
        return len(value) + 2
    if kind is int:
        return _int_cost(value)
    if kind is float:
        return len(repr(value))  # at most 24 characters
    if kind in _FIXED_COST:
        return _FIXED_COST[kind]
    if kind is HostProxy:
        return len(repr(value))  # "<host object label>": the label is the host's
    if kind in _NAMED:  # "<function outer.<locals>.name at 0x...>": names are the plan's
        return _OTHER + len(value.__qualname__)
    return _OTHER


def _flat_cost(value: Any) -> int:
    """Text length of a long list, tuple or dict of scalars, each part of one type, priced by
    C loops; -1 if it holds anything else (then the walk prices the items one by one)."""
    n = len(value)
    if type(value) in _MAPPINGS:
        keys, values = _scalars_cost(value, n), _scalars_cost(value.values(), n)
        return -1 if keys < 0 or values < 0 else keys + values + max(2, 4 * n)
    cost = _scalars_cost(value, n)
    return -1 if cost < 0 else cost + max(2, 2 * n) + (type(value) is tuple)


def _scalars_cost(items: Any, n: int) -> int:
    kinds = set(map(type, items))
    if len(kinds) != 1:
        return -1 if kinds else 0
    kind = kinds.pop()
    if kind is int:
        signs = n if min(items) < 0 else 0
        return (sum(map(int.bit_length, items)) * 1234 >> 12) + n + signs
    if kind is str:
        return sum(map(len, items)) + 2 * n
    if kind is float:
        return sum(map(len, map(repr, items)))
    if kind in _FIXED_COST:
        return _FIXED_COST[kind] * n
    return -1


def _small_cost(value: Any, kind: type, depth: int) -> int:
    """Text length of a short list, tuple or dict of scalars or of such short containers
    (``depth`` levels more), without setting up a walk; -1 for anything else. At most
    ``_FLAT_FROM ** (depth + 1)`` parts are looked at, however they are shared."""
    n = len(value)
    if n >= _FLAT_FROM:
        return -1
    total = 2 * n or 2
    if kind is dict or kind is ReadOnlyDict:
        total += total
        value = chain(value, value.values())
    elif kind is tuple:
        total += 1
    for item in value:
        kind = type(item)
        if kind is str:
            total += len(item) + 2
        elif kind is int:
            total += _int_cost(item)
        elif kind is float:
            total += len(repr(item))
        elif kind in _FIXED_COST:
            total += _FIXED_COST[kind]
        elif depth and kind in _FLAT_KINDS:
            cost = _small_cost(item, kind, depth - 1)
            if cost < 0:
                return -1
            total += cost
        else:
            return -1
    return total


def text_size(value: Any, budget: int, leaves: list[Any] | None = None) -> int:
    """Estimated ``len(repr(value))``, counting a shared part every time it occurs, as repr
    does. Returns early, with some number above ``budget``, once the text is known to pass it.

    Exact in structure; an upper bound for numbers; strings count as their length plus quotes
    (escapes, at most 10 characters for one, are not counted: callers check the text made).
    ``leaves`` gets the parts not opened whose text may name an address (``stable_text``).
    """
    kind = type(value)
    if kind in _FLAT_KINDS:
        flat = _flat_cost(value) if len(value) >= _FLAT_FROM else _small_cost(value, kind, 2)
        if flat >= 0:
            return flat
    elif kind in TEXT_SCALARS:
        return _leaf_cost(value, kind)
    opened = _open(value)
    if opened is None:
        if leaves is not None and kind not in NO_ADDRESS:
            leaves.append(value)
        return _leaf_cost(value, kind)
    total = opened[0]
    if total > budget:
        return total
    memo: dict[int, int] = {}  # id -> text length of a part whose walk cut no cycle above it
    path = {id(value): 0}  # id -> depth, for the containers on the current path
    alive: list[Any] = []  # keeps every priced part alive, so no id is reused during the walk
    # frames: [id, parts, total when opened, shallowest depth a cut inside it went back to]
    frames: list[list[Any]] = [[id(value), opened[1], 0, 0]]
    while frames:
        frame = frames[-1]
        for item in frame[1]:
            kind = type(item)
            if kind is str:
                total += len(item) + 2
            elif kind is int:
                total += _int_cost(item)
            elif kind is float:
                total += len(repr(item))
            elif kind in _FIXED_COST:
                total += _FIXED_COST[kind]
            else:
                key = id(item)
                known = memo.get(key)
                if known is not None:
                    total += known
                    if total > budget:
                        return total
                    continue
                depth = path.get(key)
                if depth is not None:  # a cycle: repr prints "[...]" and goes no further
                    total += _CUT
                    frame[3] = min(frame[3], depth)
                    continue
                if kind in _FLAT_KINDS and len(item) >= _FLAT_FROM:
                    flat = _flat_cost(item)
                    if flat >= 0:
                        memo[key] = flat
                        alive.append(item)
                        total += flat
                        if total > budget:
                            return total
                        continue
                part = _open(item)
                if part is None:
                    if leaves is not None and kind not in NO_ADDRESS:
                        leaves.append(item)
                    total += _leaf_cost(item, kind)
                    continue
                path[key] = len(frames)
                alive.append(item)
                frames.append([key, part[1], total, len(frames)])
                total += part[0]
                if total > budget:
                    return total
                break
        else:
            key, _parts, start, cut = frames.pop()
            del path[key]
            if cut >= len(frames):  # no cut went above this part: its text is always the same
                memo[key] = total - start
            else:
                frames[-1][3] = min(frames[-1][3], cut)
            if total > budget:
                return total
    return total


def sort_work(n: int) -> int:
    """Comparisons a sort of ``n`` items may make (timsort: n log2 n at most)."""
    return n * n.bit_length()


class Walks:
    """The guards that price C walks before they run, for one run.

    Two rules. Text of a container (``repr``, ``print``, f-string fields, ``%``) is priced by
    ``text_size`` against ``Limits.size`` first. A C loop over plan data is charged a step per
    ``_C_ITEMS`` items it will touch, so checkpoints (the clock, memory) come as often as its
    work, and a C callable that C calls item by item (``map``, ``filter``, ``key=``) is charged
    on every call, with the size of what it is handed.
    """

    def __init__(
        self,
        meter: Meter,
        plan_globals: dict[str, Any],
        getiter: Callable[[Any], Iterator[Any] | Any],
    ):
        self.meter = meter
        self.plan_globals = plan_globals  # the plan's namespace: its functions charge themselves
        self.getiter = getiter  # the metered loop of ``guards.Guards``

    # -- text ------------------------------------------------------------------------------

    def text(self, value: Any, what: str = "The text") -> Any:
        """``value`` itself, once its text is known to fit ``Limits.size`` (or a
        ``StableText`` of it, where its text would name a memory address): what an f-string
        field, ``str(x)``, ``print`` or ``%s`` is about to turn into text goes through here."""
        if type(value) in TEXT_SCALARS:
            return value
        size = self.meter.limits.size
        leaves: list[Any] = []
        cost = text_size(value, size, leaves)
        if cost > size:
            self.meter.allow_size(cost, f"{what} of {a_kind(type(value).__name__)}")
        elif cost > 1024:
            self.meter.charge(cost >> 10)
        if leaves and any(map(has_address, leaves)):  # its text without them (stable_text)
            return StableText(value)
        return value

    def repr(self, value: Any) -> str:
        if type(value) in TEXT_SCALARS:
            text = repr(value)  # a str's escapes: s = repr(s) in a loop doubles "\\" a turn
            if len(text) > self.meter.limits.size:
                self.meter.allow_size(len(text), "repr()")
            return text
        text = repr(self.text(value, "repr()"))
        self.made_text(text, "repr()")
        return text

    def made_text(self, text: str, what: str) -> None:
        # escapes in strings are not priced ahead (at most 10 characters for one)
        if len(text) > self.meter.limits.size:
            self.meter.allow_size(len(text), what)

    def printing(self, plan_print: Callable[..., None]) -> Callable[..., None]:
        """``print`` whose arguments (and ``sep``) are priced as text before any is made."""
        text = self.text

        def checked_print(*args: Any, **kwargs: Any) -> None:
            for arg in kwargs.values():
                if type(arg) not in TEXT_SCALARS:
                    text(arg, "print()")
            plan_print(*[a if type(a) in TEXT_SCALARS else text(a, "print()") for a in args],
                       **kwargs)  # fmt: skip

        return checked_print

    # -- C loops ---------------------------------------------------------------------------

    def priced_input(self, items: Any, sort: bool = False) -> Any:
        """``items`` for a C loop: a sized one is charged its length up front (O(1)); a lazy one
        made in C is walked through the metered loop; generators and the map and filter objects
        a plan can make are charged item by item already."""
        kind = type(items)
        if kind in _SIZED:
            n = len(items)
            if n > _SMALL_INPUT:
                self.meter.charge((sort_work(n) if sort else n) >> _C_ITEMS)
            return items
        if kind in _METERED_LAZY:
            return items
        return self.getiter(items)

    def metered(self, function: Any) -> Any:
        """A C callable that C will call item by item, charged a step per call plus the size
        of its arguments (and of the object a method is bound to): ``map(big.count, xs)``,
        ``map(list, [big] * n)``. Plan functions and guards charge themselves."""
        kind = type(function)
        if function is None or (kind is _FUNCTION and function.__globals__ is self.plan_globals):
            return function  # the sandbox's own Python functions (print, guards) are metered
        if (kind is types.BuiltinFunctionType or kind is type) and function in _CONSTANT_WORK:
            return function  # builtins and types hash by address: nothing of the plan's walked
        meter = self.meter
        bound: Any = getattr(function, "__self__", None)
        base = 1 + (len(bound) >> _C_ITEMS if type(bound) in _SIZED else 0)

        def metered_call(*args: Any) -> Any:
            n = base
            for arg in args:
                if type(arg) in _SIZED:
                    n += len(arg) >> _C_ITEMS
            meter.steps += n
            if meter.steps >= meter.next_check:
                meter.checkpoint()
            return function(*args)

        return metered_call

    def _key(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        key = kwargs.get("key")
        if key is not None:
            kwargs["key"] = self.metered(key)
        return kwargs

    def sorted(self, items: Any, /, *, key: Any = None, reverse: bool = False) -> list[Any]:
        if key is not None:
            key = self.metered(key)
        if type(items) in _SIZED and len(items) <= _SMALL_INPUT:
            return sorted(items, key=key, reverse=reverse)
        return sorted(self.priced_input(items, sort=True), key=key, reverse=reverse)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not (type(args[0]) in _SIZED and len(args[0]) <= _SMALL_INPUT):
            args = (self.priced_input(args[0]),)
        return min(*args, **self._key(kwargs)) if kwargs else min(*args)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not (type(args[0]) in _SIZED and len(args[0]) <= _SMALL_INPUT):
            args = (self.priced_input(args[0]),)
        return max(*args, **self._key(kwargs)) if kwargs else max(*args)

    def any(self, items: Any, /) -> bool:
        if type(items) in _SIZED and len(items) <= _SMALL_INPUT:
            return any(items)
        return any(self.priced_input(items))

    def all(self, items: Any, /) -> bool:
        if type(items) in _SIZED and len(items) <= _SMALL_INPUT:
            return all(items)
        return all(self.priced_input(items))

    def filter(self, function: Any, items: Any, /) -> Any:
        return filter(self.metered(function), items)

    def sized_sort(self, xs: list[Any]) -> Callable[..., None]:
        """``xs.sort``: the sort charged like ``sorted``, a C ``key=`` metered per call."""

        def sort(*, key: Any = None, reverse: bool = False) -> None:
            self.priced_input(xs, sort=True)  # charges the sort
            xs.sort(key=self.metered(key), reverse=reverse)

        return sort


_SIZED = frozenset(
    {list, tuple, str, range, dict, set, frozenset, ReadOnlyDict, ReadOnlyList, _KEYS, _VALUES,
     _ITEMS}
)  # fmt: skip
_METERED_LAZY = frozenset({types.GeneratorType, map, filter})
_FUNCTION = types.FunctionType
_CONSTANT_WORK = frozenset({len, abs, bool, ord, chr, callable})  # O(1) work whatever they get
_SMALL_INPUT = 64  # C loops up to this long are free, like short plan loops
_C_ITEMS = 4  # a C loop is charged one step per 2**_C_ITEMS items it touches
