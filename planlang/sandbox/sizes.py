"""The size guards: operations that could allocate a lot without a loop.

``*`` on sequences and ints, ``+`` joining sequences, ``**`` and ``<<``, ``%`` formatting,
f-strings, ``*``-unpacking, ``sum``/``zip``/``map``/``round``, and the string and list methods
that grow their result (``join``, ``replace``, ``ljust``, ``extend``, ...). Each checks the size
of the result against ``Limits.size`` (or ``Limits.int_bits``) before making it. A mixin of
``planlang.sandbox.guards.Guards``, which supplies ``meter`` and ``getiter``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain
from typing import Any

from planlang import language as L
from planlang.sandbox.limits import UNCHARGED_SIZE, Meter
from planlang.sandbox.printf import printf_fields
from planlang.sandbox.stable_text import StableText
from planlang.sandbox.walks import TEXT_SCALARS, Walks, text_size
from planlang.sandbox.wall import ReadOnlyDict, ReadOnlyList

__all__ = ["Sizes", "wrappers"]

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
_GROWING = frozenset({"update", "union"})  # set methods whose result may pass Limits.size
_WALKING = L.SET_WALKING_METHODS
_SPEC_NUMBERS = re.compile(r"(\d+)")


class Sizes:
    """The size guards of one run: operators and methods that could allocate without a loop
    are checked against ``Limits.size`` (and ``Limits.int_bits``) before Python builds them."""

    def __init__(self, meter: Meter, walks: Walks, getiter: Callable[[Any], Iterator[Any] | Any]):
        self.meter = meter
        self.walks = walks
        self.getiter = getiter  # the metered loop of ``guards.Guards``
        # Sizes up to this need no call of ``meter.allow_size`` (within the limit, and too
        # small to be charged: it would do nothing), nor bits up to ``_bits`` of allow_bits.
        self._size, self._bits = meter.limits.size, meter.limits.int_bits
        self._free = min(self._size, UNCHARGED_SIZE)

    # -- operators that can allocate without a loop ----------------------------------------

    def add(self, a: Any, b: Any) -> Any:
        if type(a) in _NUMBERS:
            return a + b
        return self.concat(a, b, operator.add)

    def concat(self, a: Any, b: Any, op: Callable[[Any, Any], Any]) -> Any:
        if type(a) in _NUMBERS:
            return op(a, b)
        try:
            n = len(a) + len(b)
        except TypeError:
            return op(a, b)  # let Python say what is wrong with the operands
        if n > self._free:
            self.meter.allow_size(n, "Joining two sequences")
        return op(a, b)

    def mul(self, a: Any, b: Any, op: Callable[[Any, Any], Any] = operator.mul) -> Any:
        ta, tb = type(a), type(b)
        if ta is float or tb is float:
            return op(a, b)
        if ta in _NUMBERS and tb in _NUMBERS:
            bits = a.bit_length() + b.bit_length()
            if bits > self._bits:
                self.meter.allow_bits(bits, "Multiplying")
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
            if n > self._free:
                self.meter.allow_size(n, "Repeating a sequence")
        return op(a, b)

    def pow(self, a: Any, b: Any, mod: Any = None) -> Any:
        if mod is not None:
            if type(b) in (int, bool) and type(mod) in (int, bool) and b:
                # One squaring and reduction per bit of the exponent, each quadratic in the
                # modulus: bound that work, not just the size of the result. A negative
                # exponent is an inverse (quadratic) and then the same powering.
                work = (b.bit_length() + (b < 0)) * mod.bit_length() ** 2
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
        text = a % self._stable_args(b)
        if len(text) > self.meter.limits.size:  # escapes of %r are not priced ahead
            self.meter.allow_size(len(text), "A %-format")
        return text

    def _check_printf(self, template: str, args: Any) -> None:
        """Bound the result of ``template % args`` before Python builds it: the template, the
        widths and precisions (all of them together), and the longest string argument per
        field. The template is parsed as CPython parses it, nested '(' in keys included."""
        widths, stars, fields = printf_fields(template)
        values = args if type(args) is tuple else (args,)
        if stars:
            widths += sum(abs(v) for v in values if type(v) is int and abs(v) > 64)
        items: Iterable[Any] = chain(args.values(), values) if isinstance(args, dict) else values
        longest = 0
        for value in items:
            cost = len(value) if type(value) is str else self._text_cost(value)
            if cost > longest:
                longest = cost
        self.meter.allow_size(len(template) + widths + fields * longest, "A %-format")

    def _stable_args(self, args: Any) -> Any:
        """The arguments of a ``%``, each whose text would name an address as its
        ``StableText`` (a mapping's keys are looked up as they are)."""
        text = self.walks.text
        if type(args) is tuple:
            return tuple(a if type(a) in TEXT_SCALARS else text(a) for a in args)
        if isinstance(args, dict):
            stable = text(args)
            if type(stable) is not StableText:
                return args
            return {k: v if type(v) in TEXT_SCALARS else text(v) for k, v in args.items()}
        return args if type(args) in TEXT_SCALARS else text(args)

    def _text_cost(self, value: Any) -> int:
        """Characters ``%s``/``%r`` may make of one value: containers are priced by a walk."""
        kind = type(value)
        if kind is str:
            return len(value)
        if kind in TEXT_SCALARS:
            return 24 if kind is not int else value.bit_length() // 3 + 2  # digits and sign
        return text_size(value, self.meter.limits.size)

    def fstr(self, text: str) -> str:
        """A whole f-string, once built: ``s = f"{s}{s}"`` in a loop would double each turn."""
        if len(text) > self._size:
            self.meter.allow_size(len(text), "An f-string")
        return text

    def fmt(self, value: Any, conversion: int, spec: str) -> str:
        """One ``{value!c:spec}`` of an f-string, with widths and precisions size-checked."""
        if type(value) not in TEXT_SCALARS:
            value = self.walks.text(value, "An f-string field")
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
            if type(items) is list and len(items) <= _SMALL_LOOP:
                return sum(items, start)
            return sum(self.walks.priced_input(items), start)
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
        return map(self.walks.metered(function), *iterables)

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

    def sized_join(self, sep: str) -> Callable[[Iterable[Any]], str]:
        def join(given: Iterable[Any]) -> str:
            items = given if isinstance(given, list | tuple) else list(self.getiter(given))
            try:
                n = sum(map(len, items)) + len(sep) * max(len(items) - 1, 0)
            except TypeError:
                return sep.join(items)
            self.meter.allow_size(n, "str.join")
            return sep.join(items)

        return join

    def sized_replace(self, s: str) -> Callable[..., str]:
        def replace(old: str, new: str, count: int = -1) -> str:
            if type(old) is str and type(new) is str and len(new) > len(old):
                hits = s.count(old) if old else len(s) + 1
                if type(count) is int and count >= 0:
                    hits = min(hits, count)
                self.meter.allow_size(len(s) + hits * (len(new) - len(old)), "str.replace")
            return s.replace(old, new, count)

        return replace

    def sized_width(self, s: str, method: str) -> Callable[..., str]:
        bound = getattr(s, method)

        def padded(width: int, *rest: Any) -> str:
            if type(width) is int:
                self.meter.allow_size(width, f"str.{method}")
            return bound(width, *rest)

        return padded

    def sized_ljust(self, s: str) -> Callable[..., str]:
        return self.sized_width(s, "ljust")

    def sized_rjust(self, s: str) -> Callable[..., str]:
        return self.sized_width(s, "rjust")

    def sized_center(self, s: str) -> Callable[..., str]:
        return self.sized_width(s, "center")

    def sized_zfill(self, s: str) -> Callable[..., str]:
        return self.sized_width(s, "zfill")

    def sized_expandtabs(self, s: str) -> Callable[..., str]:
        def expandtabs(tabsize: int = 8) -> str:
            if type(tabsize) is int:
                self.meter.allow_size(len(s) + s.count("\t") * max(tabsize, 0), "expandtabs")
            return s.expandtabs(tabsize)

        return expandtabs

    # str.upper() and its kind can make three characters of one ("\ufb03".upper() is "FFI")
    def sized_case(self, s: str, method: str) -> Callable[[], str]:
        bound: Callable[[], str] = getattr(s, method)
        if len(s) * 3 <= self.meter.limits.size:
            return bound

        def changed_case() -> str:
            text = bound()
            if len(text) > self.meter.limits.size:
                self.meter.allow_size(len(text), f"str.{method}")
            return text

        return changed_case

    def sized_upper(self, s: str) -> Callable[[], str]:
        return self.sized_case(s, "upper")

    def sized_lower(self, s: str) -> Callable[[], str]:
        return self.sized_case(s, "lower")

    def sized_casefold(self, s: str) -> Callable[[], str]:
        return self.sized_case(s, "casefold")

    def sized_title(self, s: str) -> Callable[[], str]:
        return self.sized_case(s, "title")

    def sized_swapcase(self, s: str) -> Callable[[], str]:
        return self.sized_case(s, "swapcase")

    def sized_capitalize(self, s: str) -> Callable[[], str]:
        return self.sized_case(s, "capitalize")

    # set and dict methods that walk every argument in C: s.update(*[range(10**6)] * 300)
    def sized_many(self, s: Any, method: str) -> Callable[..., Any]:
        bound: Callable[..., Any] = getattr(s, method)

        def walked(*others: Any) -> Any:
            others = tuple(
                map(self.walks.priced_input, others)
            )  # charged by size, or metered per item
            if method not in _GROWING:  # a symmetric difference may still pass size: check
                result = bound(*others)
                made = s if method.endswith("_update") else result
                if type(made) in (set, frozenset) and len(made) > self.meter.limits.size:
                    self.meter.allow_size(len(made), f"{type(s).__name__}.{method}")
                return result
            size = self.meter.limits.size
            result = s if method == "update" else set(s)
            for other in others:  # one at a time: the result is checked before it grows more
                result.update(other)
                if len(result) > size:
                    self.meter.allow_size(len(result), f"{type(s).__name__}.{method}")
            if method == "update":
                return None
            return frozenset(result) if type(s) is frozenset else result

        return walked

    def sized_dict_update(self, d: dict[Any, Any]) -> Callable[..., None]:
        def update(*others: Any, **pairs: Any) -> None:
            d.update(*map(self.walks.priced_input, others), **pairs)
            if len(d) > self.meter.limits.size:
                self.meter.allow_size(len(d), "dict.update")

        return update

    def sized_extend(self, xs: list[Any]) -> Callable[[Iterable[Any]], None]:
        def extend(items: Iterable[Any]) -> None:
            if not hasattr(items, "__len__"):
                items = list(self.getiter(items))
            self.meter.allow_size(len(xs) + len(items), "list.extend")  # type: ignore[arg-type]
            xs.extend(items)

        return extend


def wrappers(sizes: Sizes, walks: Walks) -> dict[str, Callable[[Any], Callable[..., Any]]]:
    """Each wrapper named in ``language.ATTRIBUTES`` -> what makes that guarded method of a value
    (``"join"`` -> ``sizes.sized_join``: ``sep.join`` priced before C joins)."""
    table: dict[str, Callable[[Any], Callable[..., Any]]] = {
        "join": sizes.sized_join,
        "replace": sizes.sized_replace,
        "ljust": sizes.sized_ljust,
        "rjust": sizes.sized_rjust,
        "center": sizes.sized_center,
        "zfill": sizes.sized_zfill,
        "expandtabs": sizes.sized_expandtabs,
        "upper": sizes.sized_upper,
        "lower": sizes.sized_lower,
        "casefold": sizes.sized_casefold,
        "title": sizes.sized_title,
        "swapcase": sizes.sized_swapcase,
        "capitalize": sizes.sized_capitalize,
        "extend": sizes.sized_extend,
        "dict_update": sizes.sized_dict_update,
        "sort": walks.sized_sort,
    }
    for method in _WALKING:  # set methods that walk every argument in C: sized by the total
        table["set_" + method] = partial(sizes.sized_many, method=method)
    return table
