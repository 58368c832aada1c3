"""``check``: is this source a plan, and what code does it compile to?

Diagnostics are returned, not raised: a caller (the CLI, the lead's repair loop) wants every
problem at once, each with its file, line, column and reason. Only code objects this module
compiled are ever run by the sandbox; they are remembered in a weak registry, so a hand-made
``CheckResult`` or a foreign code object cannot be slipped in.
"""

from __future__ import annotations

import ast
import hashlib
import threading
import types
import weakref
from dataclasses import dataclass, field
from functools import lru_cache

from planlang.check.infer import Kinds
from planlang.check.policy import PlanPolicy
from planlang.errors import Problem

__all__ = ["CheckResult", "Problem", "check", "MAX_SOURCE_BYTES"]

MAX_SOURCE_BYTES = 1_000_000

# By identity, not by value: code objects compare equal by content, and a test (or an attacker)
# that compiles the same text must not borrow the trust of the one ``check`` made.
_compiled: weakref.WeakValueDictionary[int, types.CodeType] = weakref.WeakValueDictionary()
_compiled_from: dict[int, str] = {}  # id of a checked code -> sha256 of its source
# CPython 3.11's AST constructor keeps its recursion depth in shared state, and parsing on two
# threads at once can fail with "AST constructor recursion depth mismatch" (gh-106905).
_AST_LOCK = threading.Lock()


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one source. ``code`` is set exactly when ``ok``."""

    filename: str
    sha256: str
    problems: tuple[Problem, ...] = ()
    code: types.CodeType | None = field(default=None, repr=False, compare=False)
    used_names: frozenset[str] = frozenset()

    @property
    def ok(self) -> bool:
        return not self.problems and self.code is not None


def is_checked_code(code: object) -> bool:
    """True only for code objects that ``check`` compiled from a plan it accepted."""
    return checked_source(code) is not None


def checked_source(code: object) -> str | None:
    """The sha256 of the source ``check`` compiled ``code`` from, or None if it did not."""
    if isinstance(code, types.CodeType) and _compiled.get(id(code)) is code:
        return _compiled_from.get(id(code))
    return None


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def check(source: str, filename: str = "plan.py", *, optimise: bool = True) -> CheckResult:
    """Check ``source`` as a plan; return all problems, or the compiled code.

    ``optimise`` lets kind inference (``planlang.check.infer``) leave native the operations
    that the source proves safe; off, every guard stays. A plan behaves the same either way
    (a property test holds it to that): only its speed differs.
    """
    if not isinstance(source, str):
        raise TypeError(f"check() takes the plan's source as str, not {type(source).__name__}.")
    return _check_cached(source, filename, optimise)


@lru_cache(maxsize=256)
def _check_cached(source: str, filename: str, optimise: bool = True) -> CheckResult:
    digest = source_sha256(source)
    early = _early_problems(source, filename)
    if early:
        return CheckResult(filename, digest, early)
    with _AST_LOCK:
        return _check_locked(source, filename, digest, optimise)


def _check_locked(source: str, filename: str, digest: str, optimise: bool) -> CheckResult:
    try:
        tree = ast.parse(source, filename, "exec")
    except SyntaxError as error:  # also covers IndentationError and TabError
        line = error.lineno or 1
        col = error.offset or 1
        return CheckResult(
            filename, digest, (Problem(filename, line, col, "PL001", f"syntax error: {error.msg}"),)
        )
    except (MemoryError, RecursionError):
        problem = Problem(filename, 1, 1, "PL003", "the plan is nested too deeply to parse")
        return CheckResult(filename, digest, (problem,))
    except ValueError as error:  # e.g. null bytes
        return CheckResult(
            filename, digest, (Problem(filename, 1, 1, "PL001", f"cannot parse: {error}"),)
        )
    if not tree.body:  # comments only: nothing to run, as empty as blank text
        problem = Problem(filename, 1, 1, "PL002", "the plan is empty: it has only comments")
        return CheckResult(filename, digest, (problem,))
    try:
        policy = PlanPolicy(kinds=Kinds(tree) if optimise else None)
        policy.visit(tree)
    except RecursionError:
        return CheckResult(
            filename, digest, (Problem(filename, 1, 1, "PL003", "the plan is nested too deeply"),)
        )
    if policy.problems:
        problems = sorted(
            {Problem(filename, p.line, p.col, p.code, p.message) for p in policy.problems},
            key=lambda p: (p.line, p.col, p.code),
        )
        return CheckResult(filename, digest, tuple(problems))
    try:
        try:
            code = compile(tree, filename, "exec", dont_inherit=True)
        except TypeError:  # a node made without a location: the slow, sure way
            ast.fix_missing_locations(tree)
            code = compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        line = getattr(error, "lineno", None) or 1
        return CheckResult(
            filename, digest, (Problem(filename, line, 1, "PL001", f"cannot compile: {error}"),)
        )
    _compiled[id(code)] = code
    _compiled_from[id(code)] = digest
    weakref.finalize(code, _compiled_from.pop, id(code), None)
    return CheckResult(filename, digest, (), code, frozenset(policy.used_names))


def _early_problems(source: str, filename: str) -> tuple[Problem, ...]:
    # in UTF-8 bytes, as the CLI measures a plan file (a character takes up to four)
    size = len(source) if len(source) * 4 <= MAX_SOURCE_BYTES else _utf8_size(source)
    if size > MAX_SOURCE_BYTES:
        message = f"the plan is {size:,} bytes, over the limit of {MAX_SOURCE_BYTES:,}"
        return (Problem(filename, 1, 1, "PL004", message),)
    if not source.strip():
        return (Problem(filename, 1, 1, "PL002", "the plan is empty"),)
    return ()


def _utf8_size(source: str) -> int:
    return len(source.encode("utf-8", "surrogatepass"))
