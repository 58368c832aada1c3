"""Host words: the wrapper between a plan and each host callable.

Every host call goes through one: it counts a step, looks at the clock (a host word may block,
so this cannot wait for the next checkpoint), refuses underscore keywords, and copies the result
into plain data the plan owns. It runs once per host call, so the common case is made cheap: for
a Python function with a plain signature the wrapper is generated with the same parameters, so a
call passes its arguments straight through instead of packing ``*args, **kwargs`` (a third of
the wrapper's cost).
"""

from __future__ import annotations

import functools
import inspect
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

from planlang.sandbox.limits import Meter
from planlang.sandbox.wall import SCALARS, thaw

__all__ = ["after_call", "wrap_host_word"]

_GENERIC = "*args, **kwargs"


def wrap_host_word(
    name: str,
    fn: Callable[..., Any],
    meter: Meter,
    namespace: dict[str, Any],
    fresh: bool = False,
    text: Callable[[Any], str] | None = None,
) -> Callable[..., Any]:
    """Wrap a host callable: count it, watch the clock around it, copy its result in.

    ``fresh`` (from ``HostWord``) hands a dict or list result over uncopied; ``text`` (the
    plan's own priced ``str``, for ``HostWord(text=True)``) turns every argument into text first.
    """
    where = f"The host word {name!r}"
    if text is not None:
        fn = _taking_text(fn, text)
    handed_over = SCALARS | {dict, list} if fresh else SCALARS

    def settle(result: Any) -> Any:
        """The result as the plan may hold it (called only off the fast path)."""
        if meter.tripped is not None:  # a limit fired in plan code the word called back
            raise meter.tripped
        if type(result) is not dict and hasattr(result, "__next__"):
            return _ThawedItems(result, namespace, where)  # a host iterator: items copied in
        return thaw(result, namespace, where)  # thaw copies a flat JSON object on a fast path

    def underscore(kwargs: dict[str, Any]) -> None:
        if any(key.startswith("_") for key in kwargs):  # f(**{"_x": 1})
            raise TypeError(f"{where} cannot take an argument whose name starts with '_'.")

    parameters, arguments = _passing(fn)
    # The template's own names start with "_": a parameter (never "_"-named) cannot shadow them.
    scope: dict[str, Any] = {
        "_meter": meter,
        "_monotonic": time.monotonic,
        "_fn": fn,
        "_handed_over": handed_over,
        "_settle": settle,
        "_underscore": underscore,
        "_stopped": _stopped,
    }
    generic = parameters == _GENERIC
    word = types.FunctionType(_template(parameters, arguments, name), scope, name)
    if not generic:
        function = fn.__func__ if isinstance(fn, types.MethodType) else fn
        assert isinstance(function, types.FunctionType)  # _passing said so
        word.__defaults__ = function.__defaults__  # the same objects: calls behave the same
        word.__kwdefaults__ = function.__kwdefaults__
    word.__qualname__ = name
    return word


@functools.lru_cache(maxsize=512)
def _template(parameters: str, arguments: str, name: str) -> types.CodeType:
    """The wrapper's code for one signature and word name, compiled once: compiling costs about
    100 microseconds, and every run makes its host words afresh."""
    generic = parameters == _GENERIC
    check_kwargs = "    if kwargs: _underscore(kwargs)\n" if generic else ""
    call = "_fn(*args, **kwargs) if kwargs else _fn(*args)" if generic else f"_fn({arguments})"
    source = (
        f"def _word({parameters}):\n"
        "    if _meter.tripped is not None:\n"
        "        raise _meter.tripped\n"
        "    _meter.steps += 1\n"
        "    if _meter.steps >= _meter.next_check or _monotonic() > _meter.deadline:\n"
        "        _meter.checkpoint()\n"
        f"{check_kwargs}"
        "    try:\n"
        f"        _result = {call}\n"
        "    except StopIteration as _stop:\n"
        "        raise _stopped(_stop) from None\n"
        "    if _meter.tripped is None and type(_result) in _handed_over:\n"
        "        return _result\n"
        "    return _settle(_result)\n"
    )
    module = compile(source, f"<host word {name}>", "exec")
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    # Argument errors name the word as the plan knows it: "agent() missing 1 required ..."
    return code.replace(co_name=name, co_qualname=name)


def _stopped(error: StopIteration) -> Exception:
    """A host word's StopIteration (its own ``next()`` ran off an end) as an error of that name
    that no loop takes for the end of its items, as it crosses under process isolation (its
    name and text, ``isolation.wire``): in one process ``list(map(word, xs))`` ended silently
    with the items before it (red team 24)."""
    from planlang.isolation.wire import describe, raised

    made = raised(describe(error))
    assert isinstance(made, Exception)
    return made


def after_call(wrapper_globals: dict[str, Any], result: Any) -> Any:
    """What a wrapper (its globals: ``_template``'s scope) does with its word's ``result``: its
    last two lines, for a call whose frames were unwound before the word returned (process
    isolation's tail calls, ``isolation.peer``). Kept in step with ``_template``."""
    scope = wrapper_globals
    if scope["_meter"].tripped is None and type(result) in scope["_handed_over"]:
        return result
    return scope["_settle"](result)


def _passing(fn: Callable[..., Any]) -> tuple[str, str]:
    """(parameter list, argument list) of a wrapper with ``fn``'s own signature, read from its
    code object, or the generic pair for anything else: builtins, callable objects, partials,
    ``*args``/``**kwargs``, and names that start with ``_`` (a plan must not reach them)."""
    bound = isinstance(fn, types.MethodType)
    function = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not isinstance(function, types.FunctionType):
        return _GENERIC, ""
    code = function.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return _GENERIC, ""
    n_positional, n_keyword = code.co_argcount, code.co_kwonlyargcount
    names = list(code.co_varnames[: n_positional + n_keyword])
    posonly = code.co_posonlyargcount
    defaults = function.__defaults__ or ()
    if bound:  # self is bound: it must be a plain first parameter without a default
        if n_positional == 0 or len(defaults) >= n_positional:
            return _GENERIC, ""
        names, n_positional, posonly = names[1:], n_positional - 1, max(posonly - 1, 0)
    if any(name.startswith("_") for name in names):
        return _GENERIC, ""
    parameters = names[:n_positional]
    if posonly:
        parameters.insert(posonly, "/")
    if n_keyword:
        parameters.append("*")
        parameters += names[n_positional:]
    arguments = names[:n_positional] + [f"{k}={k}" for k in names[n_positional:]]
    return ", ".join(parameters), ", ".join(arguments)


def _taking_text(fn: Callable[..., Any], text: Callable[[Any], str]) -> Callable[..., Any]:
    def with_text(*args: Any, **kwargs: Any) -> Any:
        return fn(*map(text, args), **{key: text(value) for key, value in kwargs.items()})

    return with_text


class _ThawedItems:
    """A host iterator's items, each copied in. Not a generator: a host stream may be taken
    from by several plan threads at once, and the host says when that is a mistake."""

    __slots__ = ("_items", "_namespace", "_where")
    plan_kind = "iterator"  # what a message calls it: the plan holds an iterator, not this class

    def __init__(self, items: Iterator[Any], namespace: dict[str, Any], where: str) -> None:
        self._items, self._namespace, self._where = items, namespace, where

    def __iter__(self) -> _ThawedItems:
        return self

    def __next__(self) -> Any:
        return thaw(next(self._items), self._namespace, self._where)
