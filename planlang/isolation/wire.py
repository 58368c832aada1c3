"""Errors as plain data, both ways: what one side raised, raised again on the other.

An error crosses as its type's name, its bounded text and what it means to the sandbox (an
ordinary error, a limit, an interrupt, or a host error that must end the run as itself). The
other side raises an exception of a class made with that name, so a plan error still says
``ValueError`` and ``PlanRuntimeError.error_type`` is the same as in one process; no class or
object of the other side is ever made from what arrives.
"""

from __future__ import annotations

import reprlib
from typing import Any

from planlang.errors import PlanError, PlanLimitError, PlanRuntimeError
from planlang.isolation.codec import CodecError

__all__ = ["HostStop", "describe", "plan_error", "plan_error_from", "plan_line", "raised"]

_SCALARS = (str, int, float, bool, type(None))
_MAX = 2000
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 200, 200


class HostStop(BaseException):
    """In the plan's process: the host raised an error that ends the run as itself (the
    sandbox's ``passthrough``); the host raises its own error again when the run ends."""


def _text(error: BaseException) -> str:
    try:
        args = error.args
        if all(type(a) in _SCALARS for a in args):
            text = str(error)
        else:
            text = "(" + ", ".join(
                _SHORT.repr(a) if type(a) in _SCALARS else f"<{type(a).__name__}>" for a in args
            ) + ")"  # fmt: skip
    except Exception:  # noqa: BLE001 - an error whose __str__ fails
        text = "(the error's text could not be shown)"
    return text if len(text) <= _MAX else text[:_MAX] + "..."


def plan_line(error: BaseException, filename: str | None) -> int | None:
    """The innermost line of the plan's code where ``error`` was raised: the line it carried
    across from the other side, or the last plan frame of its traceback."""
    line = getattr(error, "plan_line", None)
    if line is not None or filename is None:
        return line if type(line) is int else None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def describe(
    error: BaseException,
    passthrough: tuple[type[BaseException], ...] = (),
    filename: str | None = None,
    at: int | None = None,
) -> Any:
    """The error as plain data: [how, type name, text, limit kind, innermost plan line].
    ``at``: the plan line it was raised at where no plan frame of it is left (a tail's)."""
    name = "TypeError" if isinstance(error, CodecError) else type(error).__name__
    line = plan_line(error, filename)
    if line is None:
        line = at
    if isinstance(error, PlanLimitError):
        return ["limit", name, error.message, error.kind, line]
    if passthrough and isinstance(error, passthrough):
        return ["passthrough", name, _text(error), None, None]
    if isinstance(error, KeyboardInterrupt):
        return ["interrupt", name, "", None, None]
    if isinstance(error, HostStop):
        return ["passthrough", name, "", None, None]
    return ["error", name, _text(error), None, line]


# The errors the sandbox turns into limits wherever they are raised (``depth``, ``memory``): a
# host word's stack or memory that ran out ends the plan as it does in one process
_classes: dict[str, type[Exception]] = {"RecursionError": RecursionError,
                                        "MemoryError": MemoryError}  # fmt: skip
# The other side chooses the names: only short ones are kept as they are, and only so many
# are cached (a class made for each of a million 1 MB names would stay for the process's life).
NAME_LENGTH = 100
CACHED_NAMES = 1024


# The builtin errors a plan's code raises in one process (its ``raise``, and what its own
# operations raise): a host word that guards a plan function with ``except KeyError`` catches
# one there, so here the class made for that name is a subclass of the builtin (a label and
# a base, never an object of the other side's). A name made a plain Exception was caught by
# no such handler, and the same plan failed under process isolation (REDTEAM14).
_BUILTIN_BASES: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (ArithmeticError, AssertionError, AttributeError, Exception, IndexError,
                KeyError, LookupError, NameError, OverflowError, RuntimeError, TypeError,
                UnboundLocalError, ValueError, ZeroDivisionError)
}  # fmt: skip


def _named(name: str) -> type[Exception]:
    """An exception class with this name (the name is only a label; a common one made once)."""
    cls = _classes.get(name)
    if cls is None:
        safe = name if len(name) <= NAME_LENGTH and name.isidentifier() else "Error"
        base = _BUILTIN_BASES.get(safe, Exception)
        cls = type(safe, (base,), {"__str__": lambda self: str(self.args[0])})
        if safe == name and len(_classes) < CACHED_NAMES + 2:
            _classes[name] = cls
    return cls


def raised(description: Any) -> BaseException:
    """The exception to raise on this side for an error described by the other."""
    how, name, text, kind, line = description
    error: BaseException
    if how == "limit":
        error = PlanLimitError(str(kind), str(text))
    elif how == "interrupt":
        return KeyboardInterrupt()
    elif how == "passthrough":
        return HostStop(str(name))
    else:
        error = _named(str(name))(str(text))
    if type(line) is int:
        error.plan_line = line  # type: ignore[attr-defined]  # the sandbox reports this line
    return error


def plan_error(error: PlanError) -> Any:
    """A PlanError that ended the run, as plain data."""
    if isinstance(error, PlanLimitError):
        return ["limit", error.kind, error.message, error.line, error.filename]
    assert isinstance(error, PlanRuntimeError)
    return ["runtime", error.error_type, error.message, error.line, error.filename]


def plan_error_from(data: Any) -> PlanError:
    how, kind, message, line, filename = data
    line = line if type(line) is int else None
    filename = filename if type(filename) is str else None
    if how == "limit":
        return PlanLimitError(str(kind), str(message), line=line, filename=filename)
    return PlanRuntimeError(str(message), error_type=str(kind), line=line, filename=filename)
