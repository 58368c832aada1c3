"""Statements and whole plans: the grammar of the plan language, written as choices.

A plan is drawn one top-level statement at a time, each knowing the scope it runs in: names
bound inside an ``if`` or a loop body are forgotten after it (they may not exist), a loop never
changes what it walks, a ``while`` always counts up to a bound, and a function only rebinds its
own locals. That keeps every generated plan well-scoped, so the checker must accept it and the
sandbox can run it to a result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from hypothesis import strategies as st

from planlang.strategies.expressions import SORTABLE, Expressions, InScope, is_data
from planlang.strategies.fake import schema_value
from planlang.strategies.hostcalls import HostCalls
from planlang.strategies.makers import MAKERS
from planlang.strategies.spec import BOOL, FLOAT, INT, NONE, STR, HostWordSpec, Type

__all__ = ["PlanWriter"]

Lines = list[str]


def indent(lines: Lines) -> Lines:
    return ["    " + line for line in lines]


class PlanWriter(Expressions, HostCalls):
    """Writes one plan from hypothesis draws. ``plan()`` returns its top-level statements."""

    def __init__(
        self,
        draw: Callable[[st.SearchStrategy[Any]], Any],
        words: Mapping[str, HostWordSpec],
        values: Mapping[str, Type],
        *,
        max_statements: int,
        max_nesting: int,
        max_expression_depth: int,
        exclude: frozenset[str] = frozenset(),
    ):
        Expressions.__init__(self, draw, max_expression_depth, exclude, MAKERS)
        self.words = dict(words)
        self.values = dict(values)
        self.budget = max_statements
        self.max_nesting = max_nesting
        self.schema_constants = {}

    # -- the plan ------------------------------------------------------------------------

    def plan(self) -> list[Lines]:
        """Top-level statements (each a list of lines), the last one binding ``result``."""
        scope = InScope()
        for name, kind in self.values.items():
            scope.bind(name, kind, owned=False)
        chunks: list[Lines] = []
        while self.budget > 0 and (not chunks or self.more(8)):
            chunks.append(self.statement(scope, self.max_nesting))
        chunks.append(self.result(scope))
        return self.constant_lines() + chunks

    def result(self, scope: InScope) -> Lines:
        data = [n for n, t in scope.names.items() if is_data(t) and n not in self.values]
        if data and not self.chance(4):
            fields = ", ".join(f"{n!r}: {n}" for n in data[-12:])
            return [f"result = {{{fields}}}"]
        return [f"result = {self.expr(scope, self.some_type(scope))}"]

    # -- statements ----------------------------------------------------------------------

    def statement(self, scope: InScope, nesting: int) -> Lines:
        self.budget -= 1
        simple: list[Callable[[InScope], Lines | None]] = [
            self.assign, self.host_statement, self.host_statement, self.reassign,
            self.augmented, self.mutate, self.unpack, self.lambda_assign, self.misc,
        ]  # fmt: skip
        compound: list[Callable[[InScope, int], Lines | None]] = [
            self.if_statement,
            self.for_statement,
            self.while_statement,
            self.walrus_if,
        ]
        if scope.returns is None:
            compound.append(self.define)
        if scope.in_loop:
            simple.append(self.break_or_continue)
        if scope.returns is not None:
            simple.append(self.early_return)
        options: list[Callable[[], Lines | None]] = [partial(f, scope) for f in simple]
        if nesting > 0 and self.budget > 0:
            options += [partial(f, scope, nesting - 1) for f in compound]
        while True:
            choice = self.index(len(options))
            lines = options[choice]()
            if lines is not None:
                return lines
            options[choice] = options[0]

    def block(self, scope: InScope, nesting: int) -> Lines:
        """An indented block of at least one statement, in its own copy of the scope."""
        lines = self.statement(scope, nesting)
        while self.budget > 0 and self.chance(3):
            lines += self.statement(scope, nesting)
        return indent(lines)

    def assign(self, scope: InScope) -> Lines:
        kind = self.some_type(scope)
        name = self.fresh(kind)
        code = self.owned_expr(scope, kind)
        scope.bind(name, kind)
        return [f"{name} = {code}"]

    def owned_expr(self, scope: InScope, kind: Type) -> str:
        """An expression whose container the plan owns: a display, or a shallow copy."""
        code = self.expr(scope, kind)
        if kind[0] == "list" and not code.startswith(("[", "list(", "sorted(")):
            return f"list({code})"
        if kind[0] in ("map", "rec") and not code.startswith(("{", "dict(")):
            return f"dict({code})"
        return code

    def reassign(self, scope: InScope) -> Lines | None:
        names = [n for n, t in scope.names.items() if scope.changeable(n) and is_data(t)]
        if not names:
            return None
        name = self.pick(names)
        return [f"{name} = {self.owned_expr(scope, scope.names[name])}"]

    def augmented(self, scope: InScope) -> Lines | None:
        names = [n for n, t in scope.names.items() if scope.changeable(n) and t[0] != "fn"]
        names = [n for n in names if scope.names[n][0] in ("int", "float", "str", "bool", "list")]
        if not names:
            return None
        name = self.pick(names)
        kind = scope.names[name]
        value = self.expr(scope, kind if kind != FLOAT else INT)
        if kind == INT:
            small = self.expr(scope, INT, 1)
            return [self.pick((f"{name} += {value}", f"{name} -= {value}",
                               f"{name} //= abs({value}) + 1", f"{name} %= abs({value}) + 1",
                               f"{name} *= {small} % 5", f"{name} |= {value}",
                               f"{name} ^= {value}", f"{name} >>= 1",
                               f"{name} <<= 2"))]  # fmt: skip
        if kind == FLOAT:
            return [self.pick((f"{name} += {value}", f"{name} *= 0.5",
                               f"{name} /= abs({value}) + 1", f"{name} -= {value}"))]  # fmt: skip
        if kind == BOOL:
            return [f"{name} {self.pick(('&=', '|=', '^='))} {value}"]
        return [f"{name} += {value}"]

    def mutate(self, scope: InScope) -> Lines | None:
        names = [n for n, t in scope.names.items() if scope.changeable(n)]
        names = [n for n in names if scope.names[n][0] in ("list", "map", "rec")]
        if not names:
            return None
        name = self.pick(names)
        kind = scope.names[name]
        if kind[0] == "list":
            item = self.expr(scope, kind[1])
            options = [f"{name}.append({item})", f"{name}.extend({self.expr(scope, kind)})",
                       f"{name}.insert(0, {item})", f"if {name}:\n    {name}.pop()",
                       f"if {item} in {name}:\n    {name}.remove({item})", f"{name}.reverse()",
                       f"{name}.clear()", f"if {name}:\n    {name}[-1] = {item}",
                       f"if {name}:\n    del {name}[0]", f"{name}[1:2] = [{item}]",
                       f"{name} += [{item}]"]  # fmt: skip
            if kind[1] in SORTABLE:
                options.append(f"{name}.sort()")
            if kind[1] == INT:
                options.append(f"if {name}:\n    {name}[0] += {self.expr(scope, INT, 1)}")
        elif kind[0] == "map":
            key, value = self.expr(scope, STR, 1), self.expr(scope, kind[1])
            options = [f"{name}[{key}] = {value}", f"{name}.update({{{key}: {value}}})",
                       f"{name}.setdefault({key}, {value})", f"{name}.pop({key}, None)",
                       f"if {key} in {name}:\n    del {name}[{key}]",
                       f"if {name}:\n    {name}.popitem()", f"{name}.clear()",
                       f"{name} |= {{{key}: {value}}}"]  # fmt: skip
            if kind[1] == INT:
                options.append(f"{name}[{key}] = {name}.get({key}, 0) + 1")
        else:
            field, field_kind = self.pick([(n, t) for n, t, _ in kind[1]])
            options = [f"{name}[{field!r}] = {self.expr(scope, field_kind)}"]
            optional = [n for n, _, req in kind[1] if not req]
            options += [f"{name}.pop({n!r}, None)" for n in optional]
        return self.pick(options).split("\n")

    def unpack(self, scope: InScope) -> Lines | None:
        if "tuple unpacking" in self.exclude:
            return None
        shape = self.index(4)
        if shape == 1:
            q, r = self.fresh(INT), self.fresh(INT)
            code = f"{q}, {r} = divmod({self.expr(scope, INT)}, abs({self.expr(scope, INT)}) + 1)"
            scope.bind(q, INT)
            scope.bind(r, INT)
            return [code]
        if shape == 2:
            item = self.some_type(scope, 0)
            head, rest = self.fresh(item), self.fresh(("list", item))
            code = (
                f"{head}, *{rest} = [{self.expr(scope, item)}] + {self.expr(scope, ('list', item))}"
            )
            scope.bind(head, item, owned=item[0] not in ("list", "map", "rec"))
            scope.bind(rest, ("list", item))
            return [code]
        if shape == 3:
            for kind in dict.fromkeys(scope.names.values()):
                pair = [n for n, t in scope.names.items() if t == kind and scope.changeable(n)]
                if len(pair) >= 2 and is_data(kind):
                    return [f"{pair[0]}, {pair[1]} = {pair[1]}, {pair[0]}"]
        kinds = [self.some_type(scope, 0) for _ in range(2)]
        names = [self.fresh(k) for k in kinds]
        values = [self.owned_expr(scope, k) for k in kinds]
        for name, kind in zip(names, kinds, strict=True):
            scope.bind(name, kind)
        return [f"{', '.join(names)} = {', '.join(values)}"]

    def lambda_assign(self, scope: InScope) -> Lines:
        params = [self.pick((INT, STR, FLOAT)) for _ in range(self.index(3))]
        returns = self.pick((INT, STR, BOOL, FLOAT))
        inner = scope.child()
        names = [self.fresh("a") for _ in params]
        for name, kind in zip(names, params, strict=True):
            inner.bind(name, kind, owned=False)
        name = self.fresh(("fn",))
        code = f"{name} = lambda {', '.join(names)}: {self.expr(inner, returns)}"
        scope.bind(name, ("fn", tuple(params), returns), owned=False)
        return [code.replace("lambda :", "lambda:")]

    def misc(self, scope: InScope) -> Lines:
        value = self.expr(scope, self.some_type(scope, 0), 1)
        return self.pick(
            ([f"print({value})"], ["pass"], [f"assert {value} == {value}"], [f"{value}"],
             [f"if len({self.expr(scope, ('list', INT), 1)}) < 0:",
              f"    raise {self.pick(('ValueError', 'RuntimeError', 'KeyError'))}('impossible')"])
        )  # fmt: skip

    def break_or_continue(self, scope: InScope) -> Lines:
        return [f"if {self.expr(scope, BOOL, 1)}:", f"    {self.pick(('break', 'continue'))}"]

    def early_return(self, scope: InScope) -> Lines:
        assert scope.returns is not None
        return [f"if {self.expr(scope, BOOL, 1)}:", f"    return {self.expr(scope, scope.returns)}"]

    # -- compound statements ---------------------------------------------------------------

    def if_statement(self, scope: InScope, nesting: int) -> Lines:
        lines = [f"if {self.expr(scope, BOOL)}:", *self.block(scope.child(), nesting)]
        for _ in range(self.index(2)):
            lines += [f"elif {self.expr(scope, BOOL)}:", *self.block(scope.child(), nesting)]
        if self.chance(2):
            lines += ["else:", *self.block(scope.child(), nesting)]
        return lines

    def walrus_if(self, scope: InScope, nesting: int) -> Lines | None:
        if "walrus" in self.exclude:
            return None
        name = self.fresh(INT)
        head = f"if ({name} := {self.expr(scope, INT)}) > {self.literal(INT)}:"
        inner = scope.child()
        inner.bind(name, INT)
        lines = [head, *self.block(inner, nesting)]
        scope.bind(name, INT)
        return lines

    def for_statement(self, scope: InScope, nesting: int) -> Lines:
        inner = scope.child(in_loop=True)
        shape = self.index(2 if "tuple unpacking" in self.exclude else 4)
        if shape == 1:
            var = self.fresh("i")
            head = f"for {var} in range({self.index(5)}):"
            inner.bind(var, INT, owned=False)
        elif shape == 3 and any(t[0] == "map" for t in scope.names.values()):
            name, kind = self.pick([(n, t) for n, t in scope.names.items() if t[0] == "map"])
            key, value = self.fresh(STR), self.fresh(kind[1])
            head = f"for {key}, {value} in {name}.items():"
            inner.bind(key, STR, owned=False)
            inner.bind(value, kind[1], owned=False)
        else:
            source, item = self.iterable(scope, 1)
            var = self.fresh(item)
            if shape == 2:
                index = self.fresh("i")
                head = f"for {index}, {var} in enumerate({source}):"
                inner.bind(index, INT, owned=False)
            else:
                head = f"for {var} in {source}:"
            inner.bind(var, item, owned=False)
        inner.locked = inner.lock_names_in(head) | set(inner.names) - set(scope.names)
        lines = [head, *self.block(inner, nesting)]
        if self.chance(4):
            lines += ["else:", *self.block(scope.child(), nesting)]
        return lines

    def while_statement(self, scope: InScope, nesting: int) -> Lines | None:
        if "while" in self.exclude:
            return None
        counter = self.fresh("k")
        scope.bind(counter, INT, owned=False)
        inner = scope.child(in_loop=True)
        inner.locked = inner.locked | {counter}
        condition = f"{counter} < {1 + self.index(6)}"
        if self.chance(3):
            condition += f" and {self.expr(scope, BOOL, 1)}"
        # The counter goes up first, so a 'continue' in the body cannot skip it.
        body = self.block(inner, nesting)
        return [f"{counter} = 0", f"while {condition}:", f"    {counter} += 1", *body]

    def define(self, scope: InScope, nesting: int) -> Lines | None:
        if "def" in self.exclude:
            return None
        if self.chance(5):
            return self.recursive_define(scope)
        params = [self.pick((INT, STR, ("list", INT), FLOAT)) for _ in range(self.index(4))]
        returns = self.some_type(scope, 0)
        name = self.fresh(("fn",))
        names = [self.fresh(k) for k in params]
        inner = scope.child(in_loop=False, returns=returns, locked=frozenset())
        inner.owned = set()
        for param, kind in zip(names, params, strict=True):
            inner.bind(param, kind, owned=kind[0] not in ("list", "map", "rec"))
        signature = ", ".join(names)
        if names and self.chance(3):
            signature += f"={self.literal(params[-1])}"
        body = self.block(inner, nesting) if self.chance(2) else []
        body += [f"    return {self.expr(inner, returns)}"]
        scope.bind(name, ("fn", tuple(params), returns), owned=False)
        return [f"def {name}({signature}):", *body]

    def recursive_define(self, scope: InScope) -> Lines:
        """A function that calls itself, bounded: the depth is clamped to five."""
        name, k = self.fresh(("fn",)), self.fresh(INT)
        inner = scope.child(returns=INT)
        inner.bind(k, INT, owned=False)
        step = self.expr(inner, INT, 1)
        scope.bind(name, ("fn", (INT,), INT), owned=False)
        return [f"def {name}({k}):", f"    if {k} <= 0:", f"        return {self.literal(INT)}",
                f"    return {name}(min({k}, 5) - 1) + {step}"]  # fmt: skip

    # -- host words ------------------------------------------------------------------------

    def host_statement(self, scope: InScope) -> Lines | None:
        if not self.words:
            return None
        word = self.pick(sorted(self.words))
        code, kind = self.host_call(scope, self.words[word], 1)
        if kind == NONE:
            return [code]
        name = self.fresh(kind)
        scope.bind(name, kind)
        lines = [f"{name} = {code}"]
        uses = self.paths(InScope({name: kind}))
        if uses and not self.chance(3):
            use, use_kind = self.pick(uses)
            alias = self.fresh(use_kind)
            scope.bind(alias, use_kind, owned=False)
            lines.append(f"{alias} = {use}")
        return lines

    def constrained_literal(self, schema: Mapping[str, Any]) -> str:
        import random

        return repr(schema_value(schema, random.Random(self.draw(st.integers(0, 2**16)))))
