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
  So only a scope's own names count, and reads of outer names have no kind; the one read that
  crosses is a comprehension's first source, which runs in the enclosing scope (solved first).
  Small products cross too: a function's or comprehension's local bound only by ``for`` over a
  small ``range`` holds a small int wherever it is read, in that scope or one nested in it.
- A module-level name could also hold a host value of the same name, until the plan binds it;
  so it counts (and other names' kinds may rest on it) only when its first appearance in
  module-level code is a top-level assignment. A module loop variable keeps the host's value
  after a loop that never ran, so there only reads inside the loop's own body see an item.

Builtins (``range``, ``len``, ...) are trusted when the plan never binds their names; the
sandbox refuses host values that would shadow a builtin.

Kinds: "int"; "num" (an int or a float: ``n + x`` is a number or a TypeError whatever ``x`` is,
since no value a plan can reach adds itself to a number except numbers); "dict", "list", "set"
(the plan's own, made by a display or a trusted call); "strs" (a list, tuple or set of strings
that no code can change, since the name is only ever iterated: every read of it anywhere in the
plan is the source of a ``for`` or a comprehension); "str" (a loop variable over "strs").
"""

from __future__ import annotations

import ast

from planlang.check.scopes import Binding, Collector, Scope

__all__ = ["Kinds", "INT_SAFE_OPS", "NUMBERS", "SMALL_FACTOR"]

INT_SAFE_OPS = (ast.Add, ast.Sub, ast.Mod, ast.FloorDiv, ast.BitAnd, ast.BitOr, ast.BitXor,
                ast.RShift)  # fmt: skip
SMALL_FACTOR = 1 << 16  # int * constant: the result grows by at most 17 bits a step
MAX_PASSES = 32  # passes of the fixpoint per scope (plans in the suite need at most a few)
MAX_WORK = 50_000  # bindings the solver may weigh in one check, all scopes and passes together
NUMBERS = frozenset({"int", "num"})
_NUMBER_OPS = (ast.Add, ast.Sub)  # number +/- anything: a number or a TypeError

_INT_CALLS = {"len", "ord", "int"}
_CONTAINER_CALLS = {"dict": "dict", "list": "list", "sorted": "list", "set": "set"}
_TRUSTED = _INT_CALLS | set(_CONTAINER_CALLS) | {"range", "abs"}


_Memo = dict[int, tuple[ast.AST, str | None]]  # a node's id: the node (held) and its kind


class Kinds:
    """``kind(expr)``: "int", "num", "dict", "list", "set", "strs", "str" or None, for
    expressions of the source."""

    def __init__(self, tree: ast.Module):
        self._name_kind: dict[int, str] = {}
        self._kinds: _Memo = {}  # ``kind``'s, node by node
        self._targets: dict[int, set[str]] = {}  # the names each module statement assigns
        self._work = MAX_WORK
        found = Collector(tree)
        self._walrus = found.walrus
        self._module = found.module
        self._first = found.first
        self.trusted = _TRUSTED - found.bound_anywhere - found.walrus
        scopes = found.scopes
        self._escaping = {
            load.id for scope in scopes for load in scope.loads if id(load) not in found.iterated
        }  # names read anywhere other than as a loop's source
        self._small_loads: set[int] = set()
        self._loop_reads = {id(read): source for read, source in found.loop_reads}
        for scope in scopes:
            self._find_small_loads(scope)
            # A module name that may still hold the host's value is no kind while solving, so
            # no other name's kind rests on it either (``a = b``, then ``b = 0``).
            hosted = (
                {n for n in scope.bindings if not self._assigned_first(tree, n)}
                if scope is self._module
                else set()
            )
            kinds = self._solve(scope, hosted)
            for load in scope.loads:
                kind = kinds.get(load.id)
                if kind is not None:
                    self._name_kind[id(load)] = kind
        for read, source in found.loop_reads:
            if id(read) not in self._name_kind and read.id not in self._walrus:
                item = self._item_kind(source, lambda name: self._name_kind.get(id(name)))
                if item is not None:
                    self._name_kind[id(read)] = item

    def _item_kind(self, source: ast.AST | None, lookup) -> str | None:
        """What every item of a loop's source is, if the source proves it."""
        if self._is_call(source, "range"):
            return "int"
        if isinstance(source, ast.Name):
            kind = lookup(source)
            return "str" if kind == "strs" else "?" if kind == "?" else None
        return "str" if _strings(source) else None

    def _assigned_first(self, module: ast.Module, name: str) -> bool:
        """Is the first appearance of ``name`` in module-level code a top-level assignment to
        it (that does not read it)? Then no module-level read can see a host value."""
        index, read = self._first.get(name, (-1, True))
        statement = module.body[index] if index >= 0 else None
        if read or not isinstance(statement, ast.Assign):
            return False
        names = self._targets.get(index)
        if names is None:  # once a statement: ``a0 = a1 = ... = 1`` asked for every name
            names = {t.id for t in statement.targets if isinstance(t, ast.Name)}
            self._targets[index] = names
        return name in names

    # -- queries -------------------------------------------------------------------------

    def kind(self, expr: ast.AST | None) -> str | None:
        """The kind of an expression of the original tree (before the policy rewrites it),
        each node's found once: the policy asks at every level of ``y+y+...+y``, and each
        level's walk of all below it made a check quadratic (red team 21: 50 s)."""
        return self._expr_kind(expr, self._final_lookup, self._kinds)

    def _final_lookup(self, name: ast.Name) -> str | None:
        return self._name_kind.get(id(name))

    def native_binop(self, node: ast.BinOp) -> bool:
        """True when ``node`` needs no size guard: integers that cannot blow up."""
        left, right = self.kind(node.left), self.kind(node.right)
        if left != "int" or right != "int":
            return False
        if isinstance(node.op, INT_SAFE_OPS):
            return True
        return isinstance(node.op, ast.Mult) and (_small(node.left) or _small(node.right))

    def native_aug(self, node: ast.AugAssign) -> bool:
        """``x op= v`` that needs no guard: integers that cannot blow up, or a number plus or
        minus anything."""
        target, value = self.kind(node.target), self.kind(node.value)
        if isinstance(node.op, INT_SAFE_OPS) and target == "int" and value == "int":
            return True
        return isinstance(node.op, _NUMBER_OPS) and target in NUMBERS

    def number_sum(self, node: ast.BinOp) -> bool:
        """``n + x`` or ``x - n`` with ``n`` a proven number: a number or a TypeError, never a
        longer sequence, whatever ``x`` holds."""
        return isinstance(node.op, _NUMBER_OPS) and bool(
            {self.kind(node.left), self.kind(node.right)} & NUMBERS
        )

    def small_product(self, node: ast.BinOp) -> bool:
        """``i * j`` of loop variables over ``range`` with small constant bounds (or such a
        variable and a small constant): under 2**62, and no loop can grow it, since neither
        name is bound any other way."""
        return isinstance(node.op, ast.Mult) and all(
            _small(side) or id(side) in self._small_loads for side in (node.left, node.right)
        )

    def _find_small_loads(self, scope: Scope) -> None:
        for load in scope.loads:
            if scope is self._module:  # after a loop that never ran: the host's value
                source = self._loop_reads.get(id(load))
                if source is not None and load.id not in self._walrus:
                    if self._small_range(source):
                        self._small_loads.add(id(load))
                continue
            owner = _owner(scope, load.id)
            bindings = owner.bindings.get(load.id) if owner is not None else None
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

    # -- solving: the greatest fixpoint of each scope's bindings -------------------------

    def _solve(self, scope: Scope, hosted: set[str]) -> dict[str, str]:
        names = {
            name
            for name, bindings in scope.bindings.items()
            if name not in self._walrus
            and name not in hosted
            and all(how != "unknown" for how, _, _ in bindings)
        }
        env: dict[str, str | None] = dict.fromkeys(names, "?")
        # The check runs on model-written text before any limit applies, so the solver's work
        # is bounded: a fixpoint not reached within MAX_PASSES passes, or past MAX_WORK
        # bindings weighed in this check, proves nothing in this scope (every guard stays).
        # Stopping early and keeping what the passes found would not do: a kind may rest on a
        # "?" that a later pass would have refuted.
        weight = sum(len(scope.bindings[name]) for name in names)
        for _pass in range(MAX_PASSES):
            self._work -= weight
            if self._work < 0:
                return {}
            changed = False
            for name in names:
                if env[name] is None:
                    continue
                kinds = {self._binding_kind(b, env, name) for b in scope.bindings[name]}
                known = kinds - {"?"}
                if len(known) > 1 and known <= NUMBERS:
                    known = {"num"}  # an int here, a float there: a number
                # Still "?" when every binding waits on names still "?": on a later pass, or for
                # good (a cycle that no binding starts can never run), and then it has no kind.
                new = None if None in kinds or len(known) > 1 else (known.pop() if known else "?")
                if new != env[name]:
                    env[name], changed = new, True
            if not changed:
                return {n: k for n, k in env.items() if k not in (None, "?")}
        return {}

    def _binding_kind(self, binding: Binding, env: dict[str, str | None], me: str) -> str | None:
        how, value, op = binding

        def lookup(name: ast.Name) -> str | None:
            if name.id in env:
                return env[name.id]
            solved = self._name_kind.get(id(name))  # a read of an enclosing scope, solved
            if solved is not None:  # before this one (a comprehension's first source)
                return solved
            source = self._loop_reads.get(id(name))  # a name with no kind here (a module
            if source is None or name.id in self._walrus:  # loop variable, say) still holds
                return None  # the current item inside its own loop's body
            return self._item_kind(source, lookup)

        if how in ("expr", "shared"):
            # only ever iterated: nothing can put a non-string in it; unless another name holds
            # the same list too (``xs = ys = ['a']``), which ``ys.append(big)`` would change
            if how == "expr" and me not in self._escaping and _strings(value):
                return "strs"
            return self._expr_kind(value, lookup)
        if how == "for":
            if self._is_call(value, "range"):
                return "int"
            source = lookup(value) if isinstance(value, ast.Name) else None
            if source == "strs" or (source is None and _strings(value)):
                return "str"
            return "?" if source == "?" else None
        if how == "aug":
            current, added = env.get(me), self._expr_kind(value, lookup)
            if current in ("int", "?") and added == "int" and isinstance(op, INT_SAFE_OPS):
                return "int"
            if current in ("int", "?") and added == "int" and isinstance(op, ast.Mult):
                return "int" if _small(value) else None
            if current in ("list", "?") and isinstance(op, ast.Add) and added == "list":
                return "list"
            if isinstance(op, _NUMBER_OPS) and current in ("int", "num", "?"):
                return "num" if current in NUMBERS else "?"  # a number plus anything
            return None
        return None

    # -- expressions ---------------------------------------------------------------------

    def _expr_kind(self, expr: ast.AST | None, lookup, memo: _Memo | None = None) -> str | None:
        if memo is not None and isinstance(expr, ast.BinOp | ast.UnaryOp | ast.IfExp):
            hit = memo.get(id(expr))
            if hit is not None and hit[0] is expr:  # the node held: its id is not reused
                return hit[1]
            kind = self._kind_of(expr, lookup, memo)
            memo[id(expr)] = (expr, kind)
            return kind
        return self._kind_of(expr, lookup, memo)

    def _kind_of(self, expr: ast.AST | None, lookup, memo: _Memo | None) -> str | None:
        if isinstance(expr, ast.Constant):
            kind = type(expr.value)
            return "int" if kind is int or kind is bool else "num" if kind is float else None
        if isinstance(expr, ast.Name):
            return lookup(expr)
        if isinstance(expr, ast.BinOp):
            left, right = (
                self._expr_kind(expr.left, lookup, memo),
                self._expr_kind(expr.right, lookup, memo),
            )
            both = {left, right}
            if both <= {"int", "?"} and isinstance(expr.op, (*INT_SAFE_OPS, ast.Mult)):
                return "int" if "int" in both else "?"
            if isinstance(expr.op, _NUMBER_OPS) and both & NUMBERS:
                return "num"
            if isinstance(expr.op, _NUMBER_OPS) and "?" in both:
                return "?"  # a number once the other side is proven one
            return None
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub | ast.UAdd | ast.Invert):
            return self._expr_kind(expr.operand, lookup, memo)
        if isinstance(expr, ast.IfExp):
            a, b = (
                self._expr_kind(expr.body, lookup, memo),
                self._expr_kind(expr.orelse, lookup, memo),
            )
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


def _owner(scope: Scope, name: str) -> Scope | None:
    """The function, lambda or comprehension whose local ``name`` is, read in ``scope``: the
    nearest that binds it (none: a module name). No other scope can rebind it (no ``global``,
    no ``nonlocal``), so what all its bindings give is what any read of it, here or in a
    scope nested in it, can see (``row`` in ``[[row * col for col in ...] for row in ...]``)."""
    current: Scope | None = scope
    while current is not None and current.parent is not None:
        if name in current.bindings:
            return current
        current = current.parent
    return None


def _strings(expr: ast.AST | None) -> bool:
    """A list, tuple or set display of strings, or a list or set comprehension of them."""
    if isinstance(expr, ast.List | ast.Tuple | ast.Set):
        return all(_string(e) for e in expr.elts)
    return isinstance(expr, ast.ListComp | ast.SetComp) and _string(expr.elt)


def _string(expr: ast.AST) -> bool:
    return isinstance(expr, ast.JoinedStr) or (
        isinstance(expr, ast.Constant) and type(expr.value) is str
    )


def _small(expr: ast.AST | None) -> bool:
    return (
        isinstance(expr, ast.Constant)
        and type(expr.value) is int
        and abs(expr.value) <= SMALL_FACTOR
    )
