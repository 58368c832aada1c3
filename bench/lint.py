"""A planted bug must not be one a linter finds: no new unused or undefined local names.

An edit such as ``return best`` -> ``return current`` can leave ``best`` assigned and never
read, or read a name before anything assigns it; ruff or pyflakes would then point straight at
the bug, and the benchmark would measure the linter, not the audit. This is a small, flow-light
version of those two checks (F841, F821), enough to compare a file before and after an edit.
"""

from __future__ import annotations

import ast
import builtins

_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}


def signature(source: str) -> frozenset[tuple[str, str, str]]:
    """(kind, function, name) of every unused local and every name read before its binding."""
    tree = ast.parse(source)
    module_names = _bound_names(tree.body, top=True)
    module_scope = _own_scope(tree.body)[1]
    found: set[tuple[str, str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            found |= _check_function(node, module_names, module_scope)
    return frozenset(found)


def _bound_names(body: list[ast.stmt], top: bool) -> set[str]:
    names: set[str] = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Store):
                    names.add(node.id)
            else:
                names |= _binds(node)
    return names


def _binds(node: ast.AST) -> set[str]:
    """The names a node other than ``ast.Name`` binds where it stands: a def or class,
    imports, ``global``/``nonlocal``, ``except ... as``, and ``match`` captures."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.Global | ast.Nonlocal):
        return set(node.names)
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    return set()


def _check_function(
    function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
    module_names: set[str],
    module_scope: set[str],
) -> set[tuple[str, str, str]]:
    name = getattr(function, "name", "<lambda>")
    arguments = function.args
    params = {
        a.arg
        for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        + [x for x in (arguments.vararg, arguments.kwarg) if x]
    }
    body: list[ast.stmt] = (
        function.body if isinstance(function.body, list) else [ast.Expr(function.body)]
    )
    stores: dict[str, int] = {}
    loads: dict[str, int] = {}
    simple_stores: set[str] = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                table = stores if isinstance(node.ctx, ast.Store) else loads
                table[node.id] = min(table.get(node.id, node.lineno), node.lineno)
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                simple_stores |= {t.id for t in targets if isinstance(t, ast.Name)}
    local_defs = _bound_names(body, top=False)
    found: set[tuple[str, str, str]] = set()
    own_loads, own_bound = _own_scope(body)
    for variable in own_loads - own_bound - params - module_scope - _BUILTINS:
        if variable in stores:
            # Bound only inside a nested function, class or comprehension: a NameError here.
            found.add(("nested-only", name, variable))
    for variable in simple_stores - set(loads) - params:
        found.add(("unused", name, variable))
    for variable, first_load in loads.items():
        if variable in params or variable in module_names or variable in _BUILTINS:
            continue
        if variable not in local_defs and variable not in stores:
            continue  # a closure variable of an enclosing function: not this check's business
        if variable in stores and stores[variable] > first_load:
            # Textual order stands in for flow; both sides of an edit are judged the same way.
            found.add(("before-binding", name, variable))
    return found


_NESTED = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
)  # fmt: skip


def _own_scope(body: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """Names read and names bound by the function's own code, not by the scopes nested in it."""
    loads: set[str] = set()
    bound: set[str] = set()
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, _NESTED):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(node.name)
            # A walrus in a comprehension binds in the function around it.
            bound |= {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)}
            continue
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store | ast.Del) else loads).add(node.id)
        else:
            bound |= _binds(node)
        pending.extend(ast.iter_child_nodes(node))
    return loads, bound
