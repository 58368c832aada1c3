"""The twelve kinds of planted bug: realistic one-line mistakes, located with the AST.

Each kind is a small function that looks at one AST node and yields rewritten versions of the
node's line. Rewrites splice text at the node's columns instead of unparsing, so the planted
line keeps its author's formatting and nothing but the mistake changes (an audited copy must
carry no trace of the edit). Only nodes that sit on a single line are touched.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

ATOMS = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Call)


@dataclass(frozen=True)
class Edit:
    """One candidate bug: the line (1-based) before and after."""

    kind: str
    line: int
    original: str
    planted: str


class Line:
    """One source line as UTF-8 bytes, because AST columns count bytes."""

    def __init__(self, text: str) -> None:
        self.raw = text.encode("utf-8")

    def seg(self, node: ast.AST) -> str:
        return self.raw[node.col_offset : node.end_col_offset].decode("utf-8")  # type: ignore[attr-defined]

    def splice(self, start: int, end: int, new: str) -> str:
        return (self.raw[:start] + new.encode("utf-8") + self.raw[end:]).decode("utf-8")

    def replace(self, node: ast.AST, new: str) -> str:
        return self.splice(node.col_offset, node.end_col_offset, new)  # type: ignore[attr-defined]

    def swap_in_gap(self, left: ast.AST, right: ast.AST, old: str, new: str) -> str | None:
        """Replace the operator ``old`` between two operands by ``new`` (first match)."""
        start, end = left.end_col_offset, right.col_offset  # type: ignore[attr-defined]
        gap = self.raw[start:end].decode("utf-8")
        position = _find_token(gap, old)
        if position < 0:
            return None
        return self.splice(start, end, gap[:position] + new + gap[position + len(old) :])


def _find_token(gap: str, token: str) -> int:
    """Position of ``token`` in ``gap`` not glued to other operator characters or letters."""
    start = 0
    while (position := gap.find(token, start)) >= 0:
        before = gap[position - 1] if position else " "
        after = gap[position + len(token) : position + len(token) + 1] or " "
        glue = "<>=!+-*/%&|^" if not token.isalpha() else "_"
        alpha_glued = token.isalpha() and (after.isalnum() or before.isalnum())
        if not (before in glue or after in glue or alpha_glued):
            return position
        start = position + 1
    return -1


def _is_single_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", None) is not None and node.lineno == node.end_lineno  # type: ignore[attr-defined]


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    return None


def _bumped(line: Line, node: ast.expr, delta: int) -> str:
    """The text of ``node`` plus ``delta``, written the way a person would write it."""
    value = _int_value(node)
    if value is not None:
        return str(value + delta)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        k = _int_value(node.right)
        if k is not None:
            offset = (k if isinstance(node.op, ast.Add) else -k) + delta
            left = line.seg(node.left)
            if offset == 0:
                return left
            return f"{left} + {offset}" if offset > 0 else f"{left} - {-offset}"
    text = line.seg(node) if isinstance(node, (*ATOMS, ast.BinOp)) else f"({line.seg(node)})"
    return f"{text} + {delta}" if delta > 0 else f"{text} - {-delta}"


Scope = ast.FunctionDef | ast.AsyncFunctionDef


def off_by_one(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """Off-by-one in a range or slice bound: ``range(n)`` -> ``range(n - 1)``, ``a[:k + 1]``."""
    bound: ast.expr | None = None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        if 1 <= len(node.args) <= 3 and not node.keywords:
            bound = node.args[0] if len(node.args) == 1 else node.args[1]
    elif isinstance(node, ast.Slice):
        bound = node.upper or node.lower
    if bound is not None and _is_single_line(bound):
        for delta in (-1, 1):
            yield line.replace(bound, _bumped(line, bound, delta))


_STRICT = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">")}


def strictness(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """``<`` for ``<=`` and the reverse (likewise ``>``/``>=``) in a comparison."""
    if isinstance(node, ast.Compare):
        values = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            if type(op) in _STRICT:
                old, new = _STRICT[type(op)]
                swapped = line.swap_in_gap(values[index], values[index + 1], old, new)
                if swapped:
                    yield swapped


def plus_minus(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """``+`` and ``-`` swapped, in an expression or an augmented assignment."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        old, new = ("+", "-") if isinstance(node.op, ast.Add) else ("-", "+")
        swapped = line.swap_in_gap(node.left, node.right, old, new)
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Sub):
        old, new = ("+=", "-=") if isinstance(node.op, ast.Add) else ("-=", "+=")
        swapped = line.swap_in_gap(node.target, node.value, old, new)
    else:
        return
    if swapped:
        yield swapped


def swap_operands(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """Operands of an ordering comparison or a subtraction swapped: ``a - b`` -> ``b - a``."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _STRICT:
        left, right = node.left, node.comparators[0]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        left, right = node.left, node.right
    else:
        return
    if isinstance(left, ATOMS) and isinstance(right, ATOMS) and line.seg(left) != line.seg(right):
        start, end = left.col_offset, right.end_col_offset
        middle = line.raw[left.end_col_offset : right.col_offset].decode("utf-8")
        yield line.splice(start, end, line.seg(right) + middle + line.seg(left))  # type: ignore[arg-type]


_CONSTANT_SWAPS = {0: (1,), 1: (0, 2), 2: (1,)}


def wrong_constant(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """A wrong small constant: 0 for 1, 1 for 0 or 2, 2 for 1."""
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value in _CONSTANT_SWAPS:
        for new in _CONSTANT_SWAPS[node.value]:
            yield line.replace(node, str(new))


def and_or(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """``and`` and ``or`` swapped in a boolean expression."""
    if isinstance(node, ast.BoolOp) and _is_single_line(node):
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        text: str | None = line.swap_in_gap(node.values[0], node.values[1], old, new)
        if text is not None:
            yield text


_NEGATED = {ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"), ast.Is: ("is", "is not")}
_NEGATED[ast.IsNot] = ("is not", "is")


def negation(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """A dropped or added ``not``: ``not x`` -> ``x``, ``not in`` -> ``in``, ``if not x``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and _is_single_line(node):
        text = line.seg(node)
        if text.startswith("not"):
            yield line.replace(node, text[3:].lstrip())
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _NEGATED:
        old, new = _NEGATED[type(node.ops[0])]
        swapped = line.swap_in_gap(node.left, node.comparators[0], old, new)
        if swapped:
            yield swapped
    elif isinstance(node, ast.If | ast.While) and _is_single_line(node.test):
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return
        if isinstance(test, ast.Compare) and any(type(op) in _NEGATED for op in test.ops):
            return  # "not a not in b" is no one's mistake; the operator itself is negated above
        inner = line.seg(test)
        wrapped = f"not ({inner})" if isinstance(test, ast.BoolOp | ast.IfExp) else f"not {inner}"
        yield line.replace(test, wrapped)


def wrong_index(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """A wrong index: ``a[0]`` -> ``a[1]``, ``a[-1]`` -> ``a[-2]``, ``a[i]`` -> ``a[i + 1]``."""
    if not (isinstance(node, ast.Subscript) and _is_single_line(node)):
        return
    index = node.slice
    value = _int_value(index)
    if value is not None:
        for new in {0: (1,), -1: (-2, 0)}.get(value, (value - 1, value + 1)):
            yield line.replace(index, str(new))
    elif isinstance(index, ast.Name):
        for delta in (1, -1):
            yield line.replace(index, _bumped(line, index, delta))


def _local_names(scope: Scope, before: int) -> list[str]:
    """Parameters and names assigned on a line before ``before``: they hold a value there."""
    names = {arg.arg for arg in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]}
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno < before:
            names.add(node.id)
    return sorted(names - {"self", "cls", "_"})


def wrong_return(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """Returning the wrong variable: ``return best`` -> ``return current``."""
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and _is_single_line(node):
        for name in _local_names(scope, node.lineno):
            if name != node.value.id:
                yield line.replace(node.value, name)


def true_division(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """``/`` written for ``//`` (a float where an integer was meant)."""
    swapped: str | None = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        swapped = line.swap_in_gap(node.left, node.right, "//", "/")
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.FloorDiv):
        swapped = line.swap_in_gap(node.target, node.value, "//=", "/=")
    if swapped:
        yield swapped


def _is_accumulator(scope: Scope, name: str) -> bool:
    for node in ast.walk(scope):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            if node.target.id == name:
                return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)):
                return True
    return False


def accumulator_init(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """A wrong initial value of an accumulator: ``total = 0`` -> ``total = 1``."""
    if not (isinstance(node, ast.Assign) and _is_single_line(node) and len(node.targets) == 1):
        return
    target = node.targets[0]
    if not (isinstance(target, ast.Name) and _is_accumulator(scope, target.id)):
        return
    value = node.value
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        yield line.replace(value, str(not value.value))
    elif (number := _int_value(value)) is not None:
        for new in (1,) if number == 0 else (0,) if number == 1 else (number - 1, number + 1):
            yield line.replace(value, str(new))
    elif "inf" in line.seg(value) and isinstance(value, ast.Call | ast.UnaryOp | ast.Attribute):
        yield line.replace(value, "0")


def boundary_removed(node: ast.AST, line: Line, scope: Scope) -> Iterator[str]:
    """A boundary check removed: ``i >= 0 and a[i] > x`` -> ``a[i] > x``; ``max(0, x)`` -> ``x``."""
    if isinstance(node, ast.BoolOp) and _is_single_line(node):
        values = node.values
        for index, value in enumerate(values):
            if not isinstance(value, ast.Compare):
                continue
            if index + 1 < len(values):
                start, end = value.col_offset, values[index + 1].col_offset
            else:
                start, end = values[index - 1].end_col_offset, value.end_col_offset  # type: ignore[assignment]
            yield line.splice(start, end, "")
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("max", "min")
        and len(node.args) == 2
        and not node.keywords
        and _is_single_line(node)
    ):
        for kept, dropped in (node.args, node.args[::-1]):
            # Only a clamp to a bound (a constant or a plain name) is a boundary check.
            if isinstance(dropped, ast.Constant | ast.Name) and isinstance(kept, ATOMS):
                yield line.replace(node, line.seg(kept))


KINDS: dict[str, Callable[[ast.AST, Line, Scope], Iterator[str]]] = {
    "off_by_one": off_by_one,
    "strictness": strictness,
    "plus_minus": plus_minus,
    "swap_operands": swap_operands,
    "wrong_constant": wrong_constant,
    "and_or": and_or,
    "negation": negation,
    "wrong_index": wrong_index,
    "wrong_return": wrong_return,
    "true_division": true_division,
    "accumulator_init": accumulator_init,
    "boundary_removed": boundary_removed,
}


# When two kinds produce the same line, the more specific name describes the mistake.
PRIORITY = [
    "accumulator_init",
    "boundary_removed",
    "off_by_one",
    "wrong_index",
    "true_division",
    "wrong_return",
    "strictness",
    "swap_operands",
    "and_or",
    "negation",
    "plus_minus",
    "wrong_constant",
]
_NO_OP = re.compile(r"[-+]=? 0\b(?!\.)|[*/]=? 1\b(?!\.)|\b0 [-+*] ")


def candidates(source: str, scope: Scope) -> list[Edit]:
    """Every one-line edit of every kind in the body of ``scope`` (docstring excluded).

    Not yet validated (see ``bench.validate.Validator``); in a fixed order (line, kind, text),
    so a seeded choice over it is reproducible.
    """
    lines = source.splitlines(keepends=True)
    body = scope.body[1:] if ast.get_docstring(scope, clean=False) is not None else scope.body
    found: set[Edit] = set()
    for statement in body:
        for node in ast.walk(statement):
            anchor = node.test if isinstance(node, ast.If | ast.While) else node
            if not _is_single_line(anchor) or anchor.lineno != getattr(node, "lineno", None):  # type: ignore[attr-defined]
                continue
            number = anchor.lineno  # type: ignore[attr-defined]
            text = lines[number - 1]
            content = text.rstrip("\r\n")
            for kind, rewrite in KINDS.items():
                for planted in rewrite(node, Line(content), scope):
                    if planted != content:
                        found.add(Edit(kind, number, content, planted))
    chosen: dict[tuple[int, str], Edit] = {}
    for edit in sorted(found, key=lambda e: (e.line, PRIORITY.index(e.kind), e.planted)):
        if _NO_OP.search(edit.planted) and not _NO_OP.search(edit.original):
            continue  # "x - 0" reads as a planted edit, not as a mistake someone makes
        chosen.setdefault((edit.line, edit.planted), edit)
    return sorted(chosen.values(), key=lambda e: (e.line, e.kind, e.planted))


def apply(source: str, edit: Edit) -> str:
    """``source`` with ``edit`` in place; refuses an edit whose original line does not match."""
    lines = source.splitlines(keepends=True)
    current = lines[edit.line - 1]
    if current.rstrip("\r\n") != edit.original:
        raise ValueError(
            f"Line {edit.line} is {current!r}, not the edit's original {edit.original!r}."
        )
    lines[edit.line - 1] = edit.planted + current[len(edit.original) :]
    return "".join(lines)
