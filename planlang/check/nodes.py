"""Small builders and tests of AST nodes for the checker's rewrite (``planlang.check.policy``).

Every node made here gets its location at once: fixing a whole tree afterwards cost half the
check.
"""

from __future__ import annotations

import ast
from typing import TypeVar, cast

__all__ = ["_call", "_is_number", "_small_spec", "_unpack_call", "located"]

_N = TypeVar("_N", bound=ast.AST)


def located(node: _N, like: ast.AST) -> _N:
    """``ast.copy_location`` for the checker's hot path: a node made from source always has all
    four fields, so they are copied without the general function's checks."""
    try:
        node.lineno = like.lineno  # type: ignore[attr-defined]
        node.col_offset = like.col_offset  # type: ignore[attr-defined]
        node.end_lineno = like.end_lineno  # type: ignore[attr-defined]
        node.end_col_offset = like.end_col_offset  # type: ignore[attr-defined]
    except AttributeError:
        ast.copy_location(node, like)
    return node


def _call(name: str, args: list[ast.expr], like: ast.AST) -> ast.Call:
    # Nodes get their location when made: fixing the whole tree afterwards was half the check.
    func = located(ast.Name(name, ast.Load()), like)
    for arg in args:
        if not hasattr(arg, "lineno"):
            located(arg, like)
    return located(ast.Call(func=func, args=args, keywords=[]), like)


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
    # Any digit-like character counts ("²" is a digit to isdigit but not to int()): a spec with
    # one that is not a plain ASCII digit is not "small", and _fmt_ lets format() judge it.
    digits = "".join(c if c.isdigit() else " " for c in text).split()
    return all(d.isascii() and len(d) <= 4 and int(d) <= _SMALL_SPEC for d in digits)


def _is_number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def priced_text(value: ast.expr, node: ast.AST) -> ast.expr:
    """``_text_(value)``; for a bare name, ``x if _type_(x) in _text_kinds_ else _text_(x)``:
    most fields are names of strings and numbers, and the inline test costs half the call. A
    name read twice is the same value: plans cannot rebind a name from another thread."""
    if not isinstance(value, ast.Name):
        return _call("_text_", [value], node)

    def load(name: str = value.id) -> ast.Name:
        return located(ast.Name(name, ast.Load()), node)

    test = located(
        ast.Compare(left=_call("_type_", [load()], node), ops=[ast.In()],
                    comparators=[load("_text_kinds_")]),
        node,
    )  # fmt: skip
    checked = ast.IfExp(test=test, body=load(), orelse=_call("_text_", [load()], node))
    checked._pl_text_of = value.id  # type: ignore[attr-defined]  # see merged_text_checks
    # Every new node gets its location here: a node without one makes compile() fail, and the
    # fallback (fix_missing_locations over the whole tree) costs a third of the check.
    return located(checked, node)


def merged_text_checks(node: ast.JoinedStr) -> ast.expr:
    """One test for all the bare-name fields of an f-string instead of one test each:
    ``f"{a}{b}"`` becomes ``f"{a}{b}" if _type_(a) in _text_kinds_ and _type_(b) in
    _text_kinds_ else f"{_text_(a)}{_text_(b)}"``. Only one branch is evaluated, so the other
    fields (calls and all) still run once."""
    checked = [
        part
        for part in node.values
        if isinstance(part, ast.FormattedValue) and hasattr(part.value, "_pl_text_of")
    ]
    names = list(dict.fromkeys(part.value._pl_text_of for part in checked))  # type: ignore[attr-defined]
    if len(names) < 2:
        return node
    slow_values: list[ast.expr] = []
    for part in node.values:  # parts without a checked name are shared by both branches
        if part in checked:
            assert isinstance(part, ast.FormattedValue)
            name = part.value._pl_text_of  # type: ignore[attr-defined]
            part.value = located(ast.Name(name, ast.Load()), part)
            priced = _call("_text_", [located(ast.Name(name, ast.Load()), part)], part)
            slow_part = ast.FormattedValue(priced, part.conversion, part.format_spec)
            slow_values.append(located(slow_part, part))
        else:
            slow_values.append(part)
    slow = located(ast.JoinedStr(slow_values), node)

    def load(name: str) -> ast.Name:
        return located(ast.Name(name, ast.Load()), node)

    # ``_type_(a) in _text_kinds_ and _type_(b) in ...``: measured cheaper than one C call
    # over a tuple (issuperset builds a set), and it stops at the first container
    tests: list[ast.expr] = [
        located(
            ast.Compare(_call("_type_", [load(n)], node), [ast.In()], [load("_text_kinds_")]), node
        )
        for n in names
    ]
    test = located(ast.BoolOp(ast.And(), tests), node)
    return located(ast.IfExp(test=test, body=node, orelse=slow), node)


def is_int_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value != 0


def arithmetic_below(node: ast.AST) -> list[int]:
    """ids of the BinOps reached from ``node`` through arithmetic alone (no call, subscript or
    name in between): their values flow into the enclosing ``%`` and are stored nowhere else."""
    found: list[int] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.BinOp):
            found.append(id(current))
            stack += (current.left, current.right)
        elif isinstance(current, ast.UnaryOp):
            stack.append(current.operand)
    return found


def augmented_item(
    container: ast.expr,
    key: ast.expr,
    value: ast.expr,
    op: str,
    names: tuple[str, str],
    node: ast.AST,
) -> list[ast.AST]:
    """``x[k] += v`` as ``_augN = x; _augM = k; _write_(_augN)[_augM] = _inplacevar_(op,
    _getitem_(_augN, _augM), v)``: the container and key are evaluated once, the write guarded."""
    c_name, k_name = names
    stmts: list[ast.AST] = [
        ast.Assign(targets=[ast.Name(c_name, ast.Store())], value=container),
        ast.Assign(targets=[ast.Name(k_name, ast.Store())], value=key),
    ]
    current = _call("_getitem_", [ast.Name(c_name, ast.Load()), ast.Name(k_name, ast.Load())], node)
    new = _call("_inplacevar_", [ast.Constant(op), current, value], node)
    store = ast.Subscript(
        value=_call("_write_", [ast.Name(c_name, ast.Load())], node),
        slice=ast.Name(k_name, ast.Load()),
        ctx=ast.Store(),
    )
    stmts.append(ast.Assign(targets=[store], value=new))
    for stmt in stmts:
        ast.copy_location(stmt, node)
        ast.fix_missing_locations(stmt)
    return stmts
