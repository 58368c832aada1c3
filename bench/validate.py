"""Which candidate edits may be planted: those that change the program, read like a mistake a
person makes, and give a linter or a type checker nothing new to point at.

Candidates are enumerated (``bench.edits``) and shuffled by seed first, and judged here one at a
time, lazily: judging parses the whole file per edit, and a judgement added here never changes
the seeded order of the other candidates, so keys planted before it stay reproducible.
"""

from __future__ import annotations

import ast
import re

from bench.edits import Edit, apply
from bench.lint import signature

# Adding or subtracting zero in any spelling ("a[1:-0]", "y-0") reads as a planted edit.
_SIGNED_ZERO = re.compile(r"[-+]=?\s*0\b(?![.\w])")


class Validator:
    """Judges candidate edits of one source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tree = ast.parse(source)
        self.dump = ast.dump(self.tree)
        self.lint = signature(source)

    def __call__(self, edit: Edit) -> bool:
        if _SIGNED_ZERO.search(edit.planted) and not _SIGNED_ZERO.search(edit.original):
            return False
        try:
            new_source = apply(self.source, edit)
            tree = ast.parse(new_source)
        except (SyntaxError, ValueError):
            return False
        if ast.dump(tree) == self.dump:
            return False
        if _text_arithmetic(tree, edit.line) > _text_arithmetic(self.tree, edit.line):
            return False
        return signature(new_source) == self.lint


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
    )


def _text_arithmetic(tree: ast.Module, line: int) -> int:
    """Subtractions with a string operand on ``line`` (``'/' - part``): a type checker's
    error, not an audit's finding."""
    count = 0
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) != line:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            count += _is_text(node.left) or _is_text(node.right)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Sub):
            count += _is_text(node.value)
    return count
