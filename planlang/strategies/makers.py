"""The ways to build a value of each type, one small function per language feature.

Each maker takes the expression writer, the scope, the wanted type and the depth left, and
returns source (or ``None`` when it does not apply to that type). Compound results are always
parenthesised, so makers compose without precedence surprises. Makers that divide, index or
take a minimum are written so they cannot fail on the values a plan holds.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st

from planlang.strategies.expressions import SORTABLE, Expressions, InScope, default_literal
from planlang.strategies.spec import ANY, BOOL, FLOAT, INT, STR, Type

__all__ = ["MAKERS"]

G = Expressions
Maker = Callable[[G, InScope, Type, int], "str | None"]

_SPECS: dict[str, tuple[str, ...]] = {
    "int": ("", ">5", "03d", "+d", "x", ","),
    "bool": ("",),
    "float": ("", ".2f", ">8.1f", "e", ".0%"),
    "str": ("", ">6", "^7", "<4", ".3"),
}


def _num(g: G, s: InScope, d: int) -> str:
    return g.expr(s, g.pick((INT, FLOAT)), d)


def _container(g: G, s: InScope, d: int) -> str:
    kinds: list[Type] = [("list", INT), STR, ("list", STR), ("map", INT)]
    kinds += [t for t in s.names.values() if t[0] in ("list", "map", "rec")]
    return g.expr(s, g.pick(kinds), d)


def _with_item(g: G, s: InScope, item: Type, name: str | None = None) -> tuple[InScope, str]:
    inner = s.child()
    var = name or g.fresh("e")
    inner.bind(var, item, owned=False)
    return inner, var


def _comprehension(g: G, s: InScope, want: Type, d: int) -> tuple[str, str]:
    """``(element expression, 'for ... in ... if ...')`` for a comprehension producing want."""
    shape = g.index(2 if "tuple unpacking" in g.exclude else 4)
    if shape == 1:  # over a range
        inner, var = _with_item(g, s, INT)
        head = f"for {var} in range(abs({g.expr(s, INT, d)}) % 5)"
    elif shape == 2:  # enumerate: tuple unpacking in a comprehension
        source, item = g.iterable(s, d)
        inner, var = _with_item(g, s, item)
        inner, index = _with_item(g, inner, INT)
        head = f"for {index}, {var} in enumerate({source})"
    elif shape == 3:  # zip of two lists
        source, item = g.iterable(s, d)
        other, other_item = g.iterable(s, d)
        inner, var = _with_item(g, s, item)
        inner, var2 = _with_item(g, inner, other_item)
        head = f"for {var}, {var2} in zip({source}, {other})"
    else:
        source, item = g.iterable(s, d)
        inner, var = _with_item(g, s, item)
        head = f"for {var} in {source}"
    if g.chance(3):
        head += f" if {g.expr(inner, BOOL, d)}"
    return g.expr(inner, want, d), head


# -- int -------------------------------------------------------------------------------------


def int_arith(g: G, s: InScope, k: Type, d: int) -> str:
    op = g.pick(("+", "-", "*", "&", "|", "^"))
    return f"({g.expr(s, INT, d)} {op} {g.expr(s, INT, d)})"


def int_safe_div(g: G, s: InScope, k: Type, d: int) -> str:
    op = g.pick(("//", "%"))
    return f"({g.expr(s, INT, d)} {op} (abs({g.expr(s, INT, d)}) + 1))"


def int_len(g: G, s: InScope, k: Type, d: int) -> str:
    return f"len({_container(g, s, d)})"


def int_builtin(g: G, s: InScope, k: Type, d: int) -> str:
    a, b = g.expr(s, INT, d), g.expr(s, INT, d)
    return g.pick(
        (f"abs({a})", f"max({a}, {b})", f"min({a}, {b})", f"(-{a})",
         f"divmod({a}, abs({b}) + 1)[0]", f"pow({a}, 2)", f"pow({a}, abs({b}) % 4, 7)",
         f"({a} ** 2)", f"({a} >> 2)",
         f"({a} << 3)", f"(~{a})", f"({a}).bit_length()", f"int(str({a}))", f"round({a} / 3)")
    )  # fmt: skip


def int_from_list(g: G, s: InScope, k: Type, d: int) -> str:
    xs = g.expr(s, ("list", INT), d)
    return g.pick((f"sum({xs})", f"max({xs}, default=0)", f"min({xs}, default=0)",
                   f"next(iter({xs}), 0)", f"len(set({xs}))", f"len(frozenset({xs}))",
                   f"{xs}.count({g.expr(s, INT, d)})",
                   "len({e % 3 for e in " + xs + "})"))  # fmt: skip


def int_from_str(g: G, s: InScope, k: Type, d: int) -> str:
    text = g.expr(s, STR, d)
    return g.pick((f"{text}.count('a')", f"{text}.find('b')", f"sum(map(ord, {text}))",
                   f"len({text}.split())", f"{text}.rfind(' ')"))  # fmt: skip


def int_count_if(g: G, s: InScope, k: Type, d: int) -> str:
    item, head = _comprehension(g, s, BOOL, d)
    return g.pick((f"sum(1 {head} if {item})", f"len([1 {head}])"))


def int_index(g: G, s: InScope, k: Type, d: int) -> str:
    xs, x = g.expr(s, ("list", INT), d), g.expr(s, INT, d)
    return f"({xs}.index({x}) if {x} in {xs} else -1)"


def if_else(g: G, s: InScope, k: Type, d: int) -> str:
    return f"({g.expr(s, k, d)} if {g.expr(s, BOOL, d)} else {g.expr(s, k, d)})"


# -- float -----------------------------------------------------------------------------------


def float_div(g: G, s: InScope, k: Type, d: int) -> str:
    return f"({_num(g, s, d)} / (abs({_num(g, s, d)}) + 1))"


def float_arith(g: G, s: InScope, k: Type, d: int) -> str:
    a, b = g.expr(s, FLOAT, d), _num(g, s, d)
    return g.pick((f"({a} + {b})", f"({a} - {b})", f"({a} * {b})", f"abs({a})", f"max({a}, {b})",
                   f"round({a}, 2)", f"float({g.expr(s, INT, d)})", f"(0.5 * {b})"))  # fmt: skip


def float_from_list(g: G, s: InScope, k: Type, d: int) -> str:
    return f"sum({g.expr(s, ('list', FLOAT), d)})"


# -- str -------------------------------------------------------------------------------------


def str_methods(g: G, s: InScope, k: Type, d: int) -> str:
    text = g.expr(s, STR, d)
    lit = g.literal(STR)
    sep = lit if len(lit) > 2 else "'a'"  # partition refuses an empty separator
    n = g.expr(s, INT, d)
    return g.pick(
        (f"{text}.{g.pick(('upper', 'lower', 'strip', 'title', 'capitalize', 'swapcase'))}()",
         f"{text}.replace({lit}, {g.literal(STR)})", f"{text}[::-1]", f"{text}[{n}:]",
         f"{text}[:{n}]", f"{text}[{n}:{g.expr(s, INT, d)}]", f"{text}.ljust(abs({n}) % 12)",
         f"{text}.zfill(4)", f"{text}.center(9, '*')", f"{text}.rjust(abs({n}) % 9, '.')",
         f"{text}.partition({sep})[0]", f"{text}.removeprefix({lit})", f"{text}.split(',')[0]",
         f"{text}.rpartition(' ')[2]", f"{text}.expandtabs(2)", f"{text}.casefold()")
    )  # fmt: skip


def str_concat(g: G, s: InScope, k: Type, d: int) -> str:
    a, b = g.expr(s, STR, d), g.expr(s, STR, d)
    return g.pick((f"({a} + {b})", f"({a} * (abs({g.expr(s, INT, d)}) % 3))", f"min({a}, {b})",
                   f"('%s-%d' % ({a}, {g.expr(s, INT, d)}))"))  # fmt: skip


def str_convert(g: G, s: InScope, k: Type, d: int) -> str:
    value = g.expr(s, g.some_type(s, 0), d)
    return g.pick((f"str({value})", f"repr({value})", f"chr(65 + abs({g.expr(s, INT, d)}) % 26)"))


def str_join(g: G, s: InScope, k: Type, d: int) -> str:
    sep = g.pick(("', '", "''", "'-'", "' | '"))
    if g.chance(2):
        item, head = _comprehension(g, s, g.some_type(s, 0), d)
        return f"{sep}.join(str({item}) {head})"
    return f"{sep}.join({g.expr(s, ('list', STR), d)})"


def fstring(g: G, s: InScope, k: Type, d: int) -> str | None:
    if "f-string" in g.exclude:
        return None
    readable = [(n, t) for n, t in s.names.items() if t[0] in _SPECS]
    readable += [(c, t) for c, t in g.paths(s) if t[0] in _SPECS and '"' not in c and "\\" not in c]
    parts = []
    for _ in range(1 + g.index(3)):
        text = g.draw(_fstring_text()).replace("{", "{{").replace("}", "}}")
        name, kind = g.pick(readable) if readable else (str(g.index(100)), INT)
        conversion = g.pick(("", "!r", "!s", "!a"))
        spec_kind = "str" if conversion else kind[0]
        spec = g.pick(_SPECS[spec_kind])
        if spec_kind == "str" and g.chance(5):
            widths = [n for n, t in s.names.items() if t == INT] or ["7"]
            spec = ">{abs(" + g.pick(widths) + ") % 9}"
        parts.append(f"{text}{{{name}{conversion}{':' + spec if spec else ''}}}")
    return 'f"' + "".join(parts) + '"'


def _fstring_text() -> st.SearchStrategy[str]:
    return st.text("abc -:{}é", max_size=4)


# -- bool ------------------------------------------------------------------------------------


def bool_compare(g: G, s: InScope, k: Type, d: int) -> str:
    kind = g.pick((INT, STR, FLOAT))
    a, b = g.expr(s, kind, d), g.expr(s, kind, d)
    op = g.pick(("==", "!=", "<", "<=", ">", ">="))
    if kind == INT and g.chance(3):
        return f"({a} < {b} <= {g.expr(s, INT, d)})"
    return f"({a} {op} {b})"


def bool_logic(g: G, s: InScope, k: Type, d: int) -> str:
    a, b = g.expr(s, BOOL, d), g.expr(s, BOOL, d)
    return g.pick((f"(not {a})", f"({a} and {b})", f"({a} or {b})"))


def bool_membership(g: G, s: InScope, k: Type, d: int) -> str:
    item = g.pick((INT, STR))
    xs, x = g.expr(s, ("list", item), d), g.expr(s, item, d)
    text = g.expr(s, STR, d)
    return g.pick((f"({x} in {xs})", f"({x} not in {xs})", f"({g.literal(STR)} in {text})",
                   f"{text}.startswith({g.literal(STR)})", f"{text}.isdigit()", f"bool({xs})",
                   f"set({xs}).issubset({xs})",
                   f"('a' in {g.expr(s, ('map', INT), d)})"))  # fmt: skip


def bool_quantifier(g: G, s: InScope, k: Type, d: int) -> str:
    item, head = _comprehension(g, s, BOOL, d)
    return f"{g.pick(('all', 'any'))}({item} {head})"


def bool_inspect(g: G, s: InScope, k: Type, d: int) -> str | None:
    value = g.expr(s, g.some_type(s, 0), d)
    anys = [c for c, t in [*s.names.items(), *g.paths(s)] if t == ANY]
    funcs = [n for n, t in s.names.items() if t[0] == "fn"]
    options = [f"isinstance({value}, int)", f"isinstance({value}, (str, list))",
               f"(({_num(g, s, d)}) * 1.0).is_integer()"]  # fmt: skip
    options += [f"({c} is None)" for c in anys] + [f"callable({f})" for f in funcs]
    return g.pick(options)


# -- list ------------------------------------------------------------------------------------


def list_comprehension(g: G, s: InScope, k: Type, d: int) -> str:
    item, head = _comprehension(g, s, k[1], d)
    return f"[{item} {head}]"


def list_display(g: G, s: InScope, k: Type, d: int) -> str:
    return "[" + ", ".join(g.expr(s, k[1], d) for _ in range(1 + g.index(3))) + "]"


def list_reorder(g: G, s: InScope, k: Type, d: int) -> str:
    xs = g.expr(s, k, d)
    options = [f"list(reversed({xs}))", f"{xs}[::2]", f"{xs}[1:]", f"{xs}.copy()",
               f"list(tuple({xs}))", f"({xs} + {g.expr(s, k, d)})",
               f"({xs} * (abs({g.expr(s, INT, d)}) % 3))", f"{xs}[{g.expr(s, INT, d)}:]",
               f"{xs}[slice(0, 2)]"]  # fmt: skip
    if k[1] in SORTABLE:
        options += [f"sorted({xs})", f"sorted({xs}, reverse=True)", f"sorted(set({xs}))"]
    sortable_fields = (
        [n for n, t, req in k[1][1] if req and t in SORTABLE] if k[1][0] == "rec" else []
    )
    if sortable_fields:
        var = g.fresh("e")
        options.append(f"sorted({xs}, key=lambda {var}: {var}[{g.pick(sortable_fields)!r}])")
    return g.pick(options)


def list_functional(g: G, s: InScope, k: Type, d: int) -> str:
    source, item = g.iterable(s, d)
    inner, var = _with_item(g, s, item)
    if item == k[1] and g.chance(2):
        return f"list(filter(lambda {var}: {g.expr(inner, BOOL, d)}, {source}))"
    return f"list(map(lambda {var}: {g.expr(inner, k[1], d)}, {source}))"


def list_special(g: G, s: InScope, k: Type, d: int) -> str | None:
    if k[1] == INT:
        return f"list(range(abs({g.expr(s, INT, d)}) % 8, 10))"
    if k[1] == STR:
        text = g.expr(s, STR, d)
        m = g.expr(s, ("map", INT), d)
        return g.pick((f"{text}.split()", f"{text}.splitlines()", f"list({text})",
                       f"list({m}.keys())", f"sorted({m})"))  # fmt: skip
    return None


# -- dict ------------------------------------------------------------------------------------


def map_comprehension(g: G, s: InScope, k: Type, d: int) -> str:
    value, head = _comprehension(g, s, k[1], d)
    # The key is built from the same comprehension scope: rewrite the head's first variable.
    var = head.split()[1].rstrip(",")
    return f"{{str({var}): {value} {head}}}"


def map_build(g: G, s: InScope, k: Type, d: int) -> str:
    m = g.expr(s, k, d)
    keys, values = g.expr(s, ("list", STR), d), g.expr(s, ("list", k[1]), d)
    options = [f"dict(zip({keys}, {values}))", f"{m}.copy()", f"dict({m})",
               f"{{**{m}, 'k': {g.expr(s, k[1], d)}}}"]  # fmt: skip
    if k[1] in SORTABLE:
        options.append(f"dict.fromkeys({keys}, {g.expr(s, k[1], d)})")
    return g.pick(options)


def rec_display(g: G, s: InScope, k: Type, d: int) -> str:
    fields = [(n, t) for n, t, req in k[1] if req or g.chance(2)]
    return "{" + ", ".join(f"{n!r}: {g.expr(s, t, d)}" for n, t in fields) + "}"


def rec_copy(g: G, s: InScope, k: Type, d: int) -> str:
    return g.pick((f"dict({g.expr(s, k, d)})", f"{g.expr(s, k, d)}.copy()"))


def any_value(g: G, s: InScope, k: Type, d: int) -> str:
    return default_literal(ANY)


MAKERS: dict[str, list[Maker]] = {
    "int": [
        int_arith,
        int_safe_div,
        int_len,
        int_builtin,
        int_from_list,
        int_from_str,
        int_count_if,
        int_index,
        if_else,
    ],  # fmt: skip
    "float": [float_div, float_arith, float_from_list, if_else],
    "str": [str_methods, str_concat, str_convert, str_join, fstring, if_else],
    "bool": [bool_compare, bool_logic, bool_membership, bool_quantifier, bool_inspect, if_else],
    "list": [
        list_comprehension,
        list_display,
        list_reorder,
        list_functional,
        list_special,
        if_else,
    ],  # fmt: skip
    "map": [map_comprehension, map_build, if_else],
    "rec": [rec_display, rec_copy, if_else],
    "any": [any_value],
}
