"""``Sandbox``: runs checked plan code with the host's words and values, under limits.

The plan's module namespace holds only: the allowed builtins (some replaced by limit-aware
versions), the guard functions the checker's rewrite calls, and the host's values, copied in
read-only, with host callables wrapped as host words. A plan run ends in one of four ways: its
result, ``PlanRefused`` (the check said no), ``PlanLimitError`` or ``PlanRuntimeError``. Nothing
else leaves ``run``: not ``SystemExit``, not a host word's internals.
"""

from __future__ import annotations

import builtins
import importlib
import operator
import reprlib
import threading
import time
import types
import weakref
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, cast

from planlang import language as L
from planlang.check import CheckResult, check, is_checked_code
from planlang.errors import PlanError, PlanLimitError, PlanRefused, PlanRuntimeError
from planlang.isolation.mode import resolve_mode
from planlang.sandbox.deep_stack import needs_deep_stack, run_on_deep_stack, stack_for
from planlang.sandbox.guards import Guards
from planlang.sandbox.host_words import wrap_host_word
from planlang.sandbox.limits import Limits, Meter
from planlang.sandbox.literals import check_literals
from planlang.sandbox.plan_builtins import PLAN_TYPES, PlanStr
from planlang.sandbox.result_line import result_line
from planlang.sandbox.walks import TEXT_SCALARS
from planlang.sandbox.wall import SCALARS, freeze, thaw

__all__ = ["Sandbox", "current_meter", "register_isolated_runner"]

# How isolation="process" runs a plan: planlang.isolation.parent registers itself when it is
# loaded, on the first isolated run (``planlang check`` never pays for its imports), so the
# sandbox does not depend on the machinery that runs it in another process.
_isolated_runner: list[Callable[[Any, CheckResult], Any]] = []


def register_isolated_runner(runner: Callable[[Any, CheckResult], Any]) -> None:
    _isolated_runner[:] = [runner]


_BASE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in L.ALLOWED_BUILTINS
    if name not in ("range", "pow", "iter", "print", "round", "sum", "zip", "map")
}


class _Running(threading.local):
    """Per thread: the meter of the plan run it works for (None: none). A class default, so
    reading it where it was never set raises nothing."""

    meter: Meter | None = None


_running = _Running()


def _iter(*args: Any) -> Any:
    """The plan's ``iter``: one argument (``iter(f, sentinel)`` would call ``f`` forever, past
    the step limit's sight), refused in words a plan's author can act on."""
    if len(args) != 1:
        raise TypeError(f"iter() takes exactly one argument in a plan ({len(args)} given)")
    return iter(args[0])


def _made(make: Callable[[Guards], Any], box: Any, guards: Guards, meter: Meter) -> Any:
    return make(guards)


# Builtins and guards made for each run, by name: (sandbox, guards, meter) -> value.
_RUN_BUILTINS: dict[str, Callable[[Any, Guards, Meter], Any]] = {
    "range": lambda box, g, m: lambda *args: _range(m, *args),
    "pow": lambda box, g, m: g.sizes.pow,
    "iter": lambda box, g, m: _iter,
    "print": lambda box, g, m: g.walks.printing(box._printer(g)),
    "round": lambda box, g, m: g.sizes.round,
    "sum": lambda box, g, m: g.sizes.sum,
    "zip": lambda box, g, m: g.sizes.zip,
    "map": lambda box, g, m: g.sizes.map,
    # planlang.sandbox.walks: text and C loops priced before C walks shared structure
    "repr": lambda box, g, m: g.walks.repr,
    "sorted": lambda box, g, m: g.walks.sorted,
    "min": lambda box, g, m: g.walks.min,
    "max": lambda box, g, m: g.walks.max,
    "any": lambda box, g, m: g.walks.any,
    "all": lambda box, g, m: g.walks.all,
    "filter": lambda box, g, m: g.walks.filter,
    # planlang.sandbox.plan_builtins: str, int, list, tuple, set, frozenset, dict priced when called
    **{name: partial(_made, make) for name, make in PLAN_TYPES.items()},
}
_RUN_BUILTIN_NAMES = frozenset(_RUN_BUILTINS)

_BASE_NAMES = frozenset(_BASE_BUILTINS) - _RUN_BUILTIN_NAMES
_GUARDS: dict[str, Callable[[Guards, Meter], Any]] = {
    "_getattr_": lambda g, m: g.getattr,
    "_getitem_": lambda g, m: operator.getitem,  # reading items of plain data is safe
    "_getiter_": lambda g, m: g.getiter,
    "_write_": lambda g, m: g.write,
    "_inplacevar_": lambda g, m: g.inplacevar,
    "_unpack_sequence_": lambda g, m: g.unpack_sequence,
    "_iter_unpack_sequence_": lambda g, m: g.iter_unpack_sequence,
    "_apply_": lambda g, m: g.apply,
    "_enter_": lambda g, m: m.enter,
    "_step_": lambda g, m: g.stepper(),
    "_add_": lambda g, m: g.sizes.add,
    "_mul_": lambda g, m: g.sizes.mul,
    "_pow_": lambda g, m: g.sizes.pow,
    "_lshift_": lambda g, m: g.sizes.lshift,
    "_mod_": lambda g, m: g.sizes.mod,
    "_fmt_": lambda g, m: g.sizes.fmt,
    "_fstr_": lambda g, m: g.sizes.fstr,
    "_text_": lambda g, m: g.walks.text,
    "_type_": lambda g, m: type,  # the inline test of f-string fields (nodes.priced_text)
    "_text_kinds_": lambda g, m: TEXT_SCALARS,
    "_setslice_": lambda g, m: g.setslice,
    "_unpack_": lambda g, m: g.sizes.unpack,
}
_GUARD_NAMES = frozenset(_GUARDS)
_used: weakref.WeakKeyDictionary[types.CodeType, frozenset[str]] = weakref.WeakKeyDictionary()


def used_names(code: types.CodeType) -> frozenset[str]:
    """Every global or builtin name the code (and the code nested in it) can look up."""
    names = _used.get(code)
    if names is None:
        found: set[str] = set()
        stack = [code]
        while stack:
            current = stack.pop()
            found.update(current.co_names)
            stack += (c for c in current.co_consts if isinstance(c, types.CodeType))
        names = _used[code] = frozenset(found)
    return names


_DEFAULT_LIMITS = Limits()


def current_meter() -> Meter | None:
    """The meter of the plan running on this thread, for host words that wait (they should
    wait at most ``current_meter().remaining()`` seconds)."""
    return _running.meter


def set_current_meter(meter: Meter | None) -> Meter | None:
    """Make ``meter`` this thread's ``current_meter()`` (a thread that runs work of that plan's,
    such as a thunk); the one it replaces is returned, to be set back."""
    previous, _running.meter = _running.meter, meter
    return previous


class Sandbox:
    """Runs checked plans with host words and values supplied by the embedder.

    ``host`` maps names to values: callables become host words, ``HostObject`` declares what a
    plan may see of an object, anything else is copied in as read-only plain data.
    ``log`` receives the lines a plan prints (default: kept in ``self.printed``).
    ``passthrough`` names host exceptions that end a run as themselves, not as plan errors.
    ``isolation``: ``"process"`` runs each plan in a confined child process (planlang.isolation;
    the default, or ``PLANLANG_ISOLATION``), ``"inprocess"`` in this process, for trusted plans.
    """

    def __init__(
        self,
        host: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        *,
        log: Callable[[str], Any] | None = None,
        passthrough: tuple[type[Exception], ...] = (),
        isolation: str | None = None,
    ):
        self.isolation = resolve_mode(isolation)
        self.host = dict(host or {})
        for name in self.host:
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
                raise ValueError(
                    f"Host name {name!r} must be an identifier that does not start with '_'."
                )
            if name in L.ALLOWED_BUILTINS:  # the checker trusts what builtins return
                raise ValueError(f"Host name {name!r} would shadow the builtin of that name.")
        self.limits = limits or _DEFAULT_LIMITS
        self.printed: list[str] = []
        self._log = log
        # Host errors that mean "stop the run" rather than "the plan failed" (e.g. the
        # runtime's RunError): they leave ``run`` as they are.
        self.passthrough = passthrough
        self.last_meter: Meter | None = None

    # -- running -------------------------------------------------------------------------

    def run(self, plan: str | CheckResult | Any) -> Any:
        """Check (if given source) and run a plan; return its ``result`` as plain data."""
        checked = self._checked(plan)
        # an int the plan's text writes is held to int_bits as one it makes (sandbox.literals)
        check_literals(cast(types.CodeType, checked.code), self.limits.int_bits, checked.filename)
        if self.isolation == "process":
            if not _isolated_runner:
                importlib.import_module("planlang.isolation.parent")  # registers its runner
            return _isolated_runner[0](self, checked)
        meter = self._new_meter()
        self.last_meter = meter
        code = cast(types.CodeType, checked.code)
        try:
            namespace = self._namespace(meter, code)
        except RecursionError as error:  # a host value that holds itself: as in a plan's process
            raise PlanRuntimeError(str(error), error_type="RecursionError") from None
        try:
            if needs_deep_stack(code):  # see deep_stack: deep tuples must not crash us
                return run_on_deep_stack(
                    lambda: _execute(code, meter, namespace),
                    stack_for(self.limits.steps),
                    on_interrupt=lambda: meter.close(
                        PlanLimitError("interrupted", "The plan was interrupted.")
                    ),
                )
            return _execute(code, meter, namespace)
        except self.passthrough:
            raise
        except BaseException as error:  # noqa: BLE001 - nothing a plan does may escape as-is
            raise _as_plan_error(error, meter, checked.filename) from error
        finally:
            # Plan functions the host still holds (say, in a worker) must not outlive the run.
            meter.close(PlanLimitError("finished", "The plan has already finished."))

    def _new_meter(self) -> Meter:
        return Meter(self.limits)

    def _checked(self, plan: str | CheckResult | Any) -> CheckResult:
        if isinstance(plan, str):
            result = check(plan)
        else:
            result = getattr(plan, "check_result", plan)
        if not isinstance(result, CheckResult):
            raise TypeError(
                f"Sandbox.run() takes plan source or a checked plan, not {type(plan).__name__}."
            )
        if not result.ok:
            raise PlanRefused(result.problems, filename=result.filename)
        if not is_checked_code(result.code):
            raise PlanRefused((), filename=result.filename) from TypeError(
                "The code was not compiled by planlang.check."
            )
        return result

    # -- the plan's namespace ------------------------------------------------------------

    def _namespace(self, meter: Meter, code: types.CodeType) -> dict[str, Any]:
        """The plan's globals: only the builtins, guards and host values its code names (a
        plan reaches names only by writing them, so the rest could never be read). Building
        just those keeps a fresh sandbox cheap, whatever the size of the host."""
        used = used_names(code)
        namespace: dict[str, Any] = {"__name__": "plan"}
        guards = Guards(meter, namespace)
        guards.wrap_host_word = lambda name, fn, fresh=False, text=False: wrap_host_word(
            name, fn, meter, namespace, fresh, PlanStr(str, guards) if text else None
        )
        plan_builtins = {name: _BASE_BUILTINS[name] for name in used & _BASE_NAMES}
        for name in used & _RUN_BUILTIN_NAMES:
            plan_builtins[name] = _RUN_BUILTINS[name](self, guards, meter)
        namespace["__builtins__"] = plan_builtins
        for name in used & _GUARD_NAMES:
            namespace[name] = _GUARDS[name](guards, meter)
        for name in used & self.host.keys():
            namespace[name] = freeze(self.host[name], guards.wrap_host_word, name)
        return namespace

    def _printer(self, guards: Guards) -> Callable[..., None]:
        # What one run prints, in all, may not pass Limits.size characters: a print flood is
        # stopped by what it made, not by whichever of steps and seconds the machine's load
        # lets it reach first, and the host never holds more than that of a plan's output.
        printed = [0]

        def plan_print(*args: Any, sep: str = " ") -> None:
            line = guards.sizes.sized_join(str(sep))([str(a) for a in args])
            printed[0] += len(line) + 1
            guards.meter.allow_size(printed[0], "What the plan printed")
            if self._log is not None:
                self._log(line)
            else:
                self.printed.append(line)

        return plan_print


def _execute(code: types.CodeType, meter: Meter, namespace: dict[str, Any]) -> Any:
    """Run the plan's module code on this thread; its ``result`` comes back as plain data."""
    previous = _running.meter
    _running.meter = meter
    try:
        exec(code, namespace)  # noqa: S102 - checked, rewritten, guarded code
        if meter.tripped is None and time.monotonic() > meter.deadline:  # its last C call
            meter.trip("seconds", f"The plan passed its time limit of {meter.limits.seconds:g} s.")
        if meter.tripped is not None:
            raise meter.tripped
        try:
            return thaw(namespace.get("result"), namespace, "The plan's result")
        except TypeError as error:  # past the plan's lines: it points at what wrote the result
            error.plan_line = result_line(code)  # type: ignore[attr-defined]
            raise
    finally:
        _running.meter = previous


def _range(meter: Meter, *args: Any) -> range:
    try:
        r = range(*args)
        n = len(r)
    except OverflowError:
        meter.trip("size", "range() would make more items than a plan may use.")
        raise  # unreachable: trip raises
    meter.allow_size(n, "range()")
    return r


def _plan_line(error: BaseException, filename: str) -> int | None:
    """The innermost line of the plan's own code in the error's traceback."""
    line = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _as_plan_error(error: BaseException, meter: Meter, filename: str) -> PlanError:
    """The one PlanError that leaves ``run`` for whatever ended the plan. It never raises:
    the error may carry plan data whose text is deep or huge (its message is bounded)."""
    try:
        return _convert(error, meter, filename)
    except BaseException:  # noqa: BLE001 - the conversion itself must not let anything out
        return PlanRuntimeError("The plan failed with an error that cannot be described.")


def _convert(error: BaseException, meter: Meter, filename: str) -> PlanError:
    line = getattr(error, "plan_line", None) or _plan_line(error, filename)  # plan_line: the
    # innermost line, carried by an error that crossed from a plan's process (isolation.wire)
    if isinstance(error, PlanLimitError) or (
        meter.tripped is not None and not isinstance(error, PlanError)
    ):
        limit = error if isinstance(error, PlanLimitError) else meter.tripped
        assert limit is not None
        return PlanLimitError(limit.kind, limit.message, line=line, filename=filename)
    if isinstance(error, PlanError):
        return error
    if isinstance(error, KeyboardInterrupt):
        # A host word (or the user) interrupted the plan. Nothing but a PlanError leaves run(),
        # so it ends like a limit; an embedder may map kind "interrupted" to its own exit.
        interrupted = PlanLimitError("interrupted", "The plan was interrupted.")
        meter.close(interrupted)
        return PlanLimitError(interrupted.kind, interrupted.message, line=line, filename=filename)
    if isinstance(error, RecursionError):
        return PlanLimitError(
            "depth", "The plan nested calls deeper than Python allows.", line=line,
            filename=filename,
        )  # fmt: skip
    if isinstance(error, MemoryError):
        return PlanLimitError("memory", "The plan ran out of memory.", line=line, filename=filename)
    kind = type(error).__name__
    text = _describe(error)
    message = f"{kind}: {text}" if text else kind
    return PlanRuntimeError(message, error_type=kind, line=line, filename=filename)


class _ShortRepr(reprlib.Repr):
    """reprlib, bounded all the way down: for a type it has no rule for, reprlib calls the
    built-in ``repr``, and ``repr(slice(x))`` or ``repr(KeyError(x))`` walks ``x`` whole."""

    def repr_instance(self, x: Any, level: int) -> str:
        if type(x) in SCALARS:
            return super().repr_instance(x, level)
        if isinstance(x, BaseException) and level > 0:
            return f"{type(x).__name__}({self.repr1(x.args, level - 1)[1:-1].rstrip(',')})"
        return f"<{type(x).__name__}>"


_SHORT = _ShortRepr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 4, 200, 200
_MAX_MESSAGE = 2000


def _describe(error: BaseException) -> str:
    """The error's text, bounded: ``raise ValueError(x)`` may carry a deep or huge ``x``, and
    ``str`` of that would run (or recurse) without limit in the host's code."""
    try:
        args = error.args
        if all(type(a) in SCALARS for a in args):
            text = str(error)
        else:
            text = _SHORT.repr(args[0] if len(args) == 1 else args)
    except Exception:  # noqa: BLE001 - a host exception whose __str__ fails
        text = "(the error's text could not be shown)"
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


_FUNCTION_TYPES = (types.FunctionType,)
