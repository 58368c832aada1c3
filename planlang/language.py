"""The plan language, written down as data.

Everything the checker allows is named here, so ``docs/LANGUAGE.md`` and the code cannot drift
apart silently (a test compares them). The rule is deny by default: a node type, builtin or
attribute that is not listed is refused, so new Python syntax stays out until it is reviewed.
"""

from __future__ import annotations

import ast

# --- statements and expressions -------------------------------------------------------------

ALLOWED_STATEMENTS: frozenset[type[ast.AST]] = frozenset(
    {
        ast.Module,
        ast.Expr,
        ast.Assign,
        ast.AugAssign,
        ast.If,
        ast.For,
        ast.While,
        ast.FunctionDef,
        ast.Return,
        ast.Pass,
        ast.Break,
        ast.Continue,
        ast.Delete,
        ast.Assert,
        ast.Raise,
    }
)

ALLOWED_EXPRESSIONS: frozenset[type[ast.AST]] = frozenset(
    {
        ast.BoolOp,
        ast.BinOp,
        ast.UnaryOp,
        ast.Lambda,
        ast.IfExp,
        ast.Dict,
        ast.Set,
        ast.ListComp,
        ast.SetComp,
        ast.DictComp,
        ast.GeneratorExp,
        ast.Compare,
        ast.Call,
        ast.FormattedValue,
        ast.JoinedStr,
        ast.Constant,
        ast.Attribute,
        ast.Subscript,
        ast.Starred,
        ast.Name,
        ast.List,
        ast.Tuple,
        ast.Slice,
        ast.NamedExpr,
    }
)

# Nodes that only ever appear inside allowed ones (operators, contexts, parts of a def).
ALLOWED_PARTS: frozenset[type[ast.AST]] = frozenset(
    {
        ast.Load,
        ast.Store,
        ast.Del,
        ast.And,
        ast.Or,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.Div,
        ast.FloorDiv,
        ast.Mod,
        ast.Pow,
        ast.LShift,
        ast.RShift,
        ast.BitOr,
        ast.BitXor,
        ast.BitAnd,
        ast.Invert,
        ast.Not,
        ast.UAdd,
        ast.USub,
        ast.Eq,
        ast.NotEq,
        ast.Lt,
        ast.LtE,
        ast.Gt,
        ast.GtE,
        ast.Is,
        ast.IsNot,
        ast.In,
        ast.NotIn,
        ast.comprehension,
        ast.arguments,
        ast.arg,
        ast.keyword,
    }
)

# Why each refused construct is refused: the checker quotes these to the plan's author.
REFUSED_CONSTRUCTS: dict[type[ast.AST], tuple[str, str]] = {
    ast.Import: ("PL101", "imports are not part of the plan language; use the host words"),
    ast.ImportFrom: ("PL101", "imports are not part of the plan language; use the host words"),
    ast.ClassDef: ("PL102", "classes are not part of the plan language; use dicts"),
    ast.Global: ("PL103", "'global' is not part of the plan language; return values instead"),
    ast.Nonlocal: ("PL103", "'nonlocal' is not part of the plan language; return values instead"),
    ast.With: ("PL104", "'with' is not part of the plan language"),
    ast.AsyncWith: ("PL105", "async code is not part of the plan language"),
    ast.AsyncFor: ("PL105", "async code is not part of the plan language"),
    ast.AsyncFunctionDef: ("PL105", "async code is not part of the plan language"),
    ast.Await: ("PL105", "async code is not part of the plan language"),
    ast.Yield: ("PL106", "generators ('yield') are not part of the plan language"),
    ast.YieldFrom: ("PL106", "generators ('yield from') are not part of the plan language"),
    ast.Try: ("PL107", "'try' is not part of the plan language: it could swallow a limit"),
    ast.TryStar: ("PL107", "'try' is not part of the plan language: it could swallow a limit"),
    ast.Match: ("PL108", "'match' is not part of the plan language; use if/elif"),
    ast.AnnAssign: ("PL109", "annotated assignments are not part of the plan language"),
}

# --- names ----------------------------------------------------------------------------------

# Builtins a plan may use. Those marked in GUARDED_BUILTINS are replaced by limit-aware versions.
ALLOWED_BUILTINS: frozenset[str] = frozenset(
    {
        "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "filter", "float",
        "frozenset", "int", "isinstance", "len", "list", "map", "max", "min", "ord", "pow",
        "print", "range", "repr", "reversed", "round", "set", "sorted", "str", "sum", "tuple",
        "zip", "hash", "callable", "iter", "next", "slice",
        # Exceptions a plan may raise (never catch: there is no 'try').
        "Exception", "ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError",
        "AssertionError", "ZeroDivisionError", "LookupError", "ArithmeticError",
    }
)  # fmt: skip

EXCEPTION_NAMES: frozenset[str] = frozenset(
    {
        "Exception", "ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError",
        "AssertionError", "ZeroDivisionError", "LookupError", "ArithmeticError",
    }
)  # fmt: skip

# Names refused wherever they appear, with the reason. Any other name starting with "_" is
# refused too.
FORBIDDEN_NAMES: dict[str, str] = {
    name: f"'{name}' is not part of the plan language: it reaches past the sandbox"
    for name in (
        "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "hasattr", "vars",
        "dir", "globals", "locals", "type", "object", "super", "classmethod", "staticmethod",
        "property", "memoryview", "bytearray", "bytes", "breakpoint", "input", "help", "exit",
        "quit", "id", "format", "issubclass", "aiter", "anext", "copyright", "credits", "license",
        "BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseExceptionGroup",
        "ExceptionGroup", "StopIteration", "StopAsyncIteration", "reload", "printed",
    )
}  # fmt: skip

# Attribute names that are dangerous on some Python object, refused at check time already so the
# author hears of it before anything runs. The sandbox's run-time guard is a positive whitelist
# per type (below), so names missing here are still refused when they are not allowed.
FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "format", "format_map", "mro", "gi_frame", "gi_code", "gi_yieldfrom", "gi_running",
        "gi_suspended", "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running", "ag_frame",
        "ag_code", "ag_await", "ag_running", "tb_frame", "tb_next", "tb_lasti", "tb_lineno",
        "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_lasti",
        "co_code", "co_consts", "co_names", "func_globals", "func_code", "im_func", "im_self",
        "with_traceback", "throw", "send", "encode", "decode", "translate", "maketrans",
    }
)  # fmt: skip

# --- attributes per type --------------------------------------------------------------------

STR_METHODS: frozenset[str] = frozenset(
    {
        "capitalize", "casefold", "center", "count", "endswith", "expandtabs", "find", "index",
        "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower",
        "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower",
        "lstrip", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex",
        "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip",
        "swapcase", "title", "upper", "zfill",
    }
)  # fmt: skip

LIST_METHODS: frozenset[str] = frozenset(
    {"append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove",
     "reverse", "sort"}
)  # fmt: skip

TUPLE_METHODS: frozenset[str] = frozenset({"count", "index"})

DICT_METHODS: frozenset[str] = frozenset(
    {"clear", "copy", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values"}
)

SET_METHODS: frozenset[str] = frozenset(
    {
        "add", "clear", "copy", "difference", "difference_update", "discard", "intersection",
        "intersection_update", "isdisjoint", "issubset", "issuperset", "pop", "remove",
        "symmetric_difference", "symmetric_difference_update", "union", "update",
    }
)  # fmt: skip

FROZENSET_METHODS: frozenset[str] = frozenset(
    {"copy", "difference", "intersection", "isdisjoint", "issubset", "issuperset",
     "symmetric_difference", "union"}
)  # fmt: skip

INT_ATTRIBUTES: frozenset[str] = frozenset(
    {"bit_length", "bit_count", "conjugate", "real", "imag", "numerator", "denominator",
     "as_integer_ratio", "is_integer"}
)  # fmt: skip

FLOAT_ATTRIBUTES: frozenset[str] = frozenset(
    {"conjugate", "real", "imag", "as_integer_ratio", "is_integer"}
)

# Methods of a read-only value the host handed in: reading only.
READONLY_DICT_METHODS: frozenset[str] = frozenset({"copy", "get", "items", "keys", "values"})
READONLY_LIST_METHODS: frozenset[str] = frozenset({"copy", "count", "index"})

# On the type objects themselves (``dict``, ``str`` ...): only constructors, never unbound
# methods, which would let ``list.append(host_list, x)`` get around the read-only wrappers.
TYPE_ATTRIBUTES: dict[str, frozenset[str]] = {"dict": frozenset({"fromkeys"})}

EXCEPTION_ATTRIBUTES: frozenset[str] = frozenset({"args"})

# Methods of a set or frozenset that walk every argument in C: sized by the total first.
SET_WALKING_METHODS: tuple[str, ...] = (
    "update", "union", "intersection", "intersection_update", "difference", "difference_update",
    "symmetric_difference", "symmetric_difference_update", "issubset", "issuperset", "isdisjoint",
)  # fmt: skip


def _attribute_whitelist() -> dict[str, dict[str, str | None]]:
    """kind -> attribute -> None (plain access) or the name of its size-guarded wrapper.

    The one table of what a plan may read on a value, by the value's kind; the checker reads it
    to know which methods need no guard, the sandbox's guards to know which wrapper to hand out.
    """
    table: dict[str, dict[str, str | None]] = {
        "str": dict.fromkeys(STR_METHODS),
        "list": dict.fromkeys(LIST_METHODS),
        "tuple": dict.fromkeys(TUPLE_METHODS),
        "dict": dict.fromkeys(DICT_METHODS),
        "set": dict.fromkeys(SET_METHODS),
        "frozenset": dict.fromkeys(FROZENSET_METHODS),
        "int": dict.fromkeys(INT_ATTRIBUTES - {"is_integer"}),
        "bool": dict.fromkeys(INT_ATTRIBUTES - {"is_integer"}),
        "float": dict.fromkeys(FLOAT_ATTRIBUTES),
        "readonly_dict": dict.fromkeys(READONLY_DICT_METHODS),
        "readonly_list": dict.fromkeys(READONLY_LIST_METHODS),
    }
    for name in ("join", "replace", "ljust", "rjust", "center", "zfill", "expandtabs"):
        table["str"][name] = name
    for name in ("upper", "lower", "casefold", "title", "swapcase", "capitalize"):
        table["str"][name] = name  # up to three characters of one
    table["list"]["extend"] = "extend"
    for kind in ("set", "frozenset"):
        for name in SET_WALKING_METHODS:
            if name in table[kind]:
                table[kind][name] = "set_" + name
    table["dict"]["update"] = "dict_update"
    table["list"]["sort"] = "sort"  # key= may be a C callable
    return table


ATTRIBUTES: dict[str, dict[str, str | None]] = _attribute_whitelist()
