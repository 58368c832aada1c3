"""The checker's rules for f-strings: the text they make is priced before it is made.

CPython formats an f-string in C, so a field whose value is a large container, or a spec such
as ``{x:>999999999}``, would allocate its whole text before any guard could look at it. The
whole result is size-checked once (``_fstr_``); a field's value is priced (``_text_``) unless
the source proves it is short text; a wide spec goes through ``_fmt_``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, cast

from planlang.check.nodes import _call, _small_spec, merged_text_checks, priced_text

if TYPE_CHECKING:
    from planlang.check.infer import Kinds

__all__ = ["MAX_FSTRING_FIELDS", "MAX_PLAN_FIELDS", "FStringRules"]

# f-string fields per f-string: CPython's compiler takes quadratic time in their number.
MAX_FSTRING_FIELDS = 1000
# and in a plan: each is rewritten into a priced call, about 55 us of the checker's (330
# f-strings of 999 fields, 990 KB, took 27 s to check; red team 21)
MAX_PLAN_FIELDS = 20_000
# Names whose text needs no pricing in an f-string: a string is its own text, and a number's
# is a few dozen characters (an int's at most sys.int_max_str_digits).
_PROVEN_TEXT = frozenset({"int", "num", "str"})


class FStringRules:
    """The f-string visits of ``PlanPolicy`` (which it is mixed into)."""

    kinds: Kinds | None
    _fields = 0  # f-string fields seen in the plan (MAX_PLAN_FIELDS)

    if TYPE_CHECKING:

        def problem(self, node: ast.AST, code: str, message: str) -> None: ...
        def visit(self, node: ast.AST) -> Any: ...
        def node_contents_visit(self, node: ast.AST) -> Any: ...

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        """f-strings: the whole result is size-checked once (``_fstr_``); a field with a format
        spec also goes through ``_fmt_``, which checks its widths before formatting."""
        fields = [part for part in node.values if isinstance(part, ast.FormattedValue)]
        if len(fields) > MAX_FSTRING_FIELDS:  # CPython compiles these in quadratic time
            self.problem(node, "PL005", f"an f-string may have at most {MAX_FSTRING_FIELDS:,} "
                         f"fields; this one has {len(fields):,}")  # fmt: skip
            return node
        self._fields += len(fields)
        if self._fields > MAX_PLAN_FIELDS and self._fields - len(fields) <= MAX_PLAN_FIELDS:
            self.problem(node, "PL005", f"a plan may have at most {MAX_PLAN_FIELDS:,} f-string "
                         "fields in all; this f-string passes the limit")  # fmt: skip
        if self._fields > MAX_PLAN_FIELDS:
            return node  # refused: its fields are not rewritten (that is the time it costs)
        # A few integers in decimal (at most sys.int_max_str_digits each) make a short string,
        # padded to a small written-out width too (``{n:03d}``, ``{n:>8,}``); a spec such as
        # ``b`` or ``x`` is not bounded that way, so those are still checked.
        bounded = len(fields) <= 16 and all(
            self.kinds is not None
            and self.kinds.kind(part.value) == "int"
            and (part.format_spec is None or _decimal_spec(part.format_spec))
            and part.conversion in (-1, 114, 115)
            for part in fields
        )
        node = self.node_contents_visit(node)
        if not fields or bounded:
            return node
        return _call("_fstr_", [merged_text_checks(node)], node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        proven_text = self.kinds is not None and self.kinds.kind(node.value) in _PROVEN_TEXT
        value = cast(ast.expr, self.visit(node.value))
        if node.format_spec is None or _small_spec(node.format_spec):
            # no width past _SMALL_SPEC: formatted natively, once _text_ has priced the value's
            # text (a container's repr may be far larger than the container: planlang.sandbox.walks)
            node.value = value if proven_text else priced_text(value, node)
            return node
        # The spec's own fields are formatted natively: its length is checked by _fmt_.
        spec = self.node_contents_visit(node.format_spec)
        call = _call("_fmt_", [value, ast.Constant(node.conversion), spec], node)
        return ast.copy_location(ast.FormattedValue(value=call, conversion=-1), node)


def _decimal_spec(spec: ast.expr) -> bool:
    """A spec written out in full, with small numbers, that formats an int in decimal: no
    presentation type, or ``d`` or ``n`` (a letter at its end can only be the type; a fill
    character comes first, before an alignment)."""
    if not _small_spec(spec):
        return False
    text = "".join(str(cast(ast.Constant, part).value) for part in cast(ast.JoinedStr, spec).values)
    return not text or text[-1] in "dn" or not (text[-1].isalpha() or text[-1] == "%")
