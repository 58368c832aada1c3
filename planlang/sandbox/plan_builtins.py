"""The plan's ``str``, ``int``, ``list``, ``tuple``, ``set``, ``frozenset`` and ``dict``.

Each raw type is a C callable that can do unbounded work in one call: ``str([s])`` is a C repr
of its argument (text that doubles every turn of a loop), ``int('f' * n, 16)`` makes an integer
far past ``Limits.int_bits``, ``list(r)`` and ``dict.fromkeys(r)`` allocate a million items for
no step. Rewriting call sites cannot see ``f = str; f(x)`` or ``str(*args)``, so the names
themselves are guarded: the plan gets objects that price the call first and then call the type.

``isinstance(x, str)`` and ``isinstance(x, (str, int))`` keep working: for a class argument that
is not a type, ``isinstance`` calls ``__instancecheck__`` of its class (also inside a tuple),
which here delegates to the real type. ``repr(str)`` is still ``<class 'str'>``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from planlang.sandbox.walks import TEXT_SCALARS
from planlang.sandbox.wall import ReadOnlyDict, ReadOnlyList

if TYPE_CHECKING:
    from planlang.sandbox.guards import Guards

__all__ = ["PLAN_TYPES", "PlanType"]

_SMALL = 64  # sized inputs up to this long are built at once: they cannot pass any limit
_NOTHING: Any = object()
# Inputs whose length is known before a C constructor walks them.
_SIZED = frozenset(
    {list, tuple, str, range, dict, set, frozenset, ReadOnlyDict, ReadOnlyList,
     type({}.keys()), type({}.values()), type({}.items())}
)  # fmt: skip
_TEXT_BASES = (str, bytes, bytearray)


class PlanType:
    """A guarded stand-in for one builtin type: called, it checks the limits and calls the
    type; ``isinstance`` and ``repr`` see the type itself."""

    __slots__ = ("type", "guards", "meter")

    def __init__(self, kind: type, guards: Guards):
        self.type = kind
        self.guards = guards
        self.meter = guards.meter

    def __instancecheck__(self, value: Any) -> bool:
        return isinstance(value, self.type)

    def __repr__(self) -> str:
        return repr(self.type)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _built(self, result: Any) -> Any:
        """``result`` of a C constructor whose input had no length: checked once made."""
        n = len(result)
        if n > _SMALL:
            self.meter.allow_size(n, f"{self.type.__name__}()")
        return result


class PlanStr(PlanType):
    """``str(x)``: the text of a non-scalar is priced with ``walks.text_size`` first."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        if len(args) == 1 and not kwargs:
            value = args[0]
            if type(value) in TEXT_SCALARS:
                return str(value)
            text = str(self.guards.walks.text(value, "str()"))
            self.guards.walks.made_text(text, "str()")  # escapes are not priced ahead
            return text
        for value in (*args, *kwargs.values()):
            self.guards.walks.text(value, "str()")
        text = str(*args, **kwargs)
        self.guards.walks.made_text(text, "str()")
        return text


class PlanInt(PlanType):
    """``int(text, base)``: bases that are powers of two have no digit limit in Python, so the
    integer's bits (``len * log2(base)``) are checked against ``Limits.int_bits`` first."""

    __slots__ = ()

    def __call__(self, value: Any = 0, /, base: Any = _NOTHING) -> int:
        if base is _NOTHING:
            if type(value) is str and len(value) * 4 > self.meter.limits.int_bits:
                self._check_bits(value, 10)
            return int(value)
        if isinstance(value, _TEXT_BASES) and type(base) is int:
            self._check_bits(value, base)
        return int(value, base)

    def _check_bits(self, text: Any, base: int) -> None:
        per_digit = math.log2(base) if 2 <= base <= 36 else 4.0  # base 0: 0x is the widest
        digits = len(text.strip())
        self.meter.allow_bits(int(digits * per_digit) + 1, f"int() of {digits:,} digits")


class PlanCollection(PlanType):
    """``list(items)``, ``tuple(items)``, ``set(items)``, ``frozenset(items)``."""

    __slots__ = ()

    def __call__(self, items: Any = _NOTHING, /) -> Any:
        if items is _NOTHING:
            return self.type()
        if type(items) in _SIZED:
            n = len(items)
            if n > _SMALL:
                self.meter.allow_size(n, f"{self.type.__name__}()")
            return self.type(items)
        return self._built(self.type(items))


class PlanDict(PlanType):
    """``dict(...)`` and ``dict.fromkeys(...)``, charged and size-checked like ``list()``."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        if len(args) == 1 and type(args[0]) in _SIZED:
            n = len(args[0]) + len(kwargs)
            if n > _SMALL:
                self.meter.allow_size(n, "dict()")
            return dict(args[0], **kwargs)
        return self._built(dict(*args, **kwargs))

    def fromkeys(self, keys: Any, value: Any = None, /) -> dict[Any, Any]:
        if type(keys) in _SIZED:
            n = len(keys)
            if n > _SMALL:
                self.meter.allow_size(n, "dict.fromkeys()")
            return dict.fromkeys(keys, value)
        result = dict.fromkeys(keys, value)
        if len(result) > _SMALL:
            self.meter.allow_size(len(result), "dict.fromkeys()")
        return result


# The guarded type names of the plan's builtins: name -> maker, given one run's guards.
PLAN_TYPES: dict[str, Callable[[Guards], PlanType]] = {
    "str": lambda guards: PlanStr(str, guards),
    "int": lambda guards: PlanInt(int, guards),
    "list": lambda guards: PlanCollection(list, guards),
    "tuple": lambda guards: PlanCollection(tuple, guards),
    "set": lambda guards: PlanCollection(set, guards),
    "frozenset": lambda guards: PlanCollection(frozenset, guards),
    "dict": lambda guards: PlanDict(dict, guards),
}
