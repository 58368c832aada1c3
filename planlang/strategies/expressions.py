"""Typed expressions for generated plans, drawn choice by choice so hypothesis can shrink them.

Every expression is written for a wanted type in a scope of typed names, so a generated plan
only reads names that exist and only applies operations its operands support. Operations that
could fail at run time are written defensively (``a // (abs(b) + 1)``, ``(xs[0] if xs else 0)``)
so the plans the fuzzer runs end in a result, not in a ``ZeroDivisionError``. Options are
listed simplest first: hypothesis shrinks a choice toward index 0, so a failing plan shrinks
toward literals and plain names.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from hypothesis import strategies as st

from planlang.strategies.spec import BOOL, FLOAT, INT, STR, Type

__all__ = ["EXCLUDABLE_FEATURES", "Expressions", "InScope", "default_literal", "is_data"]

# Features an embedder can switch off, e.g. because their own policy narrows the language.
EXCLUDABLE_FEATURES: tuple[str, ...] = ("tuple unpacking", "while", "def", "walrus", "f-string")

SORTABLE = (INT, FLOAT, STR, BOOL)
_LITERAL_TEXT = string.ascii_letters[:6] + " _-'\"{}\\é\n"
_FSTRING_TEXT = string.ascii_letters[:6] + " _-:{}é"
_PREFIX = {"int": "n", "float": "x", "str": "s", "bool": "ok", "list": "xs", "map": "m",
           "rec": "r", "fn": "f", "any": "v", "none": "nothing"}  # fmt: skip
_NO_ARG_STR_METHODS = ("upper", "lower", "strip", "title", "capitalize", "casefold", "swapcase",
                       "lstrip", "rstrip")  # fmt: skip


@dataclass
class InScope:
    """The names a statement may read, and which of them it may rebind or change in place."""

    names: dict[str, Type] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)  # the plan's own values: may be changed
    locked: frozenset[str] = frozenset()  # loop variables and what loops walk: never changed
    in_loop: bool = False
    returns: Type | None = None  # the return type, inside a def

    def child(self, **changes: Any) -> InScope:
        return replace(self, names=dict(self.names), owned=set(self.owned), **changes)

    def bind(self, name: str, kind: Type, owned: bool = True) -> None:
        self.names[name] = kind
        if owned:
            self.owned.add(name)

    def changeable(self, name: str) -> bool:
        return name in self.owned and name not in self.locked

    def lock_names_in(self, code: str) -> frozenset[str]:
        """Lock every name the code mentions (a loop must not change what it walks)."""
        words = set(re.findall(r"[A-Za-z]\w*", code))
        return self.locked | (words & self.names.keys())


def is_data(kind: Type) -> bool:
    return kind[0] not in ("fn",)


def default_literal(kind: Type) -> str:
    """The simplest literal of a type; records get their required fields."""
    simple = {"int": "0", "float": "0.0", "str": '""', "bool": "False", "none": "None",
              "any": "None", "list": "[]", "map": "{}"}  # fmt: skip
    if kind[0] in simple:
        return simple[kind[0]]
    if kind[0] == "rec":
        fields = ", ".join(f"{name!r}: {default_literal(t)}" for name, t, req in kind[1] if req)
        return "{" + fields + "}"
    raise ValueError(f"No literal for the type {kind!r}.")


class Expressions:
    """Draws typed expression source. ``draw`` is hypothesis's draw of one composite run."""

    def __init__(
        self,
        draw: Callable[[st.SearchStrategy[Any]], Any],
        max_depth: int,
        exclude: frozenset[str] = frozenset(),
        makers: Mapping[str, Sequence[Callable[..., str | None]]] | None = None,
    ):
        self.draw = draw
        # kind -> the makers of an expression of that kind (planlang.strategies.makers builds
        # on this class, so the table is handed in instead of imported: no import cycle)
        self.makers = makers or {}
        self.max_depth = max_depth
        self.exclude = exclude  # language features (EXCLUDABLE_FEATURES) not to generate
        self._counter = 0

    # -- choices -------------------------------------------------------------------------

    def index(self, n: int) -> int:
        return 0 if n <= 1 else int(self.draw(st.integers(0, n - 1)))

    def pick(self, options: list[Any] | tuple[Any, ...]) -> Any:
        return options[self.index(len(options))]

    def chance(self, one_in: int) -> bool:
        """True about once in ``one_in`` draws; shrinks toward False."""
        return bool(self.draw(st.integers(0, one_in - 1)) == one_in - 1)

    def more(self, one_in: int) -> bool:
        """Go on with probability (one_in - 1) / one_in; shrinks toward stopping."""
        return bool(self.draw(st.integers(0, one_in - 1)) != 0)

    def fresh(self, kind: Type | str) -> str:
        self._counter += 1
        prefix = kind if isinstance(kind, str) else _PREFIX[kind[0]]
        return f"{prefix}{self._counter}"

    # -- types ---------------------------------------------------------------------------

    def some_type(self, scope: InScope, depth: int = 1) -> Type:
        """A data type for a new name: a basic one, or one already in use (host results)."""
        basic: list[Type] = [INT, STR, ("list", INT), FLOAT, BOOL, ("list", STR), ("map", INT)]
        if depth > 0:
            basic.append(("rec", self._record_fields()))
        seen = [t for t in dict.fromkeys(scope.names.values()) if t[0] not in ("fn", "none")]
        return self.pick(basic + seen) if not self.chance(3) or not seen else self.pick(seen)

    def _record_fields(self) -> tuple[tuple[str, Type, bool], ...]:
        names = ("name", "count", "ok", "score")
        kinds = (STR, INT, BOOL, FLOAT)
        n = 1 + self.index(3)
        return tuple((names[i], kinds[i], True) for i in range(n))

    # -- the entry point -----------------------------------------------------------------

    def expr(self, scope: InScope, kind: Type, depth: int | None = None) -> str:
        """Source of an expression of type ``kind`` that reads only names in ``scope``."""
        depth = self.max_depth if depth is None else depth
        options: list[Callable[[], str | None]] = [lambda: self.literal(kind, scope)]
        names = [n for n, t in scope.names.items() if t == kind]
        if names:
            options.append(lambda: self.pick(names))
        paths = [code for code, t in self.paths(scope) if t == kind]
        if paths:
            options.append(lambda: self.pick(paths))
        if depth > 0:
            makers = self._makers(kind)
            options.extend(partial(m, self, scope, kind, depth - 1) for m in makers)
            calls = [n for n, t in scope.names.items() if t[0] == "fn" and t[2] == kind]
            if calls:
                options.append(lambda: self.call(scope, self.pick(calls), depth - 1))
        while True:
            choice = self.index(len(options))
            code = options[choice]()
            if code is not None:
                return code
            options[choice] = options[0]  # not applicable here: fall back to a literal

    def call(self, scope: InScope, name: str, depth: int) -> str:
        params = scope.names[name][1]
        return f"{name}({', '.join(self.expr(scope, t, depth) for t in params)})"

    # -- literals ------------------------------------------------------------------------

    def literal(self, kind: Type, scope: InScope | None = None) -> str:
        tag = kind[0]
        if tag == "int":
            value = int(self.draw(st.integers(-3, 60)))
            return f"({value})" if value < 0 else str(value)
        if tag == "float":
            number = float(self.draw(st.sampled_from((0.5, 1.25, 2.0, -0.75, 10.5, 1e-3))))
            return f"({number!r})" if number < 0 else repr(number)
        if tag == "str":
            return repr(self.draw(st.text(_LITERAL_TEXT, max_size=6)))
        if tag == "bool":
            return self.pick(("True", "False"))
        if tag in ("none", "any"):
            return "None"
        scope = scope or InScope()
        if tag == "list":
            items = [self.literal(kind[1], scope) for _ in range(self.index(4))]
            return "[" + ", ".join(items) + "]"
        if tag == "map":
            keys = dict.fromkeys(self.draw(st.text("abcde", min_size=1, max_size=3))
                                 for _ in range(self.index(3)))  # fmt: skip
            return "{" + ", ".join(f"{k!r}: {self.literal(kind[1], scope)}" for k in keys) + "}"
        if tag == "rec":
            fields = [(n, t) for n, t, req in kind[1] if req or self.chance(2)]
            return "{" + ", ".join(f"{n!r}: {self.literal(t, scope)}" for n, t in fields) + "}"
        raise ValueError(f"No literal for the type {kind!r}.")

    # -- reading into values: fields, elements, map entries --------------------------------

    def paths(self, scope: InScope) -> list[tuple[str, Type]]:
        """Expressions that read into the scope's data, each with its type (two levels)."""
        found: list[tuple[str, Type]] = []
        frontier = [(n, t) for n, t in scope.names.items() if t[0] in ("rec", "list", "map")]
        for _ in range(2):
            nxt: list[tuple[str, Type]] = []
            for code, kind in frontier:
                for step in self._steps_into(code, kind):
                    nxt.append(step)
            found.extend(nxt)
            frontier = [(c, t) for c, t in nxt if t[0] in ("rec", "list", "map")]
        return found

    def _steps_into(self, code: str, kind: Type) -> list[tuple[str, Type]]:
        if kind[0] == "rec":
            steps = []
            for name, t, required in kind[1]:
                if required:
                    steps.append((f"{code}[{name!r}]", t))
                elif t[0] != "rec" or any(req for _, _, req in t[1]):
                    steps.append((f"{code}.get({name!r}, {default_literal(t)})", t))
            return steps
        if kind[0] == "list":
            item = kind[1]
            steps = [(f"next(iter({code}), {default_literal(item)})", item)]
            if item[0] == "rec":
                for name, t, required in item[1]:
                    if required:
                        steps.append((f"[e[{name!r}] for e in {code}]", ("list", t)))
            return steps
        if kind[0] == "map":
            return [(f"{code}.get('a', {default_literal(kind[1])})", kind[1]),
                    (f"list({code}.values())", ("list", kind[1]))]  # fmt: skip
        return []

    # -- makers, per wanted type ---------------------------------------------------------

    def _makers(self, kind: Type) -> list[Callable[..., str | None]]:
        return list(self.makers.get(kind[0], ()))

    def iterable(self, scope: InScope, depth: int) -> tuple[str, Type]:
        """A list to walk, with its element type; prefers lists the plan already has."""
        lists = [(n, t[1]) for n, t in scope.names.items() if t[0] == "list"]
        lists += [(c, t[1]) for c, t in self.paths(scope) if t[0] == "list"]
        if lists and not self.chance(4):
            return self.pick(lists)
        item = self.pick([INT, STR, FLOAT])
        return self.expr(scope, ("list", item), depth), item
