"""Which function encloses a line: the unit in which findings and planted bugs are placed.

A finding and a bug are compared by file and function, so both sides must name functions the
same way. The name is the chain of enclosing classes plus the outermost ``def`` below them
(``Class.method``, ``Outer.Inner.method``, ``func``): a helper nested inside a function belongs
to that function, because it is not a separately documented unit.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class FunctionSpan:
    """A top-level unit: qualified name and its first and last line (decorators included)."""

    name: str
    start: int
    end: int
    node: ast.FunctionDef | ast.AsyncFunctionDef

    def contains(self, line: int) -> bool:
        return self.start <= line <= self.end


def function_spans(source: str) -> list[FunctionSpan]:
    """All functions of ``source`` named as ``Class.method``, in source order.

    Raises ``SyntaxError`` when ``source`` is not Python.

    >>> source = "class A:\\n    def f(self):\\n        pass\\n"
    >>> [(span.name, span.start, span.end) for span in function_spans(source)]
    [('A.f', 2, 3)]
    """
    return spans_of_tree(ast.parse(source))


def spans_of_tree(tree: ast.Module) -> list[FunctionSpan]:
    """:func:`function_spans` of an already parsed module."""
    spans: list[FunctionSpan] = []
    _collect(tree, [], spans)
    spans.sort(key=lambda span: span.start)
    return spans


def _collect(node: ast.AST, classes: list[str], spans: list[FunctionSpan]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            _collect(child, [*classes, child.name], spans)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            end = child.end_lineno or child.lineno
            spans.append(FunctionSpan(".".join([*classes, child.name]), start, end, child))
        elif not isinstance(child, ast.expr):
            # Functions defined under if/try/with at class or module level still count.
            _collect(child, classes, spans)


def enclosing_function(source: str, line: int) -> str | None:
    """The qualified name of the function enclosing ``line`` (1-based), or None.

    Returns None for module-level lines and for source that does not parse.

    >>> enclosing_function("def f():\\n    return 1\\n", 2)
    'f'
    """
    try:
        spans = function_spans(source)
    except (SyntaxError, ValueError):
        return None
    return name_at(spans, line)


def name_at(spans: list[FunctionSpan], line: int) -> str | None:
    """The innermost span (latest start) containing ``line`` among ``spans``."""
    best: FunctionSpan | None = None
    for span in spans:
        if span.contains(line) and (best is None or span.start >= best.start):
            best = span
    return best.name if best else None
