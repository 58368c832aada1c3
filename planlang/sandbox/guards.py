"""The run-time guards the checked code calls, bound to one run's meter.

The checker rewrites a plan so that every attribute read, item write, loop, augmented
assignment, function entry and every operation that could allocate without a loop goes through
one of these functions. They are written for speed: plain data hits a fast path, and the table of
allowed attributes is looked up once per access.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from itertools import chain, islice
from typing import Any

from planlang import language as L
from planlang.errors import a_kind
from planlang.sandbox.limits import Meter
from planlang.sandbox.plan_builtins import PlanDict, PlanType
from planlang.sandbox.sizes import _CHUNK, _FIXED_SIZE, _NUMBERS, _SMALL_LOOP, Sizes, wrappers
from planlang.sandbox.walks import Walks
from planlang.sandbox.wall import HostProxy, ReadOnlyDict, ReadOnlyList

__all__ = ["Guards"]

_WRITABLE = frozenset({list, dict, set})


# The whitelist of planlang.language, keyed by the real types the guards meet.
_KIND_TYPES: dict[str, type] = {
    "str": str, "list": list, "tuple": tuple, "dict": dict, "set": set, "frozenset": frozenset,
    "int": int, "bool": bool, "float": float,
    "readonly_dict": ReadOnlyDict, "readonly_list": ReadOnlyList,
}  # fmt: skip
ATTRIBUTES: dict[type, dict[str, str | None]] = {
    _KIND_TYPES[kind]: names for kind, names in L.ATTRIBUTES.items()
}
_TYPE_OBJECTS: dict[type, frozenset[str]] = {dict: L.TYPE_ATTRIBUTES["dict"]}


class Guards:
    """The guard functions of one run: what the rewritten code calls for attributes, writes,
    loops and unpacking. The size guards (``sizes``) and the walks (``walks``) are parts it
    holds, each of them given the one metered loop, ``getiter``, that they share."""

    def __init__(self, meter: Meter, plan_globals: dict[str, Any]):
        self.meter = meter
        self.plan_globals = plan_globals
        self.walks = Walks(meter, plan_globals, self.getiter)
        self.sizes = Sizes(meter, self.walks, self.getiter)

    @functools.cached_property
    def _wrappers(self) -> dict[str, Callable[[Any], Callable[..., Any]]]:
        """The table of guarded methods, made when a plan first calls one: a third of a small
        plan's set-up, and most plans call none (then kept: an attribute, as fast as before)."""
        return wrappers(self.sizes, self.walks)

    # -- attributes ------------------------------------------------------------------------

    def getattr(self, obj: Any, name: str) -> Any:
        """``obj.name`` for a plan: a positive whitelist per type, nothing else."""
        try:
            wrapper = ATTRIBUTES[type(obj)][name]
        except KeyError:
            return self._getattr_slow(obj, name)
        if wrapper is None:
            return getattr(obj, name)
        return self._wrappers[wrapper](obj)

    def _getattr_slow(self, obj: Any, name: str) -> Any:
        if isinstance(obj, HostProxy):
            if name in obj._methods:
                return self.wrap_host_word(f"{obj._label}.{name}", getattr(obj._target, name))
            if name in obj._attributes:
                from planlang.sandbox.wall import thaw

                return thaw(getattr(obj._target, name), None, f"{obj._label}.{name}")
            raise AttributeError(f"The host object {obj._label!r} does not offer {name!r}.")
        if type(obj) is PlanDict and name in _TYPE_OBJECTS[dict]:
            return getattr(obj, name)  # dict.fromkeys, charged like dict() (plan_builtins)
        if type(obj) is type or isinstance(obj, PlanType):
            of: type = obj.type if isinstance(obj, PlanType) else obj
            if of is obj and name in _TYPE_OBJECTS.get(of, ()):
                return getattr(obj, name)
            raise AttributeError(
                f"{name!r} is not an attribute a plan may use on the type {of.__name__!r}; "
                "call methods on values instead."
            )
        if type(obj) in (ReadOnlyDict, ReadOnlyList) and name in ATTRIBUTES[type(obj).__mro__[1]]:
            kind = "dict" if type(obj) is ReadOnlyDict else "list"
            raise AttributeError(
                f"{name!r} would change a {kind} the host handed in, which is read-only; "
                f"copy it first with {kind}(...)."
            )
        if isinstance(obj, BaseException) and name in L.EXCEPTION_ATTRIBUTES:
            return getattr(obj, name)
        raise AttributeError(
            f"{name!r} is not an attribute a plan may use on {a_kind(type(obj).__name__)} value."
        )

    wrap_host_word: Callable[..., Any]  # (name, fn, fresh=False, text=False) -> a host word

    # -- writes ----------------------------------------------------------------------------

    def write(self, obj: Any) -> Any:
        """Target of ``x[k] = v`` and ``del x[k]``: only the plan's own lists, dicts and sets."""
        if type(obj) in _WRITABLE:
            return obj
        if isinstance(obj, ReadOnlyDict | ReadOnlyList):
            raise TypeError(_READ_ONLY)
        raise TypeError(f"A plan cannot change items of {a_kind(type(obj).__name__)} value.")

    def setslice(self, container: Any, index: slice, value: Any) -> None:
        """``xs[a:b] = ys``: the list may grow by ``len(ys)``; ``xs[len(xs):] = xs`` doubles."""
        target = self.write(container)
        if type(target) is list and type(index) is slice:
            items = value if isinstance(value, list | tuple) else list(self.getiter(value))
            start, stop, step = index.indices(len(target))
            removed = len(range(start, stop, step))
            self.meter.allow_size(len(target) - removed + len(items), "Assigning to a slice")
            target[index] = items
            return
        target[index] = value

    def inplacevar(self, op: str, x: Any, y: Any) -> Any:
        """``x op= y``: numbers fast, sequences size-checked, host values refused."""
        if type(x) in _NUMBERS and type(y) in _NUMBERS and op in ("+=", "-="):
            return x + y if op == "+=" else x - y
        if isinstance(x, ReadOnlyDict | ReadOnlyList):
            raise TypeError(_READ_ONLY)
        if op == "+=":
            if type(x) is list and not hasattr(y, "__len__"):
                # list.extend(iterator) runs in C, and an iterator over the list itself (zip,
                # iter, filter) feeds on what it adds: take the items through the metered loop
                y = list(self.getiter(y))
            return self.sizes.concat(x, y, operator.iadd)
        if op == "*=":
            return self.sizes.mul(x, y, operator.imul)
        if op == "**=":
            return self.sizes.pow(x, y)
        if op == "<<=":
            return self.sizes.lshift(x, y)
        if op == "%=":
            return self.sizes.mod(x, y)
        return _INPLACE[op](x, y)

    # -- loops, calls and unpacking ----------------------------------------------------------

    def getiter(self, it: Any) -> Iterator[Any] | Any:
        """Every ``for`` and comprehension: charge the steps the loop will take."""
        kind = type(it)
        meter = self.meter
        if kind in _FIXED_SIZE or kind is list:
            n = len(it)
            if n <= _SMALL_LOOP:
                meter.steps += n
                if meter.steps >= meter.next_check:
                    meter.checkpoint()
                if kind is list:  # a list may grow while it is walked: count what comes after
                    source = iter(it)
                    return chain(islice(source, n), self._counted(source))
                return it
            if kind is range or kind is tuple or kind is str:  # immutable: slice it in chunks
                chunks = (it[i : i + _CHUNK] for i in range(0, n, _CHUNK))
                return chain.from_iterable(map(self._charge_chunk, chunks))
            return self._chunked(iter(it))
        return self._counted(iter(it))

    def _charge_chunk(self, chunk: Any) -> Any:
        meter = self.meter
        meter.steps += len(chunk)
        meter.checkpoint()
        return chunk

    def _counted(self, source: Iterator[Any]) -> Iterator[Any]:
        meter = self.meter
        for item in source:
            meter.steps += 1
            if meter.steps >= meter.next_check:
                meter.checkpoint()
            yield item

    def _chunked(self, source: Iterator[Any]) -> Iterator[Any]:
        """A long loop's items, ``_CHUNK`` steps charged (and the clock read) before each
        ``_CHUNK`` of them. C walks the items (``chain`` of ``islice``); Python runs once a
        chunk, at its turn, so the order is that of the loop written out: charge, 255 items,
        the next item taken (the end, or it), charge, 255 more."""
        return chain.from_iterable(iter(_Chunks(self.meter, source), _STOP))  # type: ignore[arg-type]

    def unpack_sequence(self, it: Any, spec: Any = None, _getiter: Any = None) -> Any:
        """``a, b = x``: plain data needs no proxy; Python checks the count itself."""
        return it

    def iter_unpack_sequence(self, it: Any, spec: Any = None, _getiter: Any = None) -> Any:
        """``for a, b in xs``: the loop is charged like any other."""
        return self.getiter(it)

    def apply(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Calls with ``*args`` or ``**kwargs``."""
        return func(*args, **kwargs)

    def stepper(self) -> Callable[[], None]:
        """The plan's ``_step_``: one iteration of a ``while`` loop, or one call of a lambda.
        A function of its own, the meter in its closure (a bound method call and an
        attribute read less, on the hottest guard)."""
        meter = self.meter

        def step() -> None:
            steps = meter.steps + 1
            meter.steps = steps
            if steps >= meter.next_check:
                meter.checkpoint()

        return step


class _Chunks:
    """Called once a chunk by ``Guards._chunked``: the next chunk of ``source``, or ``_STOP``."""

    __slots__ = ("meter", "source", "started")

    def __init__(self, meter: Meter, source: Iterator[Any]):
        self.meter, self.source, self.started = meter, source, False

    def __call__(self) -> Iterator[Any] | object:
        if not self.started:
            self.started = True
            self.charge()
            return islice(self.source, _CHUNK - 1)
        item = next(self.source, _END)
        if item is _END:
            return _STOP
        # the item, then the next chunk's charge (it returns _END: an empty iterator), then
        # the chunk's other items
        return chain((item,), iter(self.charge, _END), islice(self.source, _CHUNK - 1))

    def charge(self) -> object:
        meter = self.meter
        meter.steps += _CHUNK
        meter.checkpoint()
        return _END


_END = object()
_STOP = object()
_READ_ONLY = "This value was handed in by the host and is read-only; copy it first."


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "-=": operator.isub,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "@=": operator.imatmul,
}
