"""``Sandbox``: runs checked plan code with the host's words and values, under limits.

The plan's module namespace holds only: the allowed builtins (some replaced by limit-aware
versions), the guard functions the checker's rewrite calls, and the host's values, copied in
read-only, with host callables wrapped as host words. A plan run ends in one of four ways: its
result, ``PlanRefused`` (the check said no), ``PlanLimitError`` or ``PlanRuntimeError``. Nothing
else leaves ``run``: not ``SystemExit``, not a host word's internals.
"""

from __future__ import annotations

import builtins
import operator
import reprlib
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any, cast

from planlang import language as L
from planlang.check import CheckResult, check, is_checked_code
from planlang.errors import PlanError, PlanLimitError, PlanRefused, PlanRuntimeError
from planlang.guards import Guards
from planlang.limits import Limits, Meter
from planlang.plantypes import plan_types
from planlang.stack import needs_deep_stack, run_on_deep_stack, stack_for
from planlang.values import SCALARS, freeze, thaw
from planlang.walks import TEXT_SCALARS
from planlang.words import host_word

__all__ = ["Sandbox", "current_meter"]

_BASE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in L.ALLOWED_BUILTINS
    if name not in ("range", "pow", "iter", "print", "round", "sum", "zip", "map")
}
_running = threading.local()
_DEFAULT_LIMITS = Limits()


def current_meter() -> Meter | None:
    """The meter of the plan running on this thread, for host words that wait (they should
    wait at most ``current_meter().remaining()`` seconds)."""
    return getattr(_running, "meter", None)


class Sandbox:
    """Runs checked plans with host words and values supplied by the embedder.

    ``host`` maps names to values: callables become host words, ``HostObject`` declares what a
    plan may see of an object, anything else is copied in as read-only plain data.
    ``log`` receives the lines a plan prints (default: kept in ``self.printed``).
    ``passthrough`` names host exceptions that end a run as themselves, not as plan errors.
    """

    def __init__(
        self,
        host: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        *,
        log: Callable[[str], Any] | None = None,
        passthrough: tuple[type[Exception], ...] = (),
    ):
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
        meter = Meter(self.limits)
        self.last_meter = meter
        namespace = self._namespace(meter, checked.filename)
        code = cast(types.CodeType, checked.code)
        try:
            if needs_deep_stack(code):  # see planlang.stack: deep tuples must not crash us
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

    def _namespace(self, meter: Meter, filename: str) -> dict[str, Any]:
        namespace: dict[str, Any] = {"__name__": "plan"}
        guards = Guards(meter, namespace)
        guards.host_word = lambda name, fn, fresh=False: host_word(
            name, fn, meter, namespace, fresh
        )
        plan_builtins = dict(_BASE_BUILTINS)
        plan_builtins.update(
            range=lambda *args: _range(meter, *args),
            pow=guards.pow,
            iter=lambda obj: iter(obj),
            print=guards.printing(self._printer(guards)),
            round=guards.round,
            sum=guards.sum,
            zip=guards.zip,
            map=guards.map,
            # planlang.walks: text and C loops priced before C walks shared structure
            repr=guards.repr,
            sorted=guards.sorted,
            min=guards.min,
            max=guards.max,
            any=guards.any,
            all=guards.all,
            filter=guards.filter,
            # planlang.plantypes: str, int, list, tuple, set, frozenset, dict priced when called
            **plan_types(guards),
        )
        namespace["__builtins__"] = plan_builtins
        namespace.update(
            _getattr_=guards.getattr,
            _getitem_=operator.getitem,  # reading items of plain data is safe; see _write_
            _getiter_=guards.getiter,
            _write_=guards.write,
            _inplacevar_=guards.inplacevar,
            _unpack_sequence_=guards.unpack_sequence,
            _iter_unpack_sequence_=guards.iter_unpack_sequence,
            _apply_=guards.apply,
            _enter_=meter.enter,
            _leave_=meter.leave,
            _step_=guards.step,
            _add_=guards.add,
            _mul_=guards.mul,
            _pow_=guards.pow,
            _lshift_=guards.lshift,
            _mod_=guards.mod,
            _fmt_=guards.fmt,
            _fstr_=guards.fstr,
            _text_=guards.text,
            _type_=type,  # for the inline test of f-string fields (see nodes.priced_text)
            _text_kinds_=TEXT_SCALARS,
            _setslice_=guards.setslice,
            _unpack_=guards.unpack,
        )
        for name, value in self.host.items():
            namespace[name] = freeze(value, guards.host_word, name)
        return namespace

    def _printer(self, guards: Guards) -> Callable[..., None]:
        def plan_print(*args: Any, sep: str = " ") -> None:
            line = guards._sized_join(str(sep))([str(a) for a in args])
            if self._log is not None:
                self._log(line)
            else:
                self.printed.append(line)

        return plan_print


def _execute(code: types.CodeType, meter: Meter, namespace: dict[str, Any]) -> Any:
    """Run the plan's module code on this thread; its ``result`` comes back as plain data."""
    previous = getattr(_running, "meter", None)
    _running.meter = meter
    try:
        exec(code, namespace)  # noqa: S102 - checked, rewritten, guarded code
        if meter.tripped is not None:
            raise meter.tripped
        return thaw(namespace.get("result"), namespace, "The plan's result")
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
    line = _plan_line(error, filename)
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
