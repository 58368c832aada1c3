"""The run-time guards the checked code calls, bound to one run's meter.

The checker rewrites a plan so that every attribute read, item write, loop, augmented
assignment, function entry and every operation that could allocate without a loop goes through
one of these functions. They are written for speed: plain data hits a fast path, and the table of
allowed attributes is looked up once per access.
"""

from __future__ import annotations

import operator
import re
import types
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import Any

from planlang import language as L
from planlang.limits import Meter
from planlang.values import HostProxy, ReadOnlyDict, ReadOnlyList

__all__ = ["Guards"]

_SMALL_LOOP = 64  # loops up to this long are charged in one go and run at full speed
_CHUNK = 256  # longer ones are charged (and the clock read) every this many items

# Types whose length cannot change while a loop walks them (or Python raises if it does).
_FIXED_SIZE = frozenset(
    {
        str, tuple, range, frozenset, dict, set, ReadOnlyDict, ReadOnlyList,
        type({}.keys()), type({}.values()), type({}.items()),
    }
)  # fmt: skip
_NUMBERS = frozenset({int, float, bool})
_WRITABLE = frozenset({list, dict, set})
_SPEC_NUMBERS = re.compile(r"(\d+)")


def _attribute_table() -> dict[type, dict[str, str | None]]:
    """type -> attribute -> None (plain access) or the name of a size-guarded wrapper."""
    plain = lambda names: dict.fromkeys(names)  # noqa: E731
    table: dict[type, dict[str, str | None]] = {
        str: plain(L.STR_METHODS),
        list: plain(L.LIST_METHODS),
        tuple: plain(L.TUPLE_METHODS),
        dict: plain(L.DICT_METHODS),
        set: plain(L.SET_METHODS),
        frozenset: plain(L.FROZENSET_METHODS),
        int: plain(L.INT_ATTRIBUTES - {"is_integer"}),
        bool: plain(L.INT_ATTRIBUTES - {"is_integer"}),
        float: plain(L.FLOAT_ATTRIBUTES),
        ReadOnlyDict: plain(L.READONLY_DICT_METHODS),
        ReadOnlyList: plain(L.READONLY_LIST_METHODS),
    }
    for name in ("join", "replace", "ljust", "rjust", "center", "zfill", "expandtabs"):
        table[str][name] = name
    table[list]["extend"] = "extend"
    return table


ATTRIBUTES = _attribute_table()
_TYPE_OBJECTS: dict[type, frozenset[str]] = {dict: L.TYPE_ATTRIBUTES["dict"]}


class Guards:
    """The guard functions of one run. Each attribute is what the rewritten code calls."""

    def __init__(self, meter: Meter, plan_globals: dict[str, Any]):
        self.meter = meter
        self.plan_globals = plan_globals

    # -- attributes ------------------------------------------------------------------------

    def getattr(self, obj: Any, name: str) -> Any:
        """``obj.name`` for a plan: a positive whitelist per type, nothing else."""
        try:
            wrapper = ATTRIBUTES[type(obj)][name]
        except KeyError:
            return self._getattr_slow(obj, name)
        if wrapper is None:
            return getattr(obj, name)
        return getattr(self, "_sized_" + wrapper)(obj)

    def _getattr_slow(self, obj: Any, name: str) -> Any:
        if isinstance(obj, HostProxy):
            if name in obj._methods:
                return self.host_word(f"{obj._label}.{name}", getattr(obj._target, name))
            if name in obj._attributes:
                from planlang.values import thaw

                return thaw(getattr(obj._target, name), None, f"{obj._label}.{name}")
            raise AttributeError(f"The host object {obj._label!r} does not offer {name!r}.")
        if type(obj) is type:
            if name in _TYPE_OBJECTS.get(obj, ()):
                return getattr(obj, name)
            raise AttributeError(
                f"{name!r} is not an attribute a plan may use on the type {obj.__name__!r}; "
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
            f"{name!r} is not an attribute a plan may use on a {type(obj).__name__} value."
        )

    host_word: Callable[[str, Callable[..., Any]], Any]  # set by the sandbox

    # -- writes ----------------------------------------------------------------------------

    def write(self, obj: Any) -> Any:
        """Target of ``x[k] = v`` and ``del x[k]``: only the plan's own lists, dicts and sets."""
        if type(obj) in _WRITABLE:
            return obj
        if isinstance(obj, ReadOnlyDict | ReadOnlyList):
            raise TypeError(_READ_ONLY)
        raise TypeError(f"A plan cannot change items of a {type(obj).__name__} value.")

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
            return self._concat(x, y, operator.iadd)
        if op == "*=":
            return self.mul(x, y, operator.imul)
        if op == "**=":
            return self.pow(x, y)
        if op == "<<=":
            return self.lshift(x, y)
        if op == "%=":
            return self.mod(x, y)
        return _INPLACE[op](x, y)

    # -- operators that can allocate without a loop ----------------------------------------

    def add(self, a: Any, b: Any) -> Any:
        if type(a) in _NUMBERS:
            return a + b
        return self._concat(a, b, operator.add)

    def _concat(self, a: Any, b: Any, op: Callable[[Any, Any], Any]) -> Any:
        if type(a) in _NUMBERS:
            return op(a, b)
        try:
            n = len(a) + len(b)
        except TypeError:
            return op(a, b)  # let Python say what is wrong with the operands
        self.meter.allow_size(n, "Joining two sequences")
        return op(a, b)

    def mul(self, a: Any, b: Any, op: Callable[[Any, Any], Any] = operator.mul) -> Any:
        ta, tb = type(a), type(b)
        if ta is float or tb is float:
            return op(a, b)
        if ta in _NUMBERS and tb in _NUMBERS:
            self.meter.allow_bits(a.bit_length() + b.bit_length(), "Multiplying")
            return op(a, b)
        if ta in _NUMBERS:
            a, b = b, a
            if op is operator.imul:
                op = operator.mul
        if type(b) in (int, bool):
            try:
                n = len(a) * b
            except TypeError:
                return op(a, b)
            self.meter.allow_size(n, "Repeating a sequence")
        return op(a, b)

    def pow(self, a: Any, b: Any, mod: Any = None) -> Any:
        if mod is not None:
            if type(b) in (int, bool) and type(mod) in (int, bool) and b > 0:
                # One squaring and reduction per bit of the exponent, each quadratic in the
                # modulus: bound that work, not just the size of the result.
                work = b.bit_length() * mod.bit_length() ** 2
                if work > self.meter.limits.int_bits << 17:
                    self.meter.trip("size", f"pow() with a {b.bit_length():,}-bit exponent and a "
                                    f"{mod.bit_length():,}-bit modulus is more work than "
                                    "Limits.int_bits allows.")  # fmt: skip
            return pow(a, b, mod)
        if type(a) in (int, bool) and type(b) in (int, bool) and b > 0 and abs(a) > 1:
            self.meter.allow_bits(a.bit_length() * b, "Raising to a power")
        return a**b

    def lshift(self, a: Any, b: Any) -> Any:
        if type(a) in (int, bool) and type(b) in (int, bool) and b > 0 and a:
            self.meter.allow_bits(a.bit_length() + b, "Shifting left")
        return a << b

    def mod(self, a: Any, b: Any) -> Any:
        if type(a) is not str:
            return a % b
        self._check_printf(a, b)
        return a % b

    def _check_printf(self, template: str, args: Any) -> None:
        """Bound the result of ``template % args`` before Python builds it: the template, the
        widths and precisions (all of them together), and the longest string argument per
        field. The template is parsed as CPython parses it, nested '(' in keys included."""
        widths, stars, fields = _printf_fields(template)
        values = args if type(args) is tuple else (args,)
        if stars:
            widths += sum(abs(v) for v in values if type(v) is int and abs(v) > 64)
        items: Iterable[Any] = args.values() if isinstance(args, dict) else values
        longest = max((len(v) for v in items if type(v) is str), default=0)
        self.meter.allow_size(len(template) + widths + fields * longest, "A %-format")

    def fstr(self, text: str) -> str:
        """A whole f-string, once built: ``s = f"{s}{s}"`` in a loop would double each turn."""
        if len(text) > self.meter.limits.size:
            self.meter.allow_size(len(text), "An f-string")
        return text

    def fmt(self, value: Any, conversion: int, spec: str) -> str:
        """One ``{value!c:spec}`` of an f-string, with widths and precisions size-checked."""
        if conversion == 114:
            value = repr(value)
        elif conversion == 115:
            value = str(value)
        elif conversion == 97:
            value = ascii(value)
        if spec:
            for number in _SPEC_NUMBERS.findall(spec):
                if len(number) > 9 or int(number) > self.meter.limits.size:
                    self.meter.allow_size(int(number), "An f-string width or precision")
        return format(value, spec)

    def round(self, number: Any, ndigits: Any = None) -> Any:
        """``round(n, -k)`` on an int computes ``10 ** k``: bound it like ``**``."""
        if type(ndigits) is int and ndigits < 0 and type(number) in (int, bool):
            self.meter.allow_bits(-ndigits * 10 // 3, "Rounding to a power of ten")
        return round(number, ndigits)

    def sum(self, items: Iterable[Any], /, start: Any = 0) -> Any:
        """``sum(lists, [])`` concatenates in C: check the total size first."""
        if type(start) in _NUMBERS:
            return sum(items, start)
        parts = list(self.getiter(items))
        try:
            n = len(start) + sum(map(len, parts))
        except TypeError:
            return sum(parts, start)  # let Python say what is wrong
        self.meter.allow_size(n, "sum()")
        return sum(parts, start)

    def zip(self, *iterables: Any, strict: bool = False) -> Any:
        self._fan_out(iterables, "zip()")
        return zip(*iterables, strict=strict)

    def map(self, function: Any, *iterables: Any) -> Any:
        self._fan_out(iterables, "map()")
        return map(function, *iterables)

    def _fan_out(self, iterables: tuple[Any, ...], what: str) -> None:
        """zip(*[r] * k) makes len(r) tuples of k items in C: check len x k."""
        if len(iterables) > 2:
            lengths = [len(it) for it in iterables if type(it) in _FIXED_SIZE or type(it) is list]
            if lengths:
                self.meter.allow_size(min(lengths) * len(iterables), what)

    def unpack(self, kind: str, *parts: Any) -> Any:
        """A display or call with ``*`` (``[*a, *b]``, ``f(*a, *b)``): size-checked."""
        sized = [p if type(p) in _FIXED_SIZE or type(p) is list else list(self.getiter(p))
                 for p in parts]  # fmt: skip
        n = sum(map(len, sized))
        if n > _SMALL_LOOP:
            self.meter.allow_size(n, "Unpacking with '*'")
        if kind == "tuple":
            return tuple(chain.from_iterable(sized))
        if kind == "list":
            return list(chain.from_iterable(sized))
        return set(chain.from_iterable(sized))

    # -- size-guarded methods ----------------------------------------------------------------

    def _sized_join(self, sep: str) -> Callable[[Iterable[Any]], str]:
        def join(given: Iterable[Any]) -> str:
            items = given if isinstance(given, list | tuple) else list(self.getiter(given))
            try:
                n = sum(map(len, items)) + len(sep) * max(len(items) - 1, 0)
            except TypeError:
                return sep.join(items)
            self.meter.allow_size(n, "str.join")
            return sep.join(items)

        return join

    def _sized_replace(self, s: str) -> Callable[..., str]:
        def replace(old: str, new: str, count: int = -1) -> str:
            if type(old) is str and type(new) is str and len(new) > len(old):
                hits = s.count(old) if old else len(s) + 1
                if type(count) is int and count >= 0:
                    hits = min(hits, count)
                self.meter.allow_size(len(s) + hits * (len(new) - len(old)), "str.replace")
            return s.replace(old, new, count)

        return replace

    def _sized_width(self, s: str, method: str) -> Callable[..., str]:
        bound = getattr(s, method)

        def padded(width: int, *rest: Any) -> str:
            if type(width) is int:
                self.meter.allow_size(width, f"str.{method}")
            return bound(width, *rest)

        return padded

    def _sized_ljust(self, s: str) -> Callable[..., str]:
        return self._sized_width(s, "ljust")

    def _sized_rjust(self, s: str) -> Callable[..., str]:
        return self._sized_width(s, "rjust")

    def _sized_center(self, s: str) -> Callable[..., str]:
        return self._sized_width(s, "center")

    def _sized_zfill(self, s: str) -> Callable[..., str]:
        return self._sized_width(s, "zfill")

    def _sized_expandtabs(self, s: str) -> Callable[..., str]:
        def expandtabs(tabsize: int = 8) -> str:
            if type(tabsize) is int:
                self.meter.allow_size(len(s) + s.count("\t") * max(tabsize, 0), "expandtabs")
            return s.expandtabs(tabsize)

        return expandtabs

    def _sized_extend(self, xs: list[Any]) -> Callable[[Iterable[Any]], None]:
        def extend(items: Iterable[Any]) -> None:
            if not hasattr(items, "__len__"):
                items = list(self.getiter(items))
            self.meter.allow_size(len(xs) + len(items), "list.extend")  # type: ignore[arg-type]
            xs.extend(items)

        return extend

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
        meter = self.meter
        while True:
            meter.steps += _CHUNK
            meter.checkpoint()
            yield from islice(source, _CHUNK - 1)
            item = next(source, _END)
            if item is _END:
                return
            yield item

    def unpack_sequence(self, it: Any, spec: Any = None, _getiter: Any = None) -> Any:
        """``a, b = x``: plain data needs no proxy; Python checks the count itself."""
        return it

    def iter_unpack_sequence(self, it: Any, spec: Any = None, _getiter: Any = None) -> Any:
        """``for a, b in xs``: the loop is charged like any other."""
        return self.getiter(it)

    def apply(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Calls with ``*args`` or ``**kwargs``."""
        return func(*args, **kwargs)

    def step(self) -> None:
        """One iteration of a ``while`` loop, or one call of a lambda."""
        meter = self.meter
        meter.steps += 1
        if meter.steps >= meter.next_check:
            meter.checkpoint()


def _printf_fields(template: str) -> tuple[int, int, int]:
    """(sum of the numeric widths and precisions, number of '*', number of fields) of a
    %-template, parsed like CPython's ``PyUnicode_Format`` does."""
    widths = stars = fields = 0
    end = len(template)
    i = template.find("%")
    while 0 <= i < end - 1:
        i += 1
        if template[i] == "(":  # a mapping key; CPython counts nested parentheses
            depth = 1
            i += 1
            while i < end and depth:
                depth += {"(": 1, ")": -1}.get(template[i], 0)
                i += 1
        while i < end and template[i] in "-+ #0":
            i += 1
        for _part in range(2):  # width, then precision after '.'
            if i < end and template[i] == "*":
                stars += 1
                i += 1
            else:
                start = i
                while i < end and "0" <= template[i] <= "9":
                    i += 1
                if i > start:
                    widths += int(template[start:i]) if i - start < 19 else 1 << 62
            if _part == 0 and i < end and template[i] == ".":
                i += 1
            else:
                break
        if i < end and template[i] in "hlL":
            i += 1
        if i < end and template[i] != "%":
            fields += 1
        i = template.find("%", i + 1)
    return widths, stars, fields


_END = object()
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

FUNCTION_TYPES = (types.FunctionType, types.LambdaType)
