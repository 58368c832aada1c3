"""The plan line that writes its ``result``: where an error in handing the result over points.

A plan's ``result`` is made plain data after its last line ran (``wall.thaw`` in one process,
the codec in a plan's process), so an error there (``result = {"c": 1j}``: a complex is not
plain data) has no plan frame in its traceback and named no line (newuser24). The line is that
of the last instruction in the module's code that stores the name ``result``: exact for a plan
that writes it once, the last such line in the text for one that writes it on several paths.
"""

from __future__ import annotations

import types
import weakref

from planlang.sandbox.deep_stack import instructions

__all__ = ["result_line"]

_lines: weakref.WeakKeyDictionary[types.CodeType, int | None] = weakref.WeakKeyDictionary()


def result_line(code: types.CodeType | None) -> int | None:
    """The line of the last ``result = ...`` in ``code``'s module level, or None."""
    if code is None:
        return None
    if code in _lines:
        return _lines[code]
    line = None
    for instruction in instructions(code):
        if instruction.opname in ("STORE_NAME", "STORE_GLOBAL") and instruction.argval == "result":
            positions = instruction.positions
            if positions is not None and positions.lineno is not None:
                line = positions.lineno
    _lines[code] = line
    return line
