"""What crosses the wall between the host and a plan.

Going in, every value the host hands over is copied into read-only plain data, so a plan can
read its inputs but never change the host's objects (and the host's own copies are untouched
whatever the plan does). Objects that are not plain data show only what the embedder declared
with ``HostObject``; callables become host words. Coming back, results of host words are copied
into fresh plain data the plan owns, so no host internals ride along.
"""

from __future__ import annotations

import dataclasses
import itertools
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from planlang.errors import a_kind

__all__ = ["HostObject", "HostProxy", "HostWord", "ReadOnlyDict", "ReadOnlyList", "READONLY_TYPES"]

SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})


def _read_only(*_args: Any, **_kwargs: Any) -> Any:
    raise TypeError("This value was handed in by the host and is read-only; copy it first.")


class ReadOnlyDict(dict):
    """A dict the plan may read but not change. Mutators raise, for host code too."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    update = pop = popitem = clear = setdefault = _read_only

    def __repr__(self) -> str:
        return dict.__repr__(self)

    def copy(self) -> dict[Any, Any]:  # a plain, writable shallow copy
        return dict(self)


class ReadOnlyList(list):
    """A list the plan may read but not change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __repr__(self) -> str:
        return list.__repr__(self)

    def copy(self) -> list[Any]:
        return list(self)


READONLY_TYPES: frozenset[type] = frozenset({ReadOnlyDict, ReadOnlyList, tuple, frozenset})


@dataclasses.dataclass(frozen=True)
class HostObject:
    """An object the host hands to a plan, with the only names the plan may use on it.

    ``methods`` become host words (their results are copied back as plain data);
    ``attributes`` are read-only and copied in as plain data when read.
    """

    obj: Any
    methods: Iterable[str] = ()
    attributes: Iterable[str] = ()
    name: str | None = None

    def __post_init__(self) -> None:
        for name in (*self.methods, *self.attributes):
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
                raise ValueError(
                    f"HostObject cannot declare {name!r}: names must be identifiers "
                    "that do not start with '_'."
                )


@dataclasses.dataclass(frozen=True)
class HostWord:
    """A host callable with a promise about its results, for words a plan calls in hot loops.

    By default every result of a host word is copied into fresh plain data before the plan sees
    it (about a microsecond for a small JSON object), so a plan can never hold, or change, an
    object the host still uses. ``fresh=True`` is the embedder's promise that every call returns
    *new* plain data (dicts and lists of str, int, float, bool, None) that the host keeps no
    reference to, as ``json.loads`` does: such a dict or list is handed over as it is. Any other
    result (a tuple, a dict subclass, a pydantic model, an iterator) is still copied and
    checked. What a broken promise costs is in docs/SECURITY.md.

    ``text=True`` says the word takes text: each argument is made into text the way the plan's
    own ``str`` makes it (priced, within ``Limits.size``) before the host sees it, so host code
    never stringifies a plan value unpriced (``log`` and ``phase`` are such words).
    """

    fn: Callable[..., Any]
    fresh: bool = False
    text: bool = False

    def __post_init__(self) -> None:
        if not callable(self.fn) or isinstance(self.fn, type):
            raise TypeError(f"HostWord needs a function, not {self.fn!r}.")


class HostProxy:
    """The plan's view of a host object: declared names only, nothing to write."""

    __slots__ = ("_target", "_methods", "_attributes", "_label")
    _target: Any
    _methods: frozenset[str]
    _attributes: frozenset[str]
    _label: str

    def __init__(
        self, target: Any, methods: frozenset[str], attributes: frozenset[str], label: str
    ):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_methods", methods)
        object.__setattr__(self, "_attributes", attributes)
        object.__setattr__(self, "_label", label)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f"The host object {self._label!r} is read-only.")

    def __repr__(self) -> str:
        return f"<host object {self._label}>"


# Levels a copy across the wall recurses (two Python frames a level) before it walks in a loop:
# a plan nests a list 100,000 deep in 100,000 steps (``x = [x]``), and each side of the wall
# copies what it gets.
DEEP = 64


def freeze(value: Any, wrap_callable: Callable[..., Any], label: str, _depth: int = 0) -> Any:
    """Copy a host value into read-only plain data for the plan (recursively).

    Callables become host words through ``wrap_callable(label, fn, fresh=False)``; other objects
    become proxies that expose nothing unless declared with ``HostObject``.
    """
    kind = type(value)
    if kind in SCALARS:
        return value
    if isinstance(value, HostObject):
        return HostProxy(
            value.obj,
            frozenset(value.methods),
            frozenset(value.attributes),
            value.name or label,
        )
    if isinstance(value, HostProxy):
        return value
    if isinstance(value, HostWord):
        return wrap_callable(label, value.fn, value.fresh, value.text)
    if isinstance(value, Mapping | list | tuple | set | frozenset) and _depth >= DEEP:
        return _freeze_deep(value, wrap_callable, label)
    deeper = _depth + 1
    if isinstance(value, Mapping):
        return ReadOnlyDict(
            (freeze(k, wrap_callable, label, deeper),
             freeze(v, wrap_callable, f"{label}[{k!r}]", deeper))
            for k, v in value.items()
        )  # fmt: skip
    if isinstance(value, list | tuple):
        items = [freeze(v, wrap_callable, f"{label}[{i}]", deeper) for i, v in enumerate(value)]
        return tuple(items) if isinstance(value, tuple) else ReadOnlyList(items)
    if isinstance(value, set | frozenset):
        return frozenset(freeze(v, wrap_callable, label, deeper) for v in value)
    if callable(value) and not isinstance(value, type):
        return wrap_callable(label, value)
    return HostProxy(value, frozenset(), frozenset(), label)


def _freeze_parts(value: Any, label: str) -> tuple[str, Iterable[tuple[Any, str]]]:
    """What ``freeze`` makes of a container (a tag), and its parts with their labels (which
    stop growing past ``_LONGEST_LABEL``: a path 100,000 levels long names nothing better)."""
    if len(label) > _LONGEST_LABEL:
        tag = "m" if isinstance(value, Mapping) else "t" if isinstance(value, tuple) else (
            "l" if isinstance(value, list) else "s")  # fmt: skip
        items = itertools.chain.from_iterable(value.items()) if tag == "m" else value
        return tag, ((part, label) for part in items)
    if isinstance(value, Mapping):
        return "m", ((part, label if n % 2 == 0 else f"{label}[{k!r}]")
                     for k, v in value.items() for n, part in enumerate((k, v)))  # fmt: skip
    if isinstance(value, list | tuple):
        tag = "t" if isinstance(value, tuple) else "l"
        return tag, ((v, f"{label}[{i}]") for i, v in enumerate(value))
    return "s", ((v, label) for v in value)


_LONGEST_LABEL = 1000


def _freeze_deep(value: Any, wrap_callable: Callable[..., Any], label: str) -> Any:
    """``freeze`` of a container nested deep, in a loop: each container made once its parts
    are. A host value that holds itself raises RecursionError, as the recursion does."""
    tag, parts = _freeze_parts(value, label)
    walk: list[tuple[Any, str, Any, list[Any]]] = [(value, tag, iter(parts), [])]
    path = {id(value)}
    while True:
        container, tag, rest, out = walk[-1]
        for part, part_label in rest:
            if (type(part) not in SCALARS
                    and not isinstance(part, HostObject | HostProxy | HostWord)
                    and isinstance(part, Mapping | list | tuple | set | frozenset)):  # fmt: skip
                if id(part) in path:
                    raise RecursionError("A host value holds itself.")
                path.add(id(part))
                part_tag, part_parts = _freeze_parts(part, part_label)
                walk.append((part, part_tag, iter(part_parts), []))
                break
            out.append(freeze(part, wrap_callable, part_label))  # not a container: no nesting
        else:
            walk.pop()
            path.discard(id(container))
            if tag == "m":
                made: Any = ReadOnlyDict(zip(out[0::2], out[1::2], strict=True))
            elif tag == "l":
                made = ReadOnlyList(out)
            else:
                made = tuple(out) if tag == "t" else frozenset(out)
            if not walk:
                return made
            walk[-1][3].append(made)


def thaw(value: Any, plan_globals: Mapping[str, Any] | None, where: str) -> Any:
    """Copy a value into fresh, writable plain data the plan (or the host) owns.

    Used for host-word results going in and for the plan's result coming out. Plan functions
    (defined by this plan) and host proxies pass through; anything else that is not plain
    data is refused with a TypeError naming ``where`` it came from. Shared containers stay
    shared in the copy (like ``copy.deepcopy``): ``x = [x, x]`` sixty times is sixty lists, and
    copying it as a tree would take 2**60 steps in the host's own code.
    """
    kind = type(value)
    if kind in SCALARS:
        return value
    if kind is dict:  # the common answer: a flat JSON object, copied without the memo
        flat = _flat_copy(value)
        if flat is not None:
            return flat
    return _Thaw(plan_globals, where).copy(value)


def _flat_copy(value: dict[Any, Any]) -> dict[Any, Any] | None:
    """A copy of a dict of scalars and lists of scalars, or None for anything deeper."""
    fresh = {}
    for key, item in value.items():
        kind = type(item)
        if type(key) not in SCALARS:
            return None
        if kind is list:
            for element in item:
                if type(element) not in SCALARS:
                    return None
            item = item.copy()
        elif kind not in SCALARS:
            return None
        fresh[key] = item
    return fresh


class _Thaw:
    __slots__ = ("plan_globals", "where", "memo", "depth")

    def __init__(self, plan_globals: Mapping[str, Any] | None, where: str):
        self.plan_globals = plan_globals
        self.where = where
        self.memo: dict[int, tuple[Any, Any]] = {}  # id -> (original, copy); keeps ids alive
        self.depth = 0  # containers being copied around this one (a _Thaw copies once)

    def copy(self, value: Any) -> Any:
        kind = type(value)
        if kind in SCALARS:
            return value
        seen = self.memo.get(id(value))
        if seen is not None:
            return seen[1]
        if self.depth >= DEEP:
            return self._deep(value)
        self.depth += 1
        copy = self._copy(value, kind)
        self.depth -= 1
        self.memo[id(value)] = (value, copy)
        return copy

    def _copy(self, value: Any, kind: type) -> Any:
        copy = self.copy
        if kind is dict or isinstance(value, Mapping):
            fresh: dict[Any, Any] = {}
            self.memo[id(value)] = (value, fresh)  # before the items: a dict may hold itself
            fresh.update((copy(k), copy(v)) for k, v in value.items())
            return fresh
        if kind is list or kind is ReadOnlyList:
            items: list[Any] = []
            self.memo[id(value)] = (value, items)
            items.extend(map(copy, value))
            return items
        if kind is tuple:
            return tuple(map(copy, value))
        if kind is set or kind is frozenset:
            return kind(map(copy, value))
        leaf, plain = self._leaf(value, kind)
        if leaf:
            return plain
        if plain is not None:
            return copy(plain)
        return list(map(copy, value))  # subclasses of list and tuple (named tuples)

    def _leaf(self, value: Any, kind: type) -> tuple[bool, Any]:
        """What is not a plain container: (True, itself) for a host proxy or a plan function;
        (False, its plain data) for a pydantic model or a dataclass; (False, None) for a
        subclass of list or tuple (copied as a list); else a TypeError."""
        if isinstance(value, HostProxy):
            return True, value
        plan_globals = self.plan_globals
        if (
            plan_globals is not None
            and isinstance(value, types.FunctionType)
            and value.__globals__ is plan_globals
        ):
            return True, value
        dump = getattr(value, "model_dump", None)  # pydantic models are plain data in disguise
        if callable(dump) and not isinstance(value, type):
            return False, dump(mode="json")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return False, dataclasses.asdict(value)
        if isinstance(value, list | tuple):
            return False, None
        name = getattr(kind, "plan_kind", kind.__name__)  # a host iterator: "an iterator"
        raise TypeError(f"{self.where} gave {a_kind(name)}, which is not plain data.")

    def _deep(self, value: Any) -> Any:
        """``copy`` of a value nested deep, in a loop, as the recursion copies it: a dict or
        list is made (and remembered) before its items, a tuple or set after them."""
        memo = self.memo
        walk: list[list[Any]] = []
        result: list[Any] = []

        def start(item: Any, aliases: tuple[Any, ...]) -> bool:
            """Open a frame for ``item`` (True), or put its copy in place (False)."""
            kind = type(item)
            if kind in SCALARS:
                return put(item, aliases)
            seen = memo.get(id(item))
            if seen is not None:
                return put(seen[1], aliases)
            if kind is dict or isinstance(item, Mapping):
                fresh: dict[Any, Any] = {}
                for original in (item, *aliases):
                    memo[id(original)] = (original, fresh)
                walk.append(["d", item, iter(item.items()), fresh, aliases])
                return True
            if kind is list or kind is ReadOnlyList:
                items: list[Any] = []
                for original in (item, *aliases):
                    memo[id(original)] = (original, items)
                walk.append(["l", item, iter(item), items, aliases])
                return True
            if kind is tuple or kind is set or kind is frozenset:
                walk.append([kind, item, iter(item), [], aliases])
                return True
            leaf, plain = self._leaf(item, kind)
            if leaf:
                return put(plain, aliases)
            if plain is not None:
                return start(plain, (*aliases, item))
            walk.append([list, item, iter(item), [], aliases])
            return True

        def put(made: Any, aliases: tuple[Any, ...]) -> bool:
            for original in aliases:
                memo[id(original)] = (original, made)
            if walk:
                top = walk[-1]
                if top[0] == "d":
                    top[5].append(made)
                else:
                    top[3].append(made)
            else:
                result.append(made)
            return False

        start(value, ())
        while walk:
            top = walk[-1]
            tag = top[0]
            if tag == "d":
                if len(top) == 5:
                    top.append([])  # the key and value being copied
                pending = top[5]
                if len(pending) == 2:
                    top[3][pending[0]] = pending[1]
                    pending.clear()
                if not pending:
                    pair = next(top[2], None)
                    if pair is None:
                        walk.pop()
                        memo[id(top[1])] = (top[1], top[3])
                        put(top[3], top[4])
                        continue
                    top.append(pair[1])  # the value, once the key is copied
                    start(pair[0], ())
                    continue
                start(top.pop(), ())
                continue
            for item in top[2]:
                if start(item, ()):
                    break
            else:
                walk.pop()
                if tag == "l":
                    made: Any = top[3]
                else:
                    made = tuple(top[3]) if tag is tuple else tag(top[3])
                memo[id(top[1])] = (top[1], made)
                put(made, top[4])
        return result[0]
