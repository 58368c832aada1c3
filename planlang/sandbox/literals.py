"""The integers a plan's text holds, held to ``Limits.int_bits`` like those it computes.

``int_bits`` bounds every integer a plan makes (``*``, ``**``, ``<<``, ``int(text, base)``),
but a literal is made by the compiler: ``0x`` and 999,990 hex digits is a 4-million-bit int
within the 1 MB source bound, and a division of it by another such literal is seconds of C
(CPython 3.11 divides in quadratic time) for one step (red team 24). Decimal literals stop at
CPython's 4,300 digits; hex, octal and binary ones do not. So a run refuses, before the plan
starts, code whose constants (in tuples and frozensets the compiler folded, and in the plan's
functions) hold an int past the limit: ``PlanLimitError("size")`` with the line that writes it.
"""

from __future__ import annotations

import types
import weakref

from planlang.errors import PlanLimitError
from planlang.sandbox.deep_stack import instructions

__all__ = ["check_literals"]

# code -> (the bits of its largest int constant, the code object holding it, its index there)
_largest: weakref.WeakKeyDictionary[types.CodeType, tuple[int, types.CodeType, int]] = (
    weakref.WeakKeyDictionary()
)


def check_literals(code: types.CodeType, int_bits: int, filename: str) -> None:
    """Raise ``PlanLimitError("size")`` if an int constant of ``code`` passes ``int_bits``."""
    found = _largest.get(code)
    if found is None:
        found = _largest[code] = _scan(code)
    bits, holder, index = found
    if bits > int_bits:
        loads = [i for i in instructions(holder) if i.opname == "LOAD_CONST" and i.arg == index]
        line = loads[0].positions.lineno if loads and loads[0].positions else None
        message = f"An integer the plan writes has {bits:,} bits, past the limit of {int_bits:,}"
        raise PlanLimitError("size", message + ".", line=line, filename=filename)


def _scan(code: types.CodeType) -> tuple[int, types.CodeType, int]:
    best = (0, code, -1)
    for index, const in enumerate(code.co_consts):
        if type(const) is types.CodeType:
            inner = _scan(const)
            if inner[0] > best[0]:
                best = inner
            continue
        bits = _bits(const)
        if bits > best[0]:
            best = (bits, code, index)
    return best


def _bits(const: object) -> int:
    """The largest int in a constant (a folded tuple or frozenset may nest others)."""
    kind = type(const)
    if kind is int:
        return abs(const).bit_length()  # type: ignore[arg-type]
    if kind is tuple or kind is frozenset:
        return max((_bits(item) for item in const), default=0)  # type: ignore[attr-defined]
    return 0
