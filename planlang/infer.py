"""What kind of value a plan's name must hold, when the source alone can prove it.

The guards are Python calls on the hot path, and most of them protect against values a name can
never hold: ``total * 31 % 1000003`` on a name bound only to integers cannot repeat a string, and
``counts[word] = 1`` on a name bound only to ``{}`` cannot touch a host dict. This pass finds
such names, so the policy can leave those operations native. It is deliberately small and
conservative; when in doubt a name has no kind and every guard stays.

Soundness rests on three facts of the plan language:

- A plan cannot rebind a name of another scope (no ``global``, no ``nonlocal``); names bound by
  ``:=`` are left out, since they bind in the enclosing scope.
- A function's local can hold only what its own bindings give it (reading it earlier raises).
  So only a scope's own names count, and reads of outer names have no kind.
- A module-level name could also hold a host value of the same name, until the plan binds it;
  so it counts only when its first appearance in module-level code is a top-level assignment.

Builtins (``range``, ``len``, ...) are trusted when the plan never binds their names; the
sandbox refuses host values that would shadow a builtin.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import cast

__all__ = ["Kinds", "INT_SAFE_OPS", "SMALL_FACTOR"]

INT_SAFE_OPS = (ast.Add, ast.Sub, ast.Mod, ast.FloorDiv, ast.BitAnd, ast.BitOr, ast.BitXor,
                ast.RShift)  # fmt: skip
SMALL_FACTOR = 1 << 16  # int * constant: the result grows by at most 17 bits a step

_INT_CALLS = {"len", "ord", "int"}
_CONTAINER_CALLS = {"dict": "dict", "list": "list", "sorted": "list", "set": "set"}
_TRUSTED = _INT_CALLS | set(_CONTAINER_CALLS) | {"range", "abs"}
# Parts with nothing inside to collect: contexts and operators.
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPE_TYPES = frozenset(_SCOPES)
_BINDERS = frozenset({ast.NamedExpr, ast.Assign, ast.AugAssign, ast.Delete, ast.For})

Binding = tuple[str, ast.AST | None, ast.AST | None]  # (how, value, op)


class _Scope:
    def __init__(self, node: ast.AST):
        self.node = node
        self.bindings: dict[str, list[Binding]] = {}
        self.loads: list[ast.Name] = []

    def bind(self, name: str, how: str, value: ast.AST | None = None, op: ast.AST | None = None):
        self.bindings.setdefault(name, []).append((how, value, op))


class Kinds:
    """``kind(expr)``: "int", "dict", "list", "set" or None, for expressions of the source."""

    def __init__(self, tree: ast.Module):
        self._name_kind: dict[int, str] = {}
        self._bound_anywhere: set[str] = set()
        self._walrus: set[str] = set()
        scopes: list[_Scope] = []
        self._module = _Scope(tree)
        self._statement = 0
        self._first: dict[str, tuple[int, bool]] = {}  # name -> (statement, read there?)
        self._collect(tree, self._module, scopes)
        self.trusted = _TRUSTED - self._bound_anywhere - self._walrus
        self._small_loads: set[int] = set()
        for scope in scopes:
            self._find_small_loads(scope)
            kinds = self._solve(scope)
            if scope is self._module and kinds:
                kinds = {n: k for n, k in kinds.items() if self._assigned_first(tree, n)}
            for load in scope.loads:
                kind = kinds.get(load.id)
                if kind is not None:
                    self._name_kind[id(load)] = kind

    def _assigned_first(self, module: ast.Module, name: str) -> bool:
        """Is the first appearance of ``name`` in module-level code a top-level assignment to
        it (that does not read it)? Then no module-level read can see a host value."""
        index, read = self._first.get(name, (-1, True))
        statement = module.body[index] if index >= 0 else None
        return (
            not read
            and isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets)
        )

    # -- queries -------------------------------------------------------------------------

    def kind(self, expr: ast.AST | None) -> str | None:
        """The kind of an expression of the original tree (before the policy rewrites it)."""
        return self._expr_kind(expr, lambda name: self._name_kind.get(id(name)))

    def native_binop(self, node: ast.BinOp) -> bool:
        """True when ``node`` needs no size guard: integers that cannot blow up."""
        left, right = self.kind(node.left), self.kind(node.right)
        if left != "int" or right != "int":
            return False
        if isinstance(node.op, INT_SAFE_OPS):
            return True
        return isinstance(node.op, ast.Mult) and (_small(node.left) or _small(node.right))

    def small_product(self, node: ast.BinOp) -> bool:
        """``i * j`` of loop variables over ``range`` with small constant bounds (or such a
        variable and a small constant): under 2**62, and no loop can grow it, since neither
        name is bound any other way."""
        return isinstance(node.op, ast.Mult) and all(
            _small(side) or id(side) in self._small_loads for side in (node.left, node.right)
        )

    def _find_small_loads(self, scope: _Scope) -> None:
        for load in scope.loads:
            bindings = scope.bindings.get(load.id)
            if (
                bindings
                and load.id not in self._walrus
                and all(how == "for" and self._small_range(value) for how, value, _ in bindings)
            ):
                self._small_loads.add(id(load))

    def _small_range(self, expr: ast.AST | None) -> bool:
        return (
            self._is_call(expr, "range")
            and isinstance(expr, ast.Call)
            and not expr.keywords
            and 1 <= len(expr.args) <= 3
            and all(
                isinstance(a, ast.Constant) and type(a.value) is int and abs(a.value) < 2**31
                for a in expr.args
            )
        )

    # -- collecting bindings and loads per scope -----------------------------------------

    def _collect(self, node: ast.AST, scope: _Scope, scopes: list[_Scope]) -> None:
        kind = type(node)  # exact types: the parser makes no subclasses (and it is the hot path)
        if kind is ast.Name:
            name = cast(ast.Name, node)
            load = type(name.ctx) is ast.Load
            if load:
                scope.loads.append(name)
            else:
                self._bound_anywhere.add(name.id)
            if scope is self._module:  # where each module name first appears, and how
                first = self._first.setdefault(name.id, (self._statement, False))
                if load and first[0] == self._statement:
                    self._first[name.id] = (self._statement, True)
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
        collect = self._collect
        for field in node._fields:  # ast.iter_child_nodes, without its generator
            child = getattr(node, field, None)
            if type(child) is list:
                for item in child:
                    if isinstance(item, ast.AST):
                        collect(item, scope, scopes)
            elif isinstance(child, ast.AST) and not isinstance(child, _LEAVES):
                collect(child, scope, scopes)

    def _bind(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.NamedExpr):
            self._walrus |= {n.id for n in _names(node.target)}
        elif isinstance(node, ast.Assign):
            simple = all(isinstance(t, ast.Name) for t in node.targets)
            for target in node.targets:
                for name in _names(target):
                    scope.bind(name.id, "expr" if simple else "unknown", node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            scope.bind(node.target.id, "aug", node.value, node.op)
            scope.loads.append(node.target)  # 'x += v' reads x too
        elif isinstance(node, ast.Delete):
            for name in _names(node):
                scope.bind(name.id, "unknown")  # after 'del', a read may find a builtin
        elif isinstance(node, ast.For):
            simple = isinstance(node.target, ast.Name)
            for name in _names(node.target):
                scope.bind(name.id, "for" if simple else "unknown", node.iter)

    def _collect_scope(self, node: ast.AST, outer: _Scope, scopes: list[_Scope]) -> None:
        inner = _Scope(node)
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
                    self._bound_anywhere.add(arg.arg)
            if isinstance(node, ast.FunctionDef):
                outer.bind(node.name, "unknown")
                self._bound_anywhere.add(node.name)
                for statement in node.body:
                    self._collect(statement, inner, scopes)
            else:
                self._collect(node.body, inner, scopes)
            for annotation in _annotations(node):
                self._collect(annotation, outer, scopes)
            return
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        for index, generator in enumerate(generators):
            # the first iterable is evaluated in the enclosing scope
            self._collect(generator.iter, outer if index == 0 else inner, scopes)
            simple = isinstance(generator.target, ast.Name)
            for name in _names(generator.target):
                inner.bind(name.id, "for" if simple else "unknown", generator.iter)
                self._bound_anywhere.add(name.id)
            for condition in generator.ifs:
                self._collect(condition, inner, scopes)
        for part in ("elt", "key", "value"):
            child = getattr(node, part, None)
            if child is not None:
                self._collect(child, inner, scopes)

    # -- solving: the greatest fixpoint of each scope's bindings -------------------------

    def _solve(self, scope: _Scope) -> dict[str, str]:
        names = {
            name
            for name, bindings in scope.bindings.items()
            if name not in self._walrus and all(how != "unknown" for how, _, _ in bindings)
        }
        env: dict[str, str | None] = dict.fromkeys(names, "?")
        while True:
            changed = False
            for name in names:
                if env[name] is None:
                    continue
                kinds = {self._binding_kind(b, env, name) for b in scope.bindings[name]}
                known = kinds - {"?"}
                new = None if None in kinds or len(known) > 1 else (known.pop() if known else "?")
                if new == "?" and env[name] == "?" and not known:
                    new = None  # bound only in terms of itself: nothing proves a kind
                if new != env[name]:
                    env[name], changed = new, True
            if not changed:
                return {n: k for n, k in env.items() if k not in (None, "?")}

    def _binding_kind(self, binding: Binding, env: dict[str, str | None], me: str) -> str | None:
        how, value, op = binding

        def lookup(name: ast.Name) -> str | None:
            return env.get(name.id) if name.id in env else None

        if how == "expr":
            return self._expr_kind(value, lookup)
        if how == "for":
            return "int" if self._is_call(value, "range") else None
        if how == "aug":
            current, added = env.get(me), self._expr_kind(value, lookup)
            if current in ("int", "?") and added == "int" and isinstance(op, INT_SAFE_OPS):
                return "int"
            if current in ("int", "?") and added == "int" and isinstance(op, ast.Mult):
                return "int" if _small(value) else None
            if current in ("list", "?") and isinstance(op, ast.Add) and added == "list":
                return "list"
            return None
        return None

    # -- expressions ---------------------------------------------------------------------

    def _expr_kind(self, expr: ast.AST | None, lookup) -> str | None:
        if isinstance(expr, ast.Constant):
            return "int" if type(expr.value) in (int, bool) else None
        if isinstance(expr, ast.Name):
            return lookup(expr)
        if isinstance(expr, ast.BinOp):
            left, right = self._expr_kind(expr.left, lookup), self._expr_kind(expr.right, lookup)
            both = {left, right}
            if both <= {"int", "?"} and isinstance(expr.op, (*INT_SAFE_OPS, ast.Mult)):
                return "int" if "int" in both else "?"
            return None
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub | ast.UAdd | ast.Invert):
            return self._expr_kind(expr.operand, lookup)
        if isinstance(expr, ast.IfExp):
            a, b = self._expr_kind(expr.body, lookup), self._expr_kind(expr.orelse, lookup)
            return a if a == b else None
        if isinstance(expr, ast.Dict | ast.DictComp):
            return "dict"
        if isinstance(expr, ast.List | ast.ListComp):
            return "list"
        if isinstance(expr, ast.Set | ast.SetComp):
            return "set"
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            name = expr.func.id
            if name in self.trusted:
                if name in _INT_CALLS:
                    return "int"
                if name in _CONTAINER_CALLS:
                    return _CONTAINER_CALLS[name]
        return None

    def _is_call(self, expr: ast.AST | None, name: str) -> bool:
        return (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Name)
            and expr.func.id == name
            and name in self.trusted
        )


def _small(expr: ast.AST | None) -> bool:
    return (
        isinstance(expr, ast.Constant)
        and type(expr.value) is int
        and abs(expr.value) <= SMALL_FACTOR
    )


def _names(target: ast.AST) -> Iterator[ast.Name]:
    """The names a target binds (or deletes): in ``d[k] = v`` that is none of them."""
    if type(target) is ast.Name:  # the common case, without ast.walk's queue
        if type(target.ctx) is not ast.Load:
            yield target
        return
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node


def _annotations(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.FunctionDef):
        if node.returns is not None:
            yield node.returns
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                yield arg.annotation
