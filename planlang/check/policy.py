"""The checker's policy: RestrictedPython's transformer, narrowed to the plan language.

One pass over the tree does both jobs: it refuses whatever the language does not allow (deny by
default: a node type missing from ``language`` is refused, whatever RestrictedPython thinks of
it) and rewrites what it allows so that the run-time guards see every attribute read, item
write, loop, call and every operation that could allocate without a loop.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, cast

from RestrictedPython.transformer import IOPERATOR_TO_STR, RestrictingNodeTransformer

from planlang import language as L
from planlang.check.fstrings import FStringRules
from planlang.check.infer import Kinds
from planlang.check.nodes import (
    _call,
    _is_number,
    _unpack_call,
    arithmetic_below,
    augmented_item,
    is_int_constant,
)

__all__ = ["MAX_FUNCTIONS", "MAX_INT_BITS", "MAX_KEYWORDS", "PlanPolicy", "RawProblem"]

# functions, lambdas and comprehensions per plan: each is a code object in the module's
# constants, and CPython merges those in quadratic time when many look alike (60,000
# ``f = lambda: x`` took compile 99 s); 1,000 alike compile in about 20 ms
MAX_FUNCTIONS = 1000
# Keyword arguments of one call: CPython's compiler looks for a repeated one pair by pair
# (60,000 took 21 s to check; red team 21); 1,000 compile in about 10 ms.
MAX_KEYWORDS = 1000
# Bits of an integer literal: CPython's compiler folds ``//`` and ``%`` of two int constants
# before any limit applies, in quadratic time (a 1 MB plan of two hex literals took 4 s to
# check; red team 24). Decimal literals stop at 4,300 digits, CPython's own rule; every base
# stops here, where such a fold is milliseconds.
MAX_INT_BITS = 100_000
_FUNCTION_NODES = frozenset({ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
                             ast.DictComp, ast.GeneratorExp})  # fmt: skip

_ALLOWED_NODES = L.ALLOWED_STATEMENTS | L.ALLOWED_EXPRESSIONS | L.ALLOWED_PARTS
_GUARDED_BINOPS = {ast.Add: "_add_", ast.Mult: "_mul_", ast.Pow: "_pow_",
                   ast.LShift: "_lshift_", ast.Mod: "_mod_"}  # fmt: skip


# Methods that need no guard on a value the source proves is the plan's own dict, list or set.
_NATIVE_ATTRIBUTES = {
    kind: frozenset(name for name, wrapper in L.ATTRIBUTES[kind].items() if wrapper is None)
    for kind in ("dict", "list", "set")
}


_POSITIONLESS = frozenset(t for t in L.ALLOWED_PARTS if "lineno" not in t._attributes)
_DISPATCH: dict[tuple[type, type], Any] = {}  # (policy class, node class) -> visit method


@dataclass(frozen=True)
class RawProblem:
    line: int
    col: int
    code: str
    message: str


class PlanPolicy(FStringRules, RestrictingNodeTransformer):
    """RestrictedPython's policy with the plan language's whitelist and instrumentation."""

    def __init__(self, errors=None, warnings=None, used_names=None, *, kinds: Kinds | None = None):
        super().__init__(errors, warnings, used_names)
        # what the source proves about names (planlang.check.infer); None: prove nothing
        self.kinds = kinds
        self.problems: list[RawProblem] = []
        self._tmp = 0
        # ids of products taken modulo a constant right away, as in (h * 31 + c) % 1000003:
        # only those stay native, so no loop can grow an integer past int_bits natively
        self._reduced: set[int] = set()
        self._functions = 0  # functions, lambdas and comprehensions seen (MAX_FUNCTIONS)
        self._past_functions: ast.AST | None = None  # the first one past the limit

    # -- reporting -----------------------------------------------------------------------

    def problem(self, node: ast.AST, code: str, message: str) -> None:
        if not hasattr(node, "lineno"):
            node = getattr(self, "_where", node)
        line = getattr(node, "lineno", 1) or 1
        col = (getattr(node, "col_offset", 0) or 0) + 1
        self.problems.append(RawProblem(line, col, code, message))
        self.errors.append(f"Line {line}: {message}")

    def error(self, node: ast.AST, info: str) -> None:
        """RestrictedPython's own refusals, kept with our location format."""
        self.problem(node, "PL100", info.rstrip("."))

    def not_allowed(self, node: ast.AST) -> None:
        code, why = L.REFUSED_CONSTRUCTS.get(
            type(node), ("PL100", f"{type(node).__name__} is not part of the plan language")
        )
        self.problem(node, code, why)

    # -- deny by default -----------------------------------------------------------------

    def visit(self, node: ast.AST) -> ast.AST | list[ast.AST] | None:
        kind = type(node)
        if kind not in _ALLOWED_NODES:
            self.not_allowed(node)
            self._report_inside(node)
            return node
        if kind not in _POSITIONLESS:
            self._where = node  # operators carry no position: report them at their expression
        if kind in _FUNCTION_NODES:
            self._count_function(node)
        # NodeVisitor.visit builds "visit_" + name and a bound method for every node; the
        # checker visits every node, so the method is looked up once per class instead.
        policy = type(self)
        method: Any = _DISPATCH.get((policy, kind))
        if method is None:
            method = getattr(policy, "visit_" + kind.__name__, policy.generic_visit)
            _DISPATCH[policy, kind] = method
        return method(self, node)

    def _count_function(self, node: ast.AST) -> None:
        self._functions += 1
        if self._functions == MAX_FUNCTIONS + 1:
            self._past_functions = node  # reported once, where the limit is passed

    def _report_functions(self) -> None:
        if self._past_functions is not None:
            message = (f"a plan may have at most {MAX_FUNCTIONS:,} functions, lambdas and "
                       f"comprehensions in all (CPython compiles many alike in quadratic time); "
                       f"this plan has {self._functions:,}, past the limit here")  # fmt: skip
            self.problem(self._past_functions, "PL006", message)

    def _report_inside(self, node: ast.AST) -> None:
        """Visit what a refused construct holds, so its problems are reported in this pass too.

        Only statements and expressions are visited (the tree is refused, so what the visits
        rewrite is thrown away); parts such as ``withitem`` or ``alias`` are looked through.
        """
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt | ast.expr):
                self.visit(child)
            else:
                self._report_inside(child)

    # -- names ---------------------------------------------------------------------------

    def check_name(self, node, name, allow_magic_methods=False):
        if name is None:
            return
        if name.startswith("_") and name != "_":  # '_' alone is an ordinary name
            self.problem(node, "PL201", f"'{name}' starts with '_', which plans may not use")
        elif name in L.FORBIDDEN_NAMES:
            self.problem(node, "PL202", L.FORBIDDEN_NAMES[name])

    def visit_Name(self, node: ast.Name) -> ast.Name:
        # No print rewriting: 'print' is an ordinary builtin here (it logs).
        if isinstance(node.ctx, ast.Load):
            self.used_names[node.id] = True
        self.check_name(node, node.id)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if not isinstance(node.ctx, ast.Load):
            self.problem(node, "PL203", "plans may not set or delete attributes")
        elif node.attr.startswith("_"):
            self.problem(node, "PL204", f"attribute '{node.attr}' starts with '_'")
        elif node.attr in L.FORBIDDEN_ATTRIBUTES:
            self.problem(node, "PL205", f"attribute '{node.attr}' is not part of the plan language")
        else:
            return self._read_attribute(node)
        self.visit(node.value)  # refused, but what it reads from is reported in this pass too
        return node

    def _read_attribute(self, node: ast.Attribute) -> ast.AST:
        kind = self._kind(node.value)
        value = self.visit(node.value)
        if kind in _NATIVE_ATTRIBUTES and node.attr in _NATIVE_ATTRIBUTES[kind]:
            node.value = cast(ast.expr, value)  # the plan's own dict/list/set: a plain method
            return node
        return _call("_getattr_", [value, ast.Constant(node.attr)], node)  # type: ignore[list-item]

    def visit_Assign(self, node: ast.Assign) -> ast.AST | list[ast.AST]:
        target = node.targets[0]
        if (
            len(node.targets) == 1
            and isinstance(target, ast.Subscript)
            and isinstance(target.slice, ast.Slice)
        ):  # xs[a:b] = ys -> _setslice_(xs, slice(a, b), ys): the list may grow
            container = cast(ast.expr, self.visit(target.value))
            index = cast(ast.expr, self.visit(target.slice))
            value = cast(ast.expr, self.visit(node.value))
            call = _call("_setslice_", [container, index, value], node)
            return ast.copy_location(ast.Expr(call), node)
        return cast(ast.AST, super().visit_Assign(node))

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.ctx, ast.Store) and isinstance(node.slice, ast.Slice):
            self.problem(node, "PL112", "a slice may only be assigned on its own: xs[a:b] = ys")
            self._report_inside(node)
            return node
        if isinstance(node.ctx, ast.Load) or self._kind(node.value) in ("dict", "list"):
            # Reading an item needs no guard: every subscriptable value a plan can reach is plain
            # data, a read-only wrapper or a builtin type (``list[int]``, whose attributes the
            # whitelist refuses); host objects arrive as proxies without ``__getitem__``. A
            # write still goes through ``_write_`` unless the container is the plan's own.
            return self.node_contents_visit(node)
        return cast(ast.AST, super().visit_Subscript(node))

    def _kind(self, expr: ast.AST) -> str | None:
        """What the source proves about a name's value (see planlang.check.infer)."""
        if self.kinds is None or not isinstance(expr, ast.Name):
            return None
        return self.kinds.kind(expr)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, bytes):
            self.problem(node, "PL206", "bytes are not part of the plan language; use str")
        elif type(node.value) is int and node.value.bit_length() > MAX_INT_BITS:
            self.problem(node, "PL008", f"an integer literal may have at most {MAX_INT_BITS:,} "
                         f"bits; this one has {node.value.bit_length():,}")  # fmt: skip
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        # f(_x=1) would hand a host word an argument no plan may name
        self.check_name(node, node.arg)
        return self.node_contents_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if len(node.keywords) > MAX_KEYWORDS:  # before its keywords are each visited
            self.problem(node, "PL007", f"a call may have at most {MAX_KEYWORDS:,} keyword "
                         f"arguments; this one has {len(node.keywords):,}")  # fmt: skip
            return node
        # RestrictedPython's own eval/exec message would repeat ours (check_name refuses both).
        needs_apply = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        )
        node = self.node_contents_visit(node)
        if needs_apply:
            if any(isinstance(a, ast.Starred) for a in node.args):
                # f(a, *b, *c) -> _apply_(f, *_unpack_("tuple", (a,), b, c)): the argument
                # tuple is built by a guard, so '*' cannot repeat a sequence past the size limit.
                packed = ast.Starred(_unpack_call("tuple", node.args, node), ast.Load())
                node.args = [ast.copy_location(packed, node)]
            node.args.insert(0, node.func)
            node.func = ast.copy_location(ast.Name("_apply_", ast.Load()), node)
        return node

    # -- displays with '*' -----------------------------------------------------------------
    # [*a, *a] doubles a list without any operator the guards see; such displays are built by
    # _unpack_, which charges the loop and checks the size. Displays without '*' stay as is.

    def _display(self, node: ast.List | ast.Tuple | ast.Set, kind: str) -> ast.AST:
        node = self.node_contents_visit(node)
        if isinstance(node, ast.Set) or isinstance(node.ctx, ast.Load):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return _unpack_call(kind, node.elts, node)
        return node

    def visit_List(self, node: ast.List) -> ast.AST:
        return self._display(node, "list")

    def visit_Tuple(self, node: ast.Tuple) -> ast.AST:
        return self._display(node, "tuple")

    def visit_Set(self, node: ast.Set) -> ast.AST:
        return self._display(node, "set")

    # -- functions -----------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if node.decorator_list:
            self.problem(
                node.decorator_list[0], "PL110", "decorators are not part of the plan language"
            )
        self.check_name(node, node.name)
        self.check_function_argument_names(node)
        node = self.node_contents_visit(node)
        # '_depth_ = _enter_()' counts a step and a level of depth, and holds this thread's
        # depth cell; the finally gives the level back without a call ('_depth_[0] -= 1'). A
        # plan cannot name '_depth_' (no name of a plan starts with '_').
        cell = ast.Name("_depth_", ast.Store())
        enter = ast.Assign(targets=[cell], value=_call("_enter_", [], node))
        item = ast.Subscript(ast.Name("_depth_", ast.Load()), ast.Constant(0), ast.Store())
        leave = ast.AugAssign(target=item, op=ast.Sub(), value=ast.Constant(1))
        guarded = ast.Try(body=node.body, handlers=[], orelse=[], finalbody=[leave])
        node.body = [ast.copy_location(enter, node), ast.copy_location(guarded, node)]
        ast.fix_missing_locations(node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.check_function_argument_names(node)
        node = self.node_contents_visit(node)
        # '_step_() or body': _step_ returns None, so the value is the body's.
        node.body = ast.copy_location(
            ast.BoolOp(op=ast.Or(), values=[_call("_step_", [], node), node.body]), node.body
        )
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        exc = node.exc
        target = exc.func if isinstance(exc, ast.Call) else exc
        if node.cause is not None or not (
            isinstance(target, ast.Name) and target.id in L.EXCEPTION_NAMES
        ):
            self.problem(node, "PL111", "a plan may only 'raise' one of the builtin exceptions "
                         f"({', '.join(sorted(L.EXCEPTION_NAMES))})")  # fmt: skip
        return self.node_contents_visit(node)

    # -- loops ---------------------------------------------------------------------------

    def visit_While(self, node: ast.While) -> ast.AST:
        node = self.node_contents_visit(node)
        node.body.insert(0, ast.copy_location(ast.Expr(_call("_step_", [], node)), node))
        return node

    # -- operators -----------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if isinstance(node.op, ast.Mod) and is_int_constant(node.right):
            self._reduced.update(arithmetic_below(node.left))
        native = self.kinds is not None and (  # asked before rewriting
            self.kinds.small_product(node)
            or self.kinds.number_sum(node)
            or (
                self.kinds.native_binop(node)
                and (not isinstance(node.op, ast.Mult) or id(node) in self._reduced)
            )
        )
        node = self.node_contents_visit(node)
        guard = _GUARDED_BINOPS.get(type(node.op))
        if native:
            return node
        if guard is None:
            return node
        if isinstance(node.op, ast.Add) and (_is_number(node.left) or _is_number(node.right)):
            return node  # number + anything cannot grow a sequence
        if (
            _is_number(node.left)
            and _is_number(node.right)
            and not isinstance(node.op, ast.Pow | ast.LShift | ast.Mult)
        ):
            return node
        return _call(guard, [node.left, node.right], node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.AST]:
        if type(node.op) not in L.ALLOWED_PARTS:  # '@=' like '@'
            name = type(node.op).__name__
            self.problem(node, "PL100", f"{name} is not part of the plan language")
            self._report_inside(node)
            return node
        op = IOPERATOR_TO_STR[type(node.op)]
        target = node.target
        if isinstance(target, ast.Name):
            self.check_name(target, target.id)
            if self.kinds is not None and self.kinds.native_aug(node):
                return self.node_contents_visit(node)  # numbers that cannot blow up
            value = self.visit(node.value)
            load = ast.copy_location(ast.Name(target.id, ast.Load()), target)
            call = _call("_inplacevar_", [ast.Constant(op), load, value], node)  # type: ignore[list-item]
            return ast.copy_location(ast.Assign(targets=[target], value=call), node)
        if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice):
            self.problem(node, "PL112", "a slice may only be assigned on its own: xs[a:b] = ys")
            self._report_inside(node)
            return node
        if isinstance(target, ast.Subscript):
            # x[k] += v  ->  _augN = x; _augM = k; _write_(_augN)[_augM] = _inplacevar_(...)
            container = cast(ast.expr, self.visit(target.value))
            key = cast(ast.expr, self.visit(target.slice))
            value = self.visit(node.value)
            names = (self._temp(), self._temp())
            return augmented_item(container, key, cast(ast.expr, value), op, names, node)
        self.problem(node, "PL203", "plans may not set or delete attributes")
        self._report_inside(node)
        return node

    def _temp(self) -> str:
        self._tmp += 1
        return f"_aug{self._tmp}"

    # -- module --------------------------------------------------------------------------

    def visit_Module(self, node: ast.Module) -> ast.AST:
        node = self.node_contents_visit(node)
        self._report_functions()
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        if node.is_async:
            self.problem(node.target, "PL105", "async code is not part of the plan language")
        return cast(ast.AST, super().visit_comprehension(node))

    # -- unpacking -----------------------------------------------------------------------
    # ``a, b = x`` calls ``_unpack_sequence_``, which returns ``x`` as it is: every value a plan
    # holds is plain data, and Python checks the count itself. ``for a, b in xs`` calls
    # ``_iter_unpack_sequence_``, which charges the loop like any other. Neither hook takes
    # RestrictedPython's unpack spec, so no dict is built on every use.

    def protect_unpack_sequence(self, target: ast.Tuple, value: ast.expr) -> ast.Call:
        return _call("_unpack_sequence_", [value], value)

    def guard_iter(self, node):
        node = self.node_contents_visit(node)
        name = "_iter_unpack_sequence_" if isinstance(node.target, ast.Tuple) else "_getiter_"
        node.iter = _call(name, [node.iter], node.iter)
        return node
