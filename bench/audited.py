"""The audited copy: the library as agents read it, with every doctest example removed.

Examples would give the bugs away (a planted bug makes one of them fail, and the expected output
sits right below the call), so they go; the prose of each docstring stays. Removal is by whole
lines with doctest's own rule (a ``>>>`` line, its ``...`` continuations, then output lines up
to a blank line or the next prompt), so every other line is kept verbatim and the line map from
original to audited copy is exact.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_PROMPT = re.compile(r"^(\s*)>>>(\s|$)")
_QUOTES = ('"""', "'''")


@dataclass(frozen=True)
class Stripped:
    """The audited text and, for each of its lines, the original line number (1-based)."""

    text: str
    kept: tuple[int, ...]

    def line_of(self, original_line: int) -> int:
        """The audited line that shows ``original_line``; refuses a removed line."""
        try:
            return self.kept.index(original_line) + 1
        except ValueError:
            raise ValueError(f"Line {original_line} was removed from the audited copy.") from None


def docstring_spans(tree: ast.Module) -> list[tuple[int, int]]:
    """First and last line of every module, class and function docstring."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                constant = body[0].value
                spans.append((constant.lineno, constant.end_lineno or constant.lineno))
    return sorted(spans)


def assigned_doc_spans(tree: ast.Module) -> list[tuple[int, int]]:
    """First and last line of documentation assigned rather than written in place: a string
    assigned to a name at module or class level (``besselj = r\"\"\"...\"\"\"`` in mpmath,
    attached to its function at import) or to an ``__doc__`` attribute (an f-string too). Their
    examples would show a reader the expected output of a function as plainly as a docstring."""
    spans = []
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for body in bodies:
        for statement in body:
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
                continue
            target, value = statement.targets[0], statement.value
            named = isinstance(target, ast.Name) or (
                isinstance(target, ast.Attribute) and target.attr == "__doc__"
            )
            text = isinstance(value, ast.JoinedStr) or (
                isinstance(value, ast.Constant) and isinstance(value.value, str)
            )
            if named and text and value.end_lineno and value.end_lineno > value.lineno:
                spans.append((value.lineno, value.end_lineno))
    return spans


def example_lines(lines: list[str], start: int, end: int) -> set[int]:
    """Line numbers (1-based) of doctest examples inside the docstring ``start..end``."""
    found: set[int] = set()
    number = start + 1  # an example on the opening-quote line is not a doctest example
    while number <= end:
        match = _PROMPT.match(lines[number - 1])
        if not match:
            number += 1
            continue
        indent = match.group(1)
        found.add(number)
        number += 1
        while number <= end and re.match(rf"^{re.escape(indent)}\.\.\.(\s|$)", lines[number - 1]):
            found.add(number)
            number += 1
        while number <= end:
            text = lines[number - 1].strip()
            if not text or _PROMPT.match(lines[number - 1]) or text.startswith(_QUOTES):
                break
            found.add(number)
            number += 1
    return found


def strip_examples(source: str) -> Stripped:
    """``source`` without doctest examples, with runs of blank lines they leave collapsed."""
    lines = source.splitlines(keepends=True)
    try:
        tree = ast.parse(source)
        spans = sorted(set(docstring_spans(tree)) | set(assigned_doc_spans(tree)))
    except SyntaxError:
        return Stripped(source, tuple(range(1, len(lines) + 1)))
    drop: set[int] = set()
    for start, end in spans:
        examples = example_lines(lines, start, end)
        if not examples:
            continue
        if end in examples:
            # The closing quotes share a line with expected output: keep the line, as quotes.
            examples.discard(end)
            text = lines[end - 1]
            for quote in _QUOTES:
                if quote in text:
                    indent = text[: len(text) - len(text.lstrip())]
                    lines[end - 1] = indent + text[text.rindex(quote) :]
                    break
        drop |= examples
        if not lines[end - 1].strip().rstrip("\"'"):
            # Blank lines left just above the closing quotes would show where examples were.
            number = end - 1
            while number > start and (number in drop or not lines[number - 1].strip()):
                drop.add(number)
                number -= 1
        previous_blank = False
        for number in range(start + 1, end):
            if number in drop:
                continue
            blank = not lines[number - 1].strip()
            if blank and previous_blank:
                drop.add(number)
            previous_blank = blank
        closing = lines[end - 1].strip()
        if closing in _QUOTES and all(n in drop for n in range(start + 1, end)):
            # Only the summary line is left: close it on its own line, as a formatter would.
            opening = lines[start - 1]
            content = opening.rstrip("\r\n")
            lines[start - 1] = content + closing + opening[len(content) :]
            drop.add(end)
    kept = tuple(n for n in range(1, len(lines) + 1) if n not in drop)
    return Stripped("".join(lines[n - 1] for n in kept), kept)
