"""Small builders and tests of AST nodes for the checker's rewrite (``planlang.policy``).

Every node made here gets its location at once: fixing a whole tree afterwards cost half the
check.
"""

from __future__ import annotations

import ast
from typing import cast

__all__ = ["_call", "_is_number", "_small_spec", "_unpack_call"]


def _call(name: str, args: list[ast.expr], like: ast.AST) -> ast.Call:
    # Nodes get their location when made: fixing the whole tree afterwards was half the check.
    func = ast.copy_location(ast.Name(name, ast.Load()), like)
    for arg in args:
        if not hasattr(arg, "lineno"):
            ast.copy_location(arg, like)
    return ast.copy_location(ast.Call(func=func, args=args, keywords=[]), like)


def _unpack_call(kind: str, elements: list[ast.expr], like: ast.AST) -> ast.Call:
    """``_unpack_(kind, part, ...)``: a starred element is its value, any other a 1-tuple."""
    parts: list[ast.expr] = [
        e.value if isinstance(e, ast.Starred) else ast.Tuple([e], ast.Load()) for e in elements
    ]
    call = _call("_unpack_", [ast.Constant(kind), *parts], like)
    ast.fix_missing_locations(call)
    return call


_SMALL_SPEC = 1000  # widths and precisions up to this in a constant spec need no check


def _small_spec(spec: ast.expr) -> bool:
    """A format spec written out in full (no fields) whose numbers are all small."""
    if not isinstance(spec, ast.JoinedStr):
        return False
    if not all(isinstance(part, ast.Constant) and isinstance(part.value, str)
               for part in spec.values):  # fmt: skip
        return False
    text = "".join(str(cast(ast.Constant, part).value) for part in spec.values)
    digits = "".join(c if c.isdigit() else " " for c in text).split()
    return all(len(d) <= 4 and int(d) <= _SMALL_SPEC for d in digits)


def _is_number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)
