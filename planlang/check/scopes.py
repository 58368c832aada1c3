"""Where a plan binds and reads each name, scope by scope: the facts ``check.infer`` solves.

One walk over the tree collects, per scope (the module, each function, lambda and
comprehension), every binding of a name and every read of it, plus what the kinds need beyond
that: where each module name first appears, which reads are the source of a loop, and which reads
of a loop variable sit in that loop's own body with nothing there rebinding it. It runs on every
check, so it walks the tree once, by hand, without ``ast.walk``'s queue.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import cast

__all__ = ["Binding", "Collector", "Loop", "Scope"]

# Parts with nothing inside to collect: contexts and operators.
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPE_TYPES = frozenset(_SCOPES)
_BINDERS = frozenset({ast.NamedExpr, ast.Assign, ast.AugAssign, ast.Delete, ast.For})

Binding = tuple[str, ast.AST | None, ast.AST | None]  # (how, value, op)


class Loop:
    """A ``for`` with a plain loop variable, while its body is collected."""

    __slots__ = ("variable", "scope", "reads", "rebound")

    def __init__(self, variable: str, scope: Scope):
        self.variable = variable
        self.scope = scope
        self.reads: list[ast.Name] = []
        self.rebound = False


class Scope:
    def __init__(self, node: ast.AST, parent: Scope | None = None):
        self.node = node
        self.parent = parent  # the scope this one is written in (None: the module)
        self.bindings: dict[str, list[Binding]] = {}
        self.loads: list[ast.Name] = []

    def bind(self, name: str, how: str, value: ast.AST | None = None, op: ast.AST | None = None):
        self.bindings.setdefault(name, []).append((how, value, op))


class Collector:
    """The bindings and reads of every scope of ``tree`` (``scopes[0]`` is the module)."""

    def __init__(self, tree: ast.Module):
        self.bound_anywhere: set[str] = set()
        self.walrus: set[str] = set()  # names bound by ':=' (they bind in the enclosing scope)
        self.scopes: list[Scope] = []
        self.module = Scope(tree)
        self.first: dict[str, tuple[int, bool]] = {}  # name -> (statement, read there?)
        self.iterated: set[int] = set()  # Name loads that are the source of a loop
        self.loop_reads: list[tuple[ast.Name, ast.expr]] = []  # (read, the loop's source)
        self._statement = 0
        self._open_loops: list[Loop] = []  # the ``for`` statements whose body we are in
        self._collect(tree, self.module, self.scopes)

    def _collect(self, node: ast.AST, scope: Scope, scopes: list[Scope]) -> None:
        kind = type(node)  # exact types: the parser makes no subclasses (and it is the hot path)
        if kind is ast.Name:
            name = cast(ast.Name, node)
            load = type(name.ctx) is ast.Load
            if load:
                scope.loads.append(name)
            else:
                self.bound_anywhere.add(name.id)
            if scope is self.module:  # where each module name first appears, and how
                first = self.first.setdefault(name.id, (self._statement, False))
                if load and first[0] == self._statement:
                    self.first[name.id] = (self._statement, True)
            for loop in self._open_loops:
                if loop.variable == name.id and loop.scope is scope:
                    if load:
                        loop.reads.append(name)
                    else:
                        loop.rebound = True
            return
        if kind in _SCOPE_TYPES:
            self._collect_scope(node, scope, scopes)
            return
        if kind is ast.Module:
            scopes.append(scope)
            for index, statement in enumerate(cast(ast.Module, node).body):
                self._statement = index
                self._collect(statement, scope, scopes)
            return
        if kind in _BINDERS:
            self._bind(node, scope)
            if kind is ast.For:
                self._collect_for(cast(ast.For, node), scope, scopes)
                return
        collect = self._collect
        for field in node._fields:  # ast.iter_child_nodes, without its generator
            child = getattr(node, field, None)
            if type(child) is list:
                for item in child:
                    if isinstance(item, ast.AST):
                        collect(item, scope, scopes)
            elif isinstance(child, ast.AST) and not isinstance(child, _LEAVES):
                collect(child, scope, scopes)

    def _collect_for(self, node: ast.For, scope: Scope, scopes: list[Scope]) -> None:
        """A ``for``: its source may be an iterated-only name, and a read of its plain loop
        variable in its own body, where nothing rebinds it, sees the current item whatever
        else the name is bound to elsewhere (and, at module level, whatever the host gave)."""
        if type(node.iter) is ast.Name:
            self.iterated.add(id(node.iter))
        self._collect(node.target, scope, scopes)
        self._collect(node.iter, scope, scopes)
        loop = Loop(node.target.id, scope) if type(node.target) is ast.Name else None
        if loop is not None:
            self._open_loops.append(loop)
        for statement in node.body:
            self._collect(statement, scope, scopes)
        if loop is not None:
            self._open_loops.pop()
            if not loop.rebound:
                self.loop_reads += [(read, node.iter) for read in loop.reads]
        for statement in node.orelse:
            self._collect(statement, scope, scopes)

    def _bind(self, node: ast.AST, scope: Scope) -> None:
        if isinstance(node, ast.NamedExpr):
            self.walrus |= {n.id for n in names(node.target)}
        elif isinstance(node, ast.Assign):
            simple = all(isinstance(t, ast.Name) for t in node.targets)
            # ``a = b = value``: both names hold one object ("shared"), so what one proves
            # about the other's list does not hold
            how = "unknown" if not simple else "expr" if len(node.targets) == 1 else "shared"
            for target in node.targets:
                for name in names(target):
                    scope.bind(name.id, how, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            scope.bind(node.target.id, "aug", node.value, node.op)
            scope.loads.append(node.target)  # 'x += v' reads x too
        elif isinstance(node, ast.Delete):
            for name in names(node):
                scope.bind(name.id, "unknown")  # after 'del', a read may find a builtin
        elif isinstance(node, ast.For):
            simple = isinstance(node.target, ast.Name)
            for name in names(node.target):
                scope.bind(name.id, "for" if simple else "unknown", node.iter)

    def _collect_scope(self, node: ast.AST, outer: Scope, scopes: list[Scope]) -> None:
        inner = Scope(node, outer)
        scopes.append(inner)
        if isinstance(node, ast.FunctionDef | ast.Lambda):
            args = node.args
            for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
                self._collect(default, outer, scopes)
            for decorator in getattr(node, "decorator_list", []):
                self._collect(decorator, outer, scopes)
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    inner.bind(arg.arg, "unknown")
                    self.bound_anywhere.add(arg.arg)
            if isinstance(node, ast.FunctionDef):
                outer.bind(node.name, "unknown")
                for loop in self._open_loops:  # 'def x(): ...' in the body rebinds x
                    if loop.variable == node.name and loop.scope is outer:
                        loop.rebound = True
                self.bound_anywhere.add(node.name)
                for statement in node.body:
                    self._collect(statement, inner, scopes)
            else:
                self._collect(node.body, inner, scopes)
            for annotation in annotations_of(node):
                self._collect(annotation, outer, scopes)
            return
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        for index, generator in enumerate(generators):
            if type(generator.iter) is ast.Name:
                self.iterated.add(id(generator.iter))
            # the first iterable is evaluated in the enclosing scope
            self._collect(generator.iter, outer if index == 0 else inner, scopes)
            simple = isinstance(generator.target, ast.Name)
            for name in names(generator.target):
                inner.bind(name.id, "for" if simple else "unknown", generator.iter)
                self.bound_anywhere.add(name.id)
            for condition in generator.ifs:
                self._collect(condition, inner, scopes)
        for part in ("elt", "key", "value"):
            child = getattr(node, part, None)
            if child is not None:
                self._collect(child, inner, scopes)


def names(target: ast.AST) -> Iterator[ast.Name]:
    """The names a target binds (or deletes): in ``d[k] = v`` that is none of them."""
    if type(target) is ast.Name:  # the common case, without ast.walk's queue
        if type(target.ctx) is not ast.Load:
            yield target
        return
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node


def annotations_of(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.FunctionDef):
        if node.returns is not None:
            yield node.returns
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                yield arg.annotation
